/**
 * The inspector in an 800 px window, in Debian's Chromium against a real `runboard serve` (decision
 * 137): a run's start time stays on one line in the runs list, a run's Output and I/O figures are
 * one line each, a permission ask's three answers sit on one line where they fit (the flow's button
 * at most two lines, whatever the flow's name), and the open card's column stays in view when the
 * window is made narrower after the card was opened. Pictures at 1440, 1280 and 800 px in
 * test-results/.
 */
import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
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

const card = (id: string, title: string, command: string, flow = 'shell'): string =>
  `---\nid: ${id}\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n---\n# Task\n`;
/** A flow's name as long as real ones get: the ask's "Allow always for flow …" carries it. */
const LONG_FLOW = 'nightly-quarterly-report-exports';

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
  server = await BoardServer.start(
    `${shellConfig()}  ${LONG_FLOW}: { runner: command, cap: 4 }\n`,
    {},
    { projectName: 'quarterly-reports-and-exports' },
  );
  reports = path.join(server.root, 'reports');
  mkdirSync(reports);
  reports = realpathSync(reports);
  server.writeCard('ran.md', card('ran', 'Count the lines', 'echo counted'));
  server.writeCard('ask.md', card('ask', 'Save the report', `echo done > ${reports}/report.txt`, LONG_FLOW));
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

/** The height of the text of the element `l` (its first match): one line's, or two's, … */
const textHeight = (l: Locator): Promise<number> =>
  l.first().evaluate((e) => {
    const r = document.createRange();
    r.selectNodeContents(e);
    return Math.round(r.getBoundingClientRect().height);
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

  it('a run’s Output and I/O figures are one line each, at 800, 1280 and 1440 px', async () => {
    for (const width of [1440, 1280, 800]) {
      await page.setViewportSize({ width, height: 900 });
      await open('ran', 'Count the lines');
      const figure = (name: string): Locator =>
        page.locator(`.metrics > div:has(> dt:text-is("${name}")) > dd`);
      expect(await figure('I/O').textContent()).toMatch(/ read · .* written$/);
      // as high as the Status's one line, in the same type
      const line = await textHeight(figure('Status'));
      expect({
        width,
        output: await textHeight(figure('Output')),
        io: await textHeight(figure('I/O')),
      }).toEqual({
        width,
        output: line,
        io: line,
      });
      // and inside the inspector
      const inside = await page
        .locator('.metrics')
        .evaluate((m) =>
          [...m.querySelectorAll('dd')].every(
            (d) => d.getBoundingClientRect().right <= m.getBoundingClientRect().right + 0.5,
          ),
        );
      expect(inside).toBe(true);
      await savePicture(
        page.locator('.run-panel .metrics'),
        path.join(ARTIFACTS, `narrow-figures-${width}.png`),
      );
    }
  });

  it('an ask’s three answers are on one line; Allow always for a long flow name two lines at most, nothing broken', async () => {
    for (const width of [1440, 1280, 800]) {
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
      // "Allow always for flow nightly-quarterly-report-exports": two lines at most, "Allow always"
      // whole on the first (six lines at 800 px, the name broken at its hyphens), nothing out of the
      // button; the whole name in its accessible name and title
      const always = group.getByRole('button', { name: `Allow always for flow ${LONG_FLOW}` });
      expect(await always.getAttribute('title')).toContain(LONG_FLOW);
      const line = await textHeight(group.getByRole('button', { name: 'Allow once' }));
      const label = await always.evaluate((b) => {
        const height = (r: Range): number => Math.round(r.getBoundingClientRect().height);
        const whole = document.createRange();
        whole.selectNodeContents(b);
        const words = document.createRange(); // "Allow always", the label's first words
        const first = document.createTreeWalker(b, NodeFilter.SHOW_TEXT).nextNode()!;
        words.setStart(first, 0);
        words.setEnd(first, 12);
        const box = b.getBoundingClientRect();
        return {
          words: words.toString(),
          wordsHeight: height(words),
          height: height(whole),
          // nothing of it drawn out of the button
          inside:
            b.scrollWidth <= b.clientWidth &&
            [...b.children].every((e) => e.getBoundingClientRect().right <= box.right + 0.5),
        };
      });
      expect(label.words).toBe('Allow always');
      expect({
        width,
        words: label.wordsHeight / line,
        lines: label.height / line,
        inside: label.inside,
      }).toEqual({ width, words: 1, lines: width === 800 ? 2 : 1, inside: true });
      await savePicture(page, path.join(ARTIFACTS, `narrow-ask-${width}.png`));
    }
  });
});
