import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { statePaths } from '../common/paths.ts';
import { RetentionKeeper } from './gc-auto.ts';

let dir: string | undefined;
let keeper: RetentionKeeper | undefined;
afterEach(() => {
  keeper?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = keeper = undefined;
});

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

describe('RetentionKeeper: launch keys pruned while the supervisor lives', () => {
  it('at the start, then once an hour (the clock the keeper is given), not at every look', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-gc-auto-'));
    let now = Date.parse('2026-11-28T01:00:00Z');
    let looks = 0;
    const pruned: number[] = [];
    keeper = new RetentionKeeper({
      paths: statePaths({ RUNBOARD_HOME: dir }),
      log: pino({ level: 'silent' }),
      projects: () => {
        looks++; // each look (tick) asks for the projects
        return [];
      },
      going: () => [],
      settle: async () => undefined,
      pruneKeys: async () => {
        pruned.push(now);
        return 0;
      },
      now: () => now,
      tickMs: 5,
    });
    keeper.start();
    await keeper.idle();
    expect(pruned).toEqual([now]);
    const start = now;
    now += 59 * 60_000;
    const seen = looks;
    await until(() => looks >= seen + 3);
    expect(pruned).toEqual([start]);
    now += 60_000;
    await until(() => pruned.length === 2);
    expect(pruned).toEqual([start, start + 3600_000]);
  });
});
