import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RootOnlyEntries } from './root-only.ts';

// A real folder and real inotify: the list a root run gets is the folder as it is, not as it was at
// the first run. The waits are on the list (a change's event comes on a later turn of the loop).
describe('RootOnlyEntries', () => {
  let dir: string;
  let entries: RootOnlyEntries;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-root-only-'));
    writeFileSync(path.join(dir, 'passwd'), 'x', { mode: 0o644 });
    writeFileSync(path.join(dir, 'shadow'), 'x', { mode: 0o640 });
    mkdirSync(path.join(dir, 'ssh'), { mode: 0o755 });
    writeFileSync(path.join(dir, 'ssh', 'key.pub'), 'k', { mode: 0o644 });
    entries = new RootOnlyEntries(dir);
  });
  afterEach(() => {
    entries.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const at = (...names: string[]): string[] => names.map((n) => path.join(dir, n));
  const listed = async (want: string[]): Promise<void> =>
    vi.waitFor(() => expect(entries.current().sort()).toEqual(want), { timeout: 10_000, interval: 5 });

  it('walks once while nothing changes', () => {
    expect(entries.walks).toBe(0); // nothing at construction (the supervisor's start)
    expect(entries.current()).toEqual(at('shadow'));
    expect(entries.current()).toEqual(at('shadow'));
    expect(entries.walks).toBe(1);
  });

  it('sees a root-only file made after the walk, in the folder and in a subfolder', async () => {
    expect(entries.current()).toEqual(at('shadow'));
    writeFileSync(path.join(dir, 'ssh', 'host_key'), 'k', { mode: 0o600 });
    await listed(at('shadow', 'ssh/host_key'));
    writeFileSync(path.join(dir, 'gshadow'), 'x', { mode: 0o600 });
    await listed(at('gshadow', 'shadow', 'ssh/host_key'));
  });

  it('sees a chmod either way, of a file and of a folder', async () => {
    expect(entries.current()).toEqual(at('shadow'));
    chmodSync(path.join(dir, 'ssh', 'key.pub'), 0o600);
    await listed(at('shadow', 'ssh/key.pub'));
    chmodSync(path.join(dir, 'shadow'), 0o644);
    await listed(at('ssh/key.pub'));
    chmodSync(path.join(dir, 'ssh'), 0o700);
    await listed(at('ssh'));
  });

  it('watches a folder made after the walk from the next walk on', async () => {
    expect(entries.current()).toEqual(at('shadow'));
    mkdirSync(path.join(dir, 'private'), { mode: 0o755 });
    // the mkdir's event drops the list: the next call walks again, the new folder included
    await vi.waitFor(
      () => {
        entries.current();
        expect(entries.walks).toBe(2);
      },
      { timeout: 10_000, interval: 5 },
    );
    writeFileSync(path.join(dir, 'private', 'key.pem'), 'k', { mode: 0o600 });
    await listed(at('private/key.pem', 'shadow'));
    expect(entries.walks).toBeGreaterThan(2);
  });

  it('a removed folder is no longer listed', async () => {
    mkdirSync(path.join(dir, 'private'), { mode: 0o700 });
    expect(entries.current().sort()).toEqual(at('private', 'shadow'));
    rmSync(path.join(dir, 'private'), { recursive: true });
    await listed(at('shadow'));
  });
});
