/**
 * A computer-use run in the inspector, end to end: a real `runboard serve`, its supervisor, a run on a
 * private display (Xvfb + the GTK form app) driven by the scripted model server (the one test double),
 * and Debian's Chromium. While the run runs, its display's live frame is served (a JPEG of the display
 * scaled to 640 px) and shown; after the end there is no live frame, and the inspector shows the run's
 * steps as a filmstrip whose thumbnails open large. Screenshots land in test-results/ (look at them).
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statePaths } from '@runboard/supervisor/paths';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { act, final, formApp } from '../cu/cu-harness.ts';
import { ARTIFACTS, BoardServer, launchBrowser, REPO, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
flows:
  desktop:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${path.join(REPO, 'prompts', 'execution_agent')}
    cap: 1
    timeout: 3m
    computerUse:
      privateDisplay: true
      displaySize: 800x600x24
      imageMaxWidth: 400
      app: [/usr/bin/python3, ${formApp}, --title, Live Form]
`;

/** Width and height from a JPEG's start-of-frame segment. */
function jpegSize(b: Buffer): [number, number] {
  if (b[0] !== 0xff || b[1] !== 0xd8) throw new Error('not a JPEG');
  for (let i = 2; i + 9 < b.length;) {
    if (b[i] !== 0xff) throw new Error(`bad JPEG marker at ${i}`);
    const m = b[i + 1]!;
    const len = b.readUInt16BE(i + 2);
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc)
      return [b.readUInt16BE(i + 7), b.readUInt16BE(i + 5)];
    i += 2 + len;
  }
  throw new Error('no frame header in the JPEG');
}

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  model = await startModelServer();
  // The model "thinks" 1.5 s per turn, as real ones do (longer): the live view shows the display meanwhile.
  const think = 1500;
  model.setEpisodes([
    {
      name: 'live',
      match: 'EPISODE-LIVE',
      indexBy: 'requests', // a turn with two calls brings two tool results
      turns: [
        { ...act({ action: 'mouse_move', x: 200, y: 150 }), delayMs: think },
        { toolCalls: [{ name: 'desktop_read', arguments: { title: 'Live Form' } }], delayMs: think },
        {
          // two calls in one turn: one step, one screenshot after both
          toolCalls: [
            { name: 'desktop_action', arguments: { action: 'mouse_move', x: 120, y: 90 } },
            { name: 'desktop_action', arguments: { action: 'wait', seconds: 0.2 } },
          ],
          delayMs: think,
        },
        {
          ...final({ status: 'SUCCESS', summary: 'looked at the form', error: '', questions: [] }),
          delayMs: think,
        },
      ],
    },
  ]);
  server = await BoardServer.start(
    CONFIG,
    {
      'live.md': `---\ntitle: Look at the form\nflow: desktop\nworkspace: ./workspace\n---\n# Task\nEPISODE-LIVE\n`,
    },
    BoardServer.withModel('openai', model.url),
  );
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="live"]');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

