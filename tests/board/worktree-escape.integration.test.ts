/**
 * The host's own git call (the inspector's diff of a run's worktree) on a repository a run wrote to: an
 * earlier run with the repository as its workspace planted a diff driver, an external diff and
 * attributes selecting them in `.git`; a worktree run then changed a file. The diff shows the change
 * and nothing the run planted runs (each would-be command leaves a marker file).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../agents/agent-harness.ts';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';

let server: BoardServer;
let markers: string;

const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

beforeAll(async () => {
  server = await BoardServer.start(
    `version: 1
scheduler: { maxConcurrency: 1 }
flows:
  plant: { runner: command }
  change: { runner: command, worktree: true }
`,
    {},
    {
      beforeServe: (paths) => {
        const ws = path.join(path.dirname(paths.root), 'project', 'workspace');
        git(ws, 'init', '-q', '-b', 'main');
        git(ws, 'commit', '-q', '--allow-empty', '-m', 'initial');
      },
    },
  );
  markers = path.join(server.root, 'markers');
  const touch = (name: string): string => `mkdir -p ${markers}; touch ${path.join(markers, name)}`;
  const plant = [
    `git config diff.evil.textconv ${q(`${touch('textconv')}; cat`)}`,
    `git config diff.evil.command ${q(touch('diff-command'))}`,
    `git config diff.external ${q(touch('diff-external'))}`,
    `git config core.pager ${q(touch('pager'))}`,
    'mkdir -p .git/info && echo "* diff=evil" >> .git/info/attributes',
  ].join('; ');
  server.writeCard(
    'plant.md',
    `---\ntitle: plant\nflow: plant\nworkspace: ./workspace\ncommand: ${JSON.stringify(plant)}\n---\n# Task\nplant\n`,
  );
  server.writeCard(
    'change.md',
    `---\ntitle: change\nflow: change\nworkspace: ./workspace\ncommand: "echo work > work.txt"\n---\n# Task\nchange\n`,
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

describe("the inspector's worktree diff", () => {
  it('shows the change without running what runs planted in the repository', async () => {
    await waitUntil('the cards', async () => (await server.card('plant')) !== undefined, 10_000);
    await server.api('POST', '/api/cards/plant/move', { to: 'queued', index: 0 });
    await waitUntil('plant done', async () => (await server.card('plant'))?.column === 'done', 30_000);
    await server.api('POST', '/api/cards/change/move', { to: 'queued', index: 0 });
    await waitUntil('change done', async () => (await server.card('change'))?.column === 'done', 30_000);
    const runId = (await server.card('change'))!.runId!;
    const diff = await server.api<{ text: string }>('GET', `/api/runs/${runId}/diff`);
    expect(existsSync(markers) ? readdirSync(markers) : []).toEqual([]);
    expect(diff.text).toContain('+work');
  });
});
