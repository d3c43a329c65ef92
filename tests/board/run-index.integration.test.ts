/**
 * `run/list` with `cardPath`: the supervisor (a real one, auto-started by `runboard serve`) writes a
 * per-day card index at launch, and listing one card's runs reads only that card's result.json files.
 * The registry is also read directly over the same state root, to check the index itself and that a
 * day without one (runs from before it) is indexed from its result.json files.
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { RunRegistry, type RunDeps } from '../../supervisor/src/node/registry.ts';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';

const card = (title: string): string =>
  `---\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: "echo ${title}"\n---\n# Task\n`;

let server: BoardServer;
beforeAll(async () => {
  server = await BoardServer.start('version: 1\nflows:\n  shell: { runner: command, cap: 4 }\n', {
    'a.md': card('alpha'),
    'b.md': card('beta'),
  });
});
afterAll(async () => {
  await server?.stop();
});

async function runOnce(id: string): Promise<string> {
  await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
  return waitUntil(
    `${id} done`,
    async () => {
      const c = await server.card(id);
      return c?.column === 'done' && c.runId;
    },
    20_000,
  );
}

describe('runs of one card', () => {
  it('the inspector lists exactly the card runs, newest first; the supervisor keeps a card index', async () => {
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < 3; i++) {
      a.push(await runOnce('a'));
      if (i < 2) b.push(await runOnce('b'));
    }
    const detail = await server.api<{ runs: RunResult[] }>('GET', '/api/cards/a');
    expect(detail.runs.map((r) => r.runId)).toEqual([...a].reverse());

    const paths = statePaths({ RUNBOARD_HOME: server.home });
    const day = a[0]!.slice(0, 8);
    const index = path.join(paths.logsDir, '.by-card', `${day}.jsonl`);
    const entries = readFileSync(index, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { runId: string; card: string });
    const cardA = server.cardFile('a.md');
    expect(entries.filter((e) => e.card === cardA).map((e) => e.runId)).toEqual(a);
    expect(entries).toHaveLength(5);

    // the registry over the same state root answers from the index
    const reg = new RunRegistry(paths, {} as RunDeps);
    expect(reg.list(false, 100, cardA).map((r) => r.runId)).toEqual([...a].reverse());
    expect(reg.list(false, 2, cardA).map((r) => r.runId)).toEqual([a[2], a[1]]);
    expect(reg.list(false, 100).length).toBe(5);
    // a day without an index (runs from before it) is indexed from its result.json files once
    rmSync(index);
    expect(reg.list(false, 100, server.cardFile('b.md')).map((r) => r.runId)).toEqual([...b].reverse());
    expect(existsSync(index)).toBe(true);
    expect(readFileSync(index, 'utf8').trim().split('\n')).toHaveLength(5);
  });
});