const live = (runId: string): Promise<Response> =>
  fetch(`${server.base}/api/runs/${runId}/live?n=${Date.now()}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });

describe('a computer-use run in the inspector', () => {
  it('shows the private display live while running, then the steps as a filmstrip', async () => {
    await page.click('li[data-card-id="live"]');
    await page.getByRole('complementary', { name: 'Inspector: Look at the form' }).waitFor();
    await server.api('POST', '/api/cards/live/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('the run to start', async () => (await server.card('live'))?.runId, 30_000);

    // The live frame, served while the run runs: the whole 800x600 display scaled to 640 px wide.
    const first = await waitUntil(
      'a live frame',
      async () => {
        const r = await live(runId);
        return r.status === 200 ? r : undefined;
      },
      30_000,
    );
    expect(first.headers.get('content-type')).toBe('image/jpeg');
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(jpegSize(Buffer.from(await first.arrayBuffer()))).toEqual([640, 480]);
    // not a step: the run's screenshot list does not have it
    const files = await server.api<{ screenshots: string[] }>('GET', `/api/runs/${runId}/files`);
    expect(files.screenshots).not.toContain('artifacts/live.jpg');

    // … and in the inspector, refreshed (the shown frame changes while the run runs)
    const panel = page.getByRole('region', { name: 'Live display' });
    const img = panel.getByRole('img', { name: "the run's private display, live" });
    await img.waitFor({ timeout: 20_000 });
    const src1 = await img.getAttribute('src');
    await waitUntil('a newer frame', async () => (await img.getAttribute('src')) !== src1, 10_000);
    expect(await img.evaluate((el: HTMLImageElement) => [el.naturalWidth, el.naturalHeight])).toEqual([
      640, 480,
    ]);
    await savePicture(page, path.join(ARTIFACTS, 'cu-live-view.png'));

    await waitUntil('the run to succeed', async () => (await server.card('live'))?.column === 'done', 90_000);
    // After the end: no live frame (served or on disk), the panel is gone.
    expect((await live(runId)).status).toBe(404);
    const logDir = path.join(statePaths({ RUNBOARD_HOME: server.home }).logsDir, runId.slice(0, 8), runId);
    expect(existsSync(path.join(logDir, 'artifacts', 'step-000.jpg'))).toBe(true);
    expect(existsSync(path.join(logDir, 'artifacts', 'live.jpg'))).toBe(false);
    await panel.waitFor({ state: 'detached', timeout: 10_000 });

    // The filmstrip: the start, three steps (the third with two calls), the final answer, in order.
    const film = page.getByRole('region', { name: 'Steps' });
    const items = film.locator('li.film-step');
    await waitUntil('the final answer in the filmstrip', async () => (await items.count()) === 5, 15_000);
    expect(await items.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')))).toEqual([
      'Start',
      'Step 1',
      'Step 2',
      'Step 3',
      'Step 4',
    ]);
    expect(await items.nth(1).locator('.film-call').innerText()).toMatch(/mouse_move\s+x=200 y=150/);
    expect(await items.nth(2).locator('.film-call').innerText()).toMatch(/desktop_read\s+title="Live Form"/);
    expect(await items.nth(3).locator('.film-call').allInnerTexts()).toEqual([
      expect.stringMatching(/mouse_move/),
      expect.stringMatching(/wait\s+seconds=0.2/),
    ]);
    expect(await items.nth(1).locator('.film-times').innerText()).toMatch(/model \d.*act .*capture /);
    expect(await items.nth(4).innerText()).toMatch(/SUCCESS: looked at the form/);
    // the thumbnails are the screenshots sent to the model (400 px wide), all loaded
    const thumbs = film.locator('.film-thumb img');
    expect(await thumbs.count()).toBe(4);
    await waitUntil('the thumbnails to load', () =>
      thumbs.evaluateAll((els) => els.every((e) => (e as HTMLImageElement).naturalWidth === 400)),
    );
    // the bare image list is not shown next to it
    expect(await page.locator('.shots').count()).toBe(0);
    await savePicture(page, path.join(ARTIFACTS, 'cu-filmstrip.png'));

    // A thumbnail opens its screenshot large; → goes to the next step; Escape closes.
    await film.getByRole('button', { name: 'Open the screenshot of step 1' }).click();
    const box = page.getByRole('dialog', { name: 'Screenshot of step 1' });
    await box.waitFor();
    const big = box.getByRole('img');
    await waitUntil('the large image', () => big.evaluate((e: HTMLImageElement) => e.naturalWidth === 400));
    expect((await big.boundingBox())!.width).toBeGreaterThan(400);
    await savePicture(page, path.join(ARTIFACTS, 'cu-filmstrip-large.png'));
    await page.keyboard.press('ArrowRight');
    await page.getByRole('dialog', { name: 'Screenshot of step 2' }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  }, 180_000);
});
