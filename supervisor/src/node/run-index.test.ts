// Which card each run was for (run-index.ts), over a real logs folder in a temporary directory.
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../protocol/index.ts';
import { CardIndex } from './run-index.ts';

describe('the by-card run index', () => {
  let logs: string;
  beforeEach(() => {
    logs = mkdtempSync(path.join(os.tmpdir(), 'rb-index-'));
  });
  afterEach(() => rmSync(logs, { recursive: true, force: true }));
  const record = (runId: string, card: string) => ({ runId, card: { path: card } }) as unknown as RunResult;

  it("lists a card's runs of a day newest first, and skips a line a crash cut short", () => {
    const index = new CardIndex(logs, () => null);
    index.add('20261127-101010-aaa111', '/p/cards/a.md');
    index.add('20261127-101011-bbb222', '/p/cards/b.md');
    index.add('20261127-101012-ccc333', '/p/cards/a.md');
    const file = path.join(logs, '.by-card', '20261127.jsonl');
    appendFileSync(file, '{"runId":"20261127-101013-ddd'); // torn
    expect(index.runsOf('20261127', '/p/cards/a.md')).toEqual([
      '20261127-101012-ccc333',
      '20261127-101010-aaa111',
    ]);
    expect(index.runsOf('20261127', '/p/cards/b.md')).toEqual(['20261127-101011-bbb222']);
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(4);
  });

  it('a day without an index (runs from before it) is indexed once from its result.json files', () => {
    const day = path.join(logs, '20261126');
    const runs: Record<string, RunResult> = {
      '20261126-090000-aaa111': record('20261126-090000-aaa111', '/p/cards/a.md'),
      '20261126-090001-bbb222': record('20261126-090001-bbb222', '/p/cards/b.md'),
    };
    for (const id of Object.keys(runs)) mkdirSync(path.join(day, id), { recursive: true });
    mkdirSync(path.join(day, '20261126-090002-ccc333')); // no record: left out
    let reads = 0;
    const index = new CardIndex(logs, (id) => {
      reads++;
      return runs[id] ?? null;
    });
    expect(index.runsOf('20261126', '/p/cards/a.md')).toEqual(['20261126-090000-aaa111']);
    expect(reads).toBe(3);
    expect(index.runsOf('20261126', '/p/cards/b.md')).toEqual(['20261126-090001-bbb222']);
    expect(reads).toBe(3); // the index file now stands for the folder
  });
});
