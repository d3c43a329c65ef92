/**
 * A 2,000-card project in Debian's Chromium against a real `runboard serve`: the columns are
 * virtualised (only what is on screen is in the DOM) yet a person reaches every card: scrolling a
 * column reaches its last card, a far card moves by keyboard and the focus follows it into a column
 * where it lands off-screen, Escape gives the focus back to it after the board scrolled away, a URL
 * opens a far card, search finds one, and the list keeps its semantics (aria-setsize/posinset, axe-core).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FirstScreenView } from '../../host/src/shared/board-types.ts';
import { seriousViolations } from './helpers/axe.ts';
import {
  ARTIFACTS,
  BoardServer,
  keyboardMove,
  launchBrowser,
  shellConfig,
  sleep,
  waitUntil,
} from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const N = 2000;
const COLS = ['backlog', 'done', 'failed'] as const;
/** Cards c0…c1999, in Backlog, Done and Failed in turn (Backlog: c0, c3, …, c1998). */
function cards(): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < N; i++)
    out[`c${String(i).padStart(4, '0')}.md`] =
      `---\nid: c${i}\ntitle: Card number ${i}\nflow: shell\nworkspace: ./workspace\ncommand: "true"\nstatus: ${COLS[i % 3]}\nrank: ${i}\n---\n# Task\nCard ${i}.\n`;
  return out;
}
const BACKLOG = Math.ceil(N / 3);
const LAST_BACKLOG = `c${(BACKLOG - 1) * 3}`;

let server: BoardServer;
let browser: Browser;
let page: Page;

const inColumn = (id: string, column: string): string =>
  `ul.cards[data-column="${column}"] li[data-card-id="${id}"]`;
const focusedCard = (p: Page): Promise<string | null> =>
  p.evaluate(() => document.activeElement?.getAttribute('data-card-handle') ?? null);

/** Whether card `id` is in the DOM and within its column's visible area. */
const onScreen = (p: Page, id: string): Promise<boolean> =>
  p.evaluate((id) => {
    const li = document.querySelector(`li[data-card-id="${CSS.escape(id)}"]`);
    const list = li?.closest('.cards-scroll');
    if (!li || !list) return false;
    const a = li.getBoundingClientRect();
    const b = list.getBoundingClientRect();
    return a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  }, id);

