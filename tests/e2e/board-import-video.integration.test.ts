/**
 * Recordings → Import a video, in Debian's Chromium against a real `runboard serve`, its supervisor,
 * the jail and the scripted model server: an .mp4 in a granted folder becomes a card with the task (the
 * extraction run reads it as a recording's video); a video outside any granted folder, or a file that
 * is no .mp4, is refused in the panel saying what to do, and no card is made. A video chosen in the
 * browser's file chooser is uploaded into the project's videos/ and made a task the same way; what the
 * extraction refuses is removed again, and the upload route takes no bytes without the board's token.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import type { Browser, Page } from 'playwright-core';
import type { CardDetail } from '../../host/src/shared/board-types.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXTRACT_CONFIG, makeVideo, TASK_WITH_QUESTION } from '../fixtures/extract-board.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;
let video: string;
let outside: string;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(EXTRACT_CONFIG, {}, BoardServer.withModel('openai', model.url));
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

/** A raw POST to the upload route: `length` is the declared Content-Length, `body` what is sent. */
function rawUpload(
  query: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.base}/api/extract/video?${query}`,
      { method: 'POST', headers: { host: new URL(server.base).host, ...headers } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', (e) => reject(new Error(`${query}: ${e.message}`)));
    req.end(body);
  });
}

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
    model.setEpisodes([{ name: 'x', requireTools: false, turns: [{ text: TASK_WITH_QUESTION }] }]);
    const panel = page.getByRole('dialog', { name: 'Recordings' });
    await panel.getByLabel('Import a video (.mp4, in a granted folder)').fill(video);
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'import-video-1280.png'));
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
    await savePicture(page, path.join(ARTIFACTS, 'import-video-task-1280.png'));
    // the model saw frames of the video (images in its request)
    const asked = model.requests.find((r) => r.api === 'responses');
    expect(JSON.stringify(asked?.body ?? {})).toMatch(/input_image/);
  });

  it('uploads a video chosen on this computer into videos/ and makes its task, once the project is granted', async () => {
    const videosDir = path.join(server.project, 'videos');
    await page.getByRole('button', { name: 'Recordings' }).click();
    const panel = page.getByRole('dialog', { name: 'Recordings' });
    const chooser = panel.locator('input[type=file]');
    // the extraction run reads the video in the project's videos/: with no grant of it, said before any byte
    await chooser.setInputFiles(video);
    await panel
      .getByRole('alert')
      .getByText(/no grant covers the workspace .*project\/videos\. Grant it/)
      .waitFor();
    expect(existsSync(videosDir)).toBe(false);
    createGrant(statePaths({ RUNBOARD_HOME: server.home }), server.project);

    // bytes that are no video: refused by the extraction's probe, and nothing kept
    await chooser.setInputFiles({
      name: 'fake.mp4',
      mimeType: 'video/mp4',
      buffer: Buffer.from('not a video'),
    });
    await panel
      .getByRole('alert')
      .getByText(/fake\.mp4 is not a video ffprobe can read/)
      .waitFor();
    expect(readdirSync(videosDir)).toEqual([]);
    const before = (await server.board()).cards.length;

    model.setEpisodes([{ name: 'upload', requireTools: false, turns: [{ text: TASK_WITH_QUESTION }] }]);
    await chooser.setInputFiles({
      name: 'My Screen (1).mp4',
      mimeType: 'video/mp4',
      buffer: readFileSync(video),
    });
    await waitUntil('the panel closed', async () => (await panel.count()) === 0);
    const uploaded = async () =>
      (await server.board()).cards.find((c) => c.title === 'Task from My-Screen-1.mp4');
    await waitUntil(
      "the uploaded video's task is written",
      async () => (await uploaded())?.openQuestions === 1,
      60_000,
    );
    expect(readdirSync(videosDir)).toEqual(['My-Screen-1.mp4']);
    expect(readFileSync(path.join(videosDir, 'My-Screen-1.mp4'))).toEqual(readFileSync(video));
    const card = (await uploaded())!;
    expect((await server.board()).cards).toHaveLength(before + 1);
    expect(card.lastError).toBeUndefined();
    const detail = await server.api<CardDetail>('GET', `/api/cards/${card.id}`);
    expect(detail.body).toContain('# Task\nSign Ada up in the form app.');
  });

  it('takes no bytes without the token, nor more than the limit, nor through a planted videos link', async () => {
    const videosDir = path.join(server.project, 'videos');
    const inVideos = (): string[] => (existsSync(videosDir) ? readdirSync(videosDir) : []);
    const listed = inVideos();
    const noToken = await rawUpload(
      'name=x.mp4',
      { 'content-type': 'application/octet-stream' },
      readFileSync(video),
    );
    expect(noToken.status).toBe(401);
    // a page token in the query opens files and streams, never an upload
    const inQuery = await rawUpload(`name=x.mp4&pt=${server.token}`, {}, readFileSync(video));
    expect(inQuery.status).toBe(401);
    const auth = { authorization: `Bearer ${server.token}` };
    const tooBig = await rawUpload(
      'name=big.mp4',
      { ...auth, 'content-length': String(3 * 1024 ** 3) },
      Buffer.alloc(0),
    );
    expect(tooBig).toMatchObject({ status: 400 });
    expect(tooBig.text).toMatch(/big\.mp4 is 3\.00 GB, over the 2 GB limit/);
    const notMp4 = await rawUpload('name=notes.txt', auth, Buffer.from('hello'));
    expect(notMp4.status).toBe(400);
    expect(notMp4.text).toMatch(/import an \.mp4 video/);
    expect(inVideos()).toEqual(listed);

    // something that may write the project put a link where videos/ was: the board writes nowhere
    const elsewhere = path.join(server.root, 'elsewhere-2');
    mkdirSync(elsewhere);
    rmSync(videosDir, { recursive: true, force: true });
    symlinkSync(elsewhere, videosDir);
    const planted = await rawUpload('name=x.mp4', auth, readFileSync(video));
    expect(planted.status).toBe(400);
    // (the grant check follows the link and finds no grant; video-import.test.ts covers a granted target)
    expect(planted.text).toMatch(/is not a folder of the project|no grant covers the workspace/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });
});
