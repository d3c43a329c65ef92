/**
 * Recordings → Import a video, in Debian's Chromium against a real `runboard serve`, its supervisor,
 * the jail and the scripted model server: an .mp4 in a granted folder becomes a card with the task (the
 * extraction run reads it as a recording's video); a video outside any granted folder, or a file that
 * is no .mp4, is refused in the panel saying what to do, and no card is made.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import type { CardDetail } from '../../host/src/shared/board-types.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { REPO } from '../helpers/harness.ts';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';

const ANSWER = `TaskDetected: true
Status: TASK_FOUND
NoTaskReason: none

# Task
Sign Ada up in the form app.

## Questions
- Which email address should the form get?
`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;
let video: string;
let outside: string;

const makeVideo = (file: string): void => {
  execFileSync('ffmpeg', [
    '-v', 'error', '-nostdin', '-y', '-f', 'lavfi', '-i', 'testsrc=size=320x240:rate=5', '-t', '2',
    '-pix_fmt', 'yuv420p', file,
  ]); // prettier-ignore
};

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(
    `version: 1
flows:
  desktop:
    runner: computer-use
    provider: openai
    prompt: ${path.join(REPO, 'prompts/execution_agent')}
  extract:
    runner: extract
    provider: openai
    model: gpt-5.2
    prompt: ${path.join(REPO, 'prompts/task_extraction')}
    timeout: 2m
    extract: { frames: 2, frameWidth: 160 }
`,
    {},
    BoardServer.withModel('openai', model.url),
  );
  video = path.join(server.workspace, 'demo.mp4'); // in the granted folder
  makeVideo(video);
  mkdirSync(path.join(server.root, 'elsewhere'));
  outside = path.join(server.root, 'elsewhere', 'private.mp4'); // in no granted folder
  makeVideo(outside);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 720 } })).newPage();
  await page.goto(server.url);
  await page.getByRole('button', { name: 'Recordings' }).waitFor();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe('Recordings → Import a video', () => {
  it('refuses a video in no granted folder, and a file that is no .mp4, saying what to do', async () => {
    await page.getByRole('button', { name: 'Recordings' }).click();
    const panel = page.getByRole('dialog', { name: 'Recordings' });
    const field = panel.getByLabel('Import a video (.mp4, in a granted folder)');
    await field.fill(outside);
    await panel.getByRole('button', { name: 'Make a task from it' }).click();
    await panel
      .getByRole('alert')
      .getByText(/no grant covers the workspace .*elsewhere\. Grant it .*runboard grant/)
      .waitFor();
    await field.fill(path.join(server.workspace, 'notes.txt'));
    await panel.getByRole('button', { name: 'Make a task from it' }).click();
    await panel
      .getByRole('alert')
      .getByText(/ending in \.mp4/)
      .waitFor();
    expect((await server.board()).cards).toHaveLength(0);
    expect(model.requests.filter((r) => r.api === 'responses')).toHaveLength(0);
  });

  it('makes a card with the task from an .mp4 in a granted folder', async () => {
    model.setEpisodes([{ name: 'x', requireTools: false, turns: [{ text: ANSWER }] }]);
    const panel = page.getByRole('dialog', { name: 'Recordings' });
    await panel.getByLabel('Import a video (.mp4, in a granted folder)').fill(video);
    expect(await seriousViolations(page)).toEqual([]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'import-video-1280.png') });
    await panel.getByRole('button', { name: 'Make a task from it' }).click();
    // the panel closes and the new card opens in the inspector; the run writes its task
    await waitUntil('the panel closed', async () => (await panel.count()) === 0);
    await waitUntil(
      'the task is written',
      async () =>
        (await server.board()).cards.some((c) => c.column === 'needs-input' && c.openQuestions === 1),
      60_000,
    );
    const card = (await server.board()).cards[0]!;
    expect(card).toMatchObject({ flow: 'desktop', column: 'needs-input' });
    expect(card.lastError).toBeUndefined();
    // the new card is open in the inspector, with its question to answer
    const inspector = page.getByRole('complementary', { name: `Inspector: ${card.title}` });
    await inspector.getByText('Which email address should the form get?').first().waitFor();
    const detail = await server.api<CardDetail>('GET', `/api/cards/${card.id}`);
    expect(detail.body).toContain('# Task\nSign Ada up in the form app.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'import-video-task-1280.png') });
    // the model saw frames of the video (images in its request)
    const asked = model.requests.find((r) => r.api === 'responses');
    expect(JSON.stringify(asked?.body ?? {})).toMatch(/input_image/);
  });
});
