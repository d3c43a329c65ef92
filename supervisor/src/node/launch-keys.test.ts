import { lutimesSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LaunchKeys } from './launch-keys.ts';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function keys(): LaunchKeys {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-launch-keys-'));
  return new LaunchKeys(path.join(dir, 'launch-keys'));
}

describe('LaunchKeys.prune: while the supervisor lives', () => {
  it('removes keys naming a run with no record and keys past 30 days; keeps the others', async () => {
    const k = keys();
    k.record('/p/cards/a.md', 'k', 'run-a', false);
    k.record('/p/cards/b.md', 'k', 'run-b', false);
    k.record('/p/cards/c.md', 'k', 'run-c', false);
    // c's key was made 31 days ago (its run still has its record)
    const old = new Date(Date.now() - 31 * 86_400_000);
    const files = readdirSync(path.join(dir!, 'launch-keys')).map((n) => path.join(dir!, 'launch-keys', n));
    lutimesSync(
      files.find((f) => readlinkSync(f) === 'run-c')!,
      old,
      old,
    );
    const known = new Set(['run-a', 'run-c']);
    expect(await k.prune(async (id) => known.has(id))).toBe(2);
    expect(k.runOf('/p/cards/a.md', 'k')).toBe('run-a');
    expect(k.runOf('/p/cards/b.md', 'k')).toBeUndefined();
    expect(k.runOf('/p/cards/c.md', 'k')).toBeUndefined();
  });

  it('keeps a key a launch took over while the pass looked at it (it names the new run)', async () => {
    const k = keys();
    k.record('/p/cards/a.md', 'k', 'run-gone', false);
    const removed = await k.prune(async (id) => {
      // a launch with the key meanwhile: its run had no record, so the launch took the key over
      if (id === 'run-gone') k.record('/p/cards/a.md', 'k', 'run-new', true);
      return false;
    });
    expect(removed).toBe(0);
    expect(k.runOf('/p/cards/a.md', 'k')).toBe('run-new');
  });

  it('a folder that cannot be read prunes nothing', async () => {
    const k = keys();
    rmSync(path.join(dir!, 'launch-keys'), { recursive: true });
    expect(await k.prune(async () => false)).toBe(0);
  });
});
