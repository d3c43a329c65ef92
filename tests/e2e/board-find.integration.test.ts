/**
 * Finding and re-running cards in Debian's Chromium against a real `runboard serve`: search and
 * filters by title, flow and column; a URL that opens a card; "Run again" on an ended card and
 * "Retry now" on a card waiting out its backoff, keyboard only. No serious axe-core violation.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
scheduler:
  maxConcurrency: 4
  backoff: { base: 600000, retries: 1 }
flows:
  shell: { runner: command, cap: 2 }
  other: { runner: command, cap: 2 }
`;
const card = (title: string, flow: string, command: string): string =>
  `---\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n---\n# Task\n`;

let server: BoardServer;
let browser: Browser;
let page: Page;

const visibleCards = (p: Page): Promise<(string | null)[]> =>
  p.locator('ul.cards > li').evaluateAll((els) => els.map((e) => e.getAttribute('data-card-id')));

async function press(p: Page, selector: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    await p.keyboard.press('Tab');
    if (await p.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) {
      await p.keyboard.press('Enter');
      return;
    }
  }
  throw new Error(`${selector} not reached by Tab`);
}

beforeAll(async () => {
  server = await BoardServer.start(CONFIG, {
    'alpha.md': card('Alpha report', 'shell', 'echo alpha'),
    'beta.md': card('Beta cleanup', 'other', 'echo beta'),
    'flaky.md': card('Flaky fetch', 'shell', 'exit 1'),
  });
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="alpha"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('find and re-run cards', () => {
  it('search and filters by title, flow and column', async () => {
    await page.getByRole('searchbox', { name: 'Search cards by title' }).focus();
    await page.keyboard.type('alpha rep');
    await waitUntil('only alpha', async () => (await visibleCards(page)).join() === 'alpha', 3000);
    await page.getByRole('search').getByRole('status').getByText('1 of 3 cards').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'find-search-1440.png'));
    await page.keyboard.press('Escape'); // clears the search
    await page.getByRole('combobox', { name: 'Flow' }).selectOption('other');
    await waitUntil('only beta', async () => (await visibleCards(page)).join() === 'beta', 3000);
    await page.getByRole('combobox', { name: 'Flow' }).selectOption('');
    await page.getByRole('combobox', { name: 'Status' }).selectOption('done');
    await waitUntil('none', async () => (await visibleCards(page)).length === 0, 3000);
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await waitUntil('all three', async () => (await visibleCards(page)).length === 3, 3000);
  });

  it('a URL opens a given card; opening a card puts it in the URL', async () => {
    const other = await page.context().newPage();
    await other.goto(`${server.base}/#card=beta`);
    await other.getByRole('complementary', { name: 'Inspector: Beta cleanup' }).waitFor();
    await other.close();
    // the URL `runboard serve` prints (its token) with a card named: the card opens, the token leaves the URL
    const fresh = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const linked = await fresh.newPage();
    await linked.goto(`${server.url}#card=beta`);
    await linked.getByRole('complementary', { name: 'Inspector: Beta cleanup' }).waitFor();
    expect(new URL(linked.url()).search).toBe('');
    expect(new URL(linked.url()).hash).toBe('#card=beta');
    await fresh.close();
    await page.locator('[data-card-handle="alpha"]').focus();
    await page.keyboard.press('Enter');
    await page.getByRole('complementary', { name: 'Inspector: Alpha report' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#card=alpha');
    await page.keyboard.press('Escape');
    await waitUntil('no card in the URL', () => new URL(page.url()).hash === '', 3000);
    // a link to a card that is not there says so
    const gone = await page.context().newPage();
    await gone.goto(`${server.base}/#card=nope`);
    await gone.getByRole('alert').getByText(/nope/).first().waitFor();
    await gone.close();
  });

  it('Run again on a Done card runs it once more (keyboard only)', async () => {
    await server.api('POST', '/api/cards/alpha/move', { to: 'queued', index: 0 });
    await waitUntil('alpha done', async () => (await server.card('alpha'))?.column === 'done', 20_000).catch(
      async (e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify(await server.card('alpha'))}`);
      },
    );
    await page.locator('[data-card-handle="alpha"]').focus();
    await page.keyboard.press('Enter');
    const ins = page.getByRole('complementary', { name: 'Inspector: Alpha report' });
    await ins.getByText('Runs (1)').waitFor();
    await press(page, 'button.push-right');
    await ins.getByText('Runs (2)').waitFor({ timeout: 20_000 });
    await waitUntil('alpha done again', async () => (await server.card('alpha'))?.column === 'done', 20_000);
    await page.keyboard.press('Escape');
  });

  it('Retry now on a card waiting out its backoff starts it at once', async () => {
    await server.api('POST', '/api/cards/flaky/move', { to: 'queued', index: 0 });
    const waiting = await waitUntil(
      'flaky back in Queued with a next try',
      async () => {
        const c = await server.card('flaky');
        return c?.column === 'queued' && c.nextTryAt ? c : undefined;
      },
      20_000,
    );
    expect(Date.parse(waiting.nextTryAt!) - Date.now()).toBeGreaterThan(60_000);
    await page.locator('[data-card-handle="flaky"]').focus();
    await page.keyboard.press('Enter');
    const ins = page.getByRole('complementary', { name: 'Inspector: Flaky fetch' });
    await ins.getByText('Runs (1)').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 1100, height: 800 });
    await savePicture(page, path.join(ARTIFACTS, 'find-retry-now-1100.png'));
    await press(page, 'button.push-right');
    // it ran at once (a second run), failed again, and waits anew: a hand retry starts the count afresh
    await ins.getByText('Runs (2)').waitFor({ timeout: 20_000 });
    const again = await waitUntil('a new next try', async () => {
      const c = await server.card('flaky');
      return c?.nextTryAt && c.nextTryAt !== waiting.nextTryAt ? c : undefined;
    });
    expect(again.failures).toBe(1);
  });
});
