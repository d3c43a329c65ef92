/**
 * The inspector in an 800 px window, in Debian's Chromium against a real `runboard serve` (decision
 * 137): a run's start time stays on one line in the runs list, a permission ask's three answers sit
 * on one line where they fit, and the open card's column stays in view when the window is made
 * narrower after the card was opened. Pictures at 1280 and 800 px in test-results/.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ARTIFACTS,
  BoardServer,
  cardRunEnded,
  launchBrowser,
  shellConfig,
  waitUntil,
} from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const card = (id: string, title: string, command: string): string =>
  `---\nid: ${id}\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n---\n# Task\n`;

let server: BoardServer;
let browser: Browser;
let page: Page;
let reports: string;

/** Card `id` opened by a click, its inspector shown. */
async function open(id: string, title: string): Promise<void> {
  await page.click(`li[data-card-id="${id}"]`);
  await page.getByRole('complementary', { name: `Inspector: ${title}` }).waitFor();
}

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), {}, { projectName: 'quarterly-reports-and-exports' });
  reports = path.join(server.root, 'reports');
  mkdirSync(reports);
  reports = realpathSync(reports);
  server.writeCard('ran.md', card('ran', 'Count the lines', 'echo counted'));
  server.writeCard('ask.md', card('ask', 'Save the report', `echo done > ${reports}/report.txt`));
  server.writeCard('broke.md', card('broke', 'Break on purpose', 'exit 3'));
  await waitUntil('the cards on the board', async () => (await server.board()).cards.length === 3);
  for (const id of ['ran', 'ask', 'broke'])
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
  await Promise.all(['ran', 'ask', 'broke'].map((id) => cardRunEnded(server, id)));
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="ran"]');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** How many lines the text of the element `sel` (the first match) takes. */
const lines = (sel: string): Promise<number> =>
  page
    .locator(sel)
    .first()
    .evaluate((e) => {
      const r = document.createRange();
      r.selectNodeContents(e);
      return new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size;
    });

/** Card `id`'s column lies whole inside the board's box (what of the board is on screen). */
const columnInView = (id: string): Promise<boolean> =>
  page.locator(`li[data-card-id="${id}"]`).evaluate((card) => {
    const col = card.closest('.column')!.getBoundingClientRect();
    const board = document.querySelector('.board')!.getBoundingClientRect();
    return col.left >= board.left - 0.5 && col.right <= board.right + 0.5 && col.right <= window.innerWidth;
  });

describe('the inspector at 800 px', () => {
  it('the open card’s column stays in view: opened, and after the window is made narrower', async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    await open('ran', 'Count the lines');
    // Done is the fifth column: opening narrows the board under it
    await expect.poll(() => columnInView('ran')).toBe(true);
    await savePicture(page, path.join(ARTIFACTS, 'narrow-ran-1280.png'));
    await page.setViewportSize({ width: 800, height: 900 });
    await expect.poll(() => columnInView('ran')).toBe(true);
    await savePicture(page, path.join(ARTIFACTS, 'narrow-ran-800.png'));
    await page.setViewportSize({ width: 1280, height: 900 });
    await open('broke', 'Break on purpose');
    await page.setViewportSize({ width: 800, height: 900 });
    await expect.poll(() => columnInView('broke')).toBe(true);
    await savePicture(page, path.join(ARTIFACTS, 'narrow-broke-800.png'));
  });

  it('a run’s start time is one line in the runs list', async () => {
    await page.setViewportSize({ width: 800, height: 900 });
    await open('ran', 'Count the lines');
    const time = '.run-list .run-item > span:nth-child(2)';
    expect(await page.locator(time).first().textContent()).toMatch(/\d:\d\d:\d\d/);
    expect(await lines(time)).toBe(1);
    expect(await lines('.run-list .run-item > span:nth-child(3)')).toBe(1);
  });

  it('an ask’s three answers are on one line', async () => {
    for (const width of [1280, 800]) {
      await page.setViewportSize({ width, height: 900 });
      await open('ask', 'Save the report');
      const group = page.getByRole('group', { name: /^Answer: / });
      const tops = await group
        .getByRole('button')
        .evaluateAll((bs) => bs.map((b) => Math.round(b.getBoundingClientRect().top)));
      expect({ width, buttons: tops.length, rows: new Set(tops).size }).toEqual({
        width,
        buttons: 3,
        rows: 1,
      });
      // and inside the ask's box
      const inside = await group.evaluate((g) => {
        const box = g.closest('.asks')!.getBoundingClientRect();
        return [...g.querySelectorAll('button')].every((b) => b.getBoundingClientRect().right <= box.right);
      });
      expect(inside).toBe(true);
      await savePicture(page, path.join(ARTIFACTS, `narrow-ask-${width}.png`));
    }
  });
});