/** Scrolls column `column`'s list to `top` px, as its scroll bar would. */
async function scrollListTo(p: Page, column: string, top: number): Promise<void> {
  await p
    .locator(`ul.cards[data-column="${column}"]`)
    .evaluate((e, top) => e.parentElement!.scrollTo({ top }), top);
  await sleep(100);
}

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), cards());
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector(inColumn('c0', 'backlog'), { timeout: 30_000 });
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('a 2,000-card board', () => {
  it('counts every card, renders only what is on screen, as lists with their size and places', async () => {
    await page.getByRole('region', { name: `Backlog column, ${BACKLOG} cards` }).waitFor({ timeout: 10_000 });
    const inDom = await page.locator('li.card').count();
    expect(inDom).toBeGreaterThan(10);
    expect(inDom).toBeLessThan(400);
    const first = page.locator(inColumn('c0', 'backlog'));
    expect(await first.getAttribute('aria-setsize')).toBe(String(BACKLOG));
    expect(await first.getAttribute('aria-posinset')).toBe('1');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('the page comes with its first screen: the first cards of each column and every count', async () => {
    const html = await (await fetch(server.url)).text();
    const json = /<script type="application\/json" id="first-screen">(.*?)<\/script>/s.exec(html)?.[1];
    const first = JSON.parse(json!) as FirstScreenView;
    expect(first.counts).toMatchObject({
      backlog: BACKLOG,
      done: BACKLOG,
      failed: N - 2 * BACKLOG,
      queued: 0,
    });
    expect(first.cards.filter((c) => c.column === 'backlog').map((c) => c.id)).toEqual(
      Array.from({ length: 40 }, (_, i) => `c${i * 3}`),
    );
    expect(first.cards.length).toBe(120);
    // and once the script ran, it is gone from the page (the whole board replaced it)
    expect(await page.locator('#first-screen').count()).toBe(0);
  });

  it('scrolling a column reaches its last card', async () => {
    const list = page.locator('.cards-scroll:has(> ul.cards[data-column="backlog"])');
    const box = (await list.boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await waitUntil(
      'the last Backlog card on screen',
      async () => {
        if (await onScreen(page, LAST_BACKLOG)) return true;
        await page.mouse.wheel(0, 4000);
        await sleep(50);
        return false;
      },
      30_000,
    );
    const last = page.locator(inColumn(LAST_BACKLOG, 'backlog'));
    expect(await last.getAttribute('aria-posinset')).toBe(String(BACKLOG));
    expect(await page.locator(inColumn('c0', 'backlog')).count()).toBe(0); // the top is unmounted
    await savePicture(page, path.join(ARTIFACTS, 'large-board-scrolled-1440.png'));
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('a far card moves by keyboard; the focus follows it to where it lands off-screen; Escape returns it', async () => {
    // Done scrolled far down: where the card will land (the top of Done) is off-screen
    await scrollListTo(page, 'done', 20_000);
    expect(await page.locator(inColumn('c1', 'done')).count()).toBe(0);
    // the last Backlog card, on screen after the scroll: Space, → (Queued), Space
    await page.locator(`[data-card-handle="${LAST_BACKLOG}"]`).focus();
    await keyboardMove(page, ['ArrowRight'], 'queued');
    // it runs (`true`) and ends at the top of Done, out of the view there
    await page.waitForSelector(inColumn(LAST_BACKLOG, 'done'), { timeout: 30_000 });
    await waitUntil('focus on the moved card', async () => (await focusedCard(page)) === LAST_BACKLOG, 5000);
    expect(
      readFileSync(server.cardFile(`c${String((BACKLOG - 1) * 3).padStart(4, '0')}.md`), 'utf8'),
    ).toMatch(/status: done/);
    // the focus scrolled it into view in Done
    await waitUntil('the moved card on screen', () => onScreen(page, LAST_BACKLOG), 5000);

    // open it; scroll Done away (the card leaves the DOM); Escape: the focus is back on it, in view
    await page.keyboard.press('Enter');
    const inspector = page.getByRole('complementary', {
      name: `Inspector: Card number ${(BACKLOG - 1) * 3}`,
    });
    await inspector.waitFor();
    await scrollListTo(page, 'done', 20_000);
    await waitUntil(
      'the moved card unmounted',
      async () => (await page.locator(`li[data-card-id="${LAST_BACKLOG}"]`).count()) === 0,
      5000,
    );
    await page.keyboard.press('Escape');
    await inspector.waitFor({ state: 'detached' });
    await waitUntil('focus back on the card', async () => (await focusedCard(page)) === LAST_BACKLOG, 5000);
    await waitUntil('the card on screen again', () => onScreen(page, LAST_BACKLOG), 5000);
  });

  it('a URL opens a far card and shows it in its column; search finds one card of 2,000', async () => {
    const far = `c${N - 1}`; // the last card of its column
    const column = COLS[(N - 1) % 3]!;
    const other = await page.context().newPage();
    await other.goto(`${server.base}/#card=${far}`);
    await other.getByRole('complementary', { name: `Inspector: Card number ${N - 1}` }).waitFor();
    await waitUntil('the far card shown in its column', () => onScreen(other, far), 10_000);
    expect(await other.locator(`${inColumn(far, column)}.selected`).count()).toBe(1);
    await other.close();

    await page.getByRole('searchbox', { name: 'Search cards by title' }).fill('Card number 1234');
    await page.getByRole('search').getByRole('status').getByText(`1 of ${N} cards`).waitFor();
    expect(
      await page.locator('li.card').evaluateAll((els) => els.map((e) => e.getAttribute('data-card-id'))),
    ).toEqual(['c1234']);
    await page.getByRole('button', { name: 'Clear filters' }).click();
  });
});
