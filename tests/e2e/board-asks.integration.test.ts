/**
 * Permission asks in Debian's Chromium against a real `runboard serve` (its supervisor and jail): a
 * card whose command writes outside its granted folder lands in Needs input; its inspector shows what
 * the sandbox refused (the supervisor's record) with Allow once, Allow always and Deny. Allow once is
 * reached and pressed with the keyboard only, and the card runs again and is done with the file
 * written; Deny fails another card with the reason. axe-core on the ask; a screenshot of it.
 */
import { mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, shellConfig, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let server: BoardServer;
let browser: Browser;
let page: Page;
let reports: string;

const card = (id: string, title: string, command: string): string =>
  `---\nid: ${id}\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n---\n# Task\n`;
const inColumn = (id: string, column: string): string =>
  `ul.cards[data-column="${column}"] li[data-card-id="${id}"]`;

/** Tabs (keyboard only) until the focused element is a button named `name`. */
async function tabToButton(p: Page, name: string, max = 80): Promise<void> {
  for (let i = 0; i < max; i++) {
    await p.keyboard.press('Tab');
    const at = await p.evaluate(() => {
      const a = document.activeElement;
      return a instanceof HTMLButtonElement ? a.textContent?.trim() : null;
    });
    if (at === name) return;
  }
  throw new Error(`the button ${name} was not reached in ${max} Tabs`);
}

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), {});
  reports = path.join(server.root, 'reports');
  mkdirSync(reports);
  reports = realpathSync(reports);
  server.writeCard('report.md', card('report', 'Save the report', `echo done > ${reports}/report.txt`));
  server.writeCard('deny.md', card('deny', 'Write elsewhere', `echo no > ${reports}/other.txt`));
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 1000 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="report"]');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('permission asks on the board', () => {
  it('the card asks in Needs input; Allow once by keyboard runs it again and it is done', async () => {
    await server.api('POST', '/api/cards/report/move', { to: 'queued', index: 0 });
    await page.waitForSelector(inColumn('report', 'needs-input'), { timeout: 30_000 });
    await page
      .locator(inColumn('report', 'needs-input'))
      .getByText(`needs: your permission to write in ${reports}`)
      .waitFor();
    // open it by keyboard: the card's handle, Enter
    await page.locator('[data-card-handle="report"]').focus();
    await page.keyboard.press('Enter');
    const ins = page.getByRole('complementary', { name: 'Inspector: Save the report' });
    const asks = ins.getByRole('region', { name: 'Permission asks' });
    await asks.getByText(`write in ${reports}`).waitFor();
    await asks.getByText(/The run printed: .*report\.txt/).waitFor();
    // what each answer grants, with the exact folder
    await asks
      .getByText(
        `Allow once lets the card's next run write anywhere in ${reports} (and the folders in it), that run only`,
        { exact: false },
      )
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'board-asks-1440.png'));

    await tabToButton(page, 'Allow once');
    await page.keyboard.press('Enter');
    await page.waitForSelector(inColumn('report', 'done'), { timeout: 30_000 });
    expect(readFileSync(path.join(reports, 'report.txt'), 'utf8')).toBe('done\n');
    await waitUntil('the ask gone', async () => (await asks.count()) === 0);
    await page.keyboard.press('Escape');
  }, 90_000);

  it('Deny fails the card, saying what was denied', async () => {
    await server.api('POST', '/api/cards/deny/move', { to: 'queued', index: 0 });
    await page.waitForSelector(inColumn('deny', 'needs-input'), { timeout: 30_000 });
    await page.locator('[data-card-handle="deny"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Write elsewhere' });
    await ins
      .getByRole('group', { name: `Answer: write in ${reports}` })
      .getByRole('button', { name: 'Deny' })
      .click();
    await page.waitForSelector(inColumn('deny', 'failed'), { timeout: 30_000 });
    await ins.getByText(`Last error: you denied the run: write in ${reports}`, { exact: false }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  }, 90_000);
});
