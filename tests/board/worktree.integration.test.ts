/**
 * A run's worktree in the inspector: a real `claude` implement run (through the supervisor's model proxy,
 * against the scripted model server) edits a file in its own worktree; the inspector shows the files with
 * +/- and the diff itself; Keep merges the run's branch into the base branch of the user's repository.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { git } from '../agents/agent-harness.ts';
import {
  ARTIFACTS,
  BoardServer,
  gitWorkspace,
  launchBrowser,
  REPO,
  waitUntil,
} from '../e2e/helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 2 }
flows:
  implement:
    runner: claude
    provider: anthropic
    model: claude-sonnet-4-5
    prompt: ${path.join(REPO, 'prompts', 'implement')}
    worktree: true
    cap: 1
    timeout: 2m
`;
const CARD = `---
title: Add notes
flow: implement
workspace: ./workspace
---
# Task
EPISODE:notes Write NOTES.md.
`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;

beforeAll(async () => {
  model = await startModelServer();
  model.setEpisodes([
    {
      name: 'notes',
      match: 'EPISODE:notes',
      turns: [
        {
          toolCalls: [
            { name: 'Write', arguments: { file_path: 'NOTES.md', content: 'first line\nsecond line\n' } },
          ],
        },
        { text: `RUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary: 'wrote NOTES.md' })}` },
      ],
    },
  ]);
  server = await BoardServer.start(
    CONFIG,
    { 'notes.md': CARD },
    BoardServer.withModel('anthropic', model.url, gitWorkspace),
  );
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe('a run’s worktree in the inspector', () => {
  it('shows the changed files and the diff; Keep merges the branch into main', async () => {
    await server.api('POST', '/api/cards/notes/move', { to: 'queued', index: 0 });
    await waitUntil('Done', async () => (await server.card('notes'))?.column === 'done', 90_000);
    expect(git(server.workspace, 'status', '--porcelain')).toBe(''); // the user's checkout is untouched

    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(server.url);
    await page.click('li[data-card-id="notes"]');
    const wt = page.getByRole('region', { name: 'Worktree' });
    await wt.getByText('NOTES.md').waitFor();
    await expect(wt.locator('.diffstat').innerText()).resolves.toContain('1 file +2 −0');
    await wt.getByRole('button', { name: 'Show diff' }).click();
    const diff = page.getByLabel('Diff');
    await diff.getByText('+second line').waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'inspector-worktree.png'));

    await wt.getByRole('button', { name: /^Keep/ }).click();
    await wt.getByText('kept: merged into main').waitFor();
    expect(readFileSync(path.join(server.workspace, 'NOTES.md'), 'utf8')).toBe('first line\nsecond line\n');
    expect(git(server.workspace, 'log', '--oneline').split('\n').length).toBeGreaterThan(1);
    expect(git(server.workspace, 'branch', '--list', 'runboard/*')).toBe(''); // the run's branch is gone
    await page.close();
  });
});
