/**
 * Browser notifications of runs in Debian's Chromium against a real `runboard serve`: off until the
 * person turns them on in Settings (the browser's permission asked then); once on, a run that ends
 * (finished or failed) notifies, with the card's title. The page's Notification is wrapped before it
 * loads, to record what it shows. Screenshot and axe-core on Settings.
 */
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, shellCard, shellConfig, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let server: BoardServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;

const notes = (): Promise<{ title: string; body: string }[]> =>
  page.evaluate(() => (window as unknown as { __notes: { title: string; body: string }[] }).__notes);

async function runCard(id: string, column: string): Promise<void> {
  await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
  await waitUntil(`${id} in ${column}`, async () => (await server.card(id))?.column === column, 30_000);
}

beforeAll(async () => {
  server = await BoardServer.start(shellConfig(), {
    'first.md': shellCard('First job', 'echo one'),
    'second.md': shellCard('Second job', 'echo two'),
    'broken.md': shellCard('Broken job', 'exit 3'),
  });
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  await context.grantPermissions(['notifications'], { origin: server.base });
  await context.addInitScript(() => {
    const Real = window.Notification;
    const seen: { title: string; body: string }[] = [];
    (window as unknown as { __notes: typeof seen }).__notes = seen;
    class Recording extends Real {
      constructor(title: string, opts?: NotificationOptions) {
        super(title, opts);
        seen.push({ title, body: opts?.body ?? '' });
      }
    }
    Recording.requestPermission = Real.requestPermission.bind(Real);
    window.Notification = Recording;
  });
  page = await context.newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="first"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('notifications', () => {
  it('are off until turned on: a run that ends then shows nothing', async () => {
    await runCard('first', 'done');
    await page.locator('li[data-card-id="first"][data-column="done"]').waitFor();
    expect(await notes()).toEqual([]);
  });

  it('turned on in Settings, a finished and a failed run each notify with the card title', async () => {
    await page.getByRole('button', { name: 'Settings' }).click();
    const settings = page.getByRole('dialog', { name: 'Settings' });
    const box = settings.getByRole('checkbox', { name: 'Notify me when a run ends or a card needs input' });
    // it turns on once the browser has answered the permission request (click, then wait)
    await box.click();
    await waitUntil('checked', () => box.isChecked());
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'notify-settings-1440.png'));
    await page.keyboard.press('Escape');
    await runCard('second', 'done');
    await waitUntil('a note of the second job', async () =>
      (await notes()).some((n) => n.title === 'Run finished: Second job'),
    );
    await runCard('broken', 'failed');
    const failed = await waitUntil('a note of the broken job', async () =>
      (await notes()).find((n) => n.title === 'Run failed: Broken job'),
    );
    expect(failed.body).toMatch(/3/);
    // the choice is kept in this browser
    await page.reload();
    await page.getByRole('button', { name: 'Settings' }).click();
    expect(await page.getByRole('checkbox', { name: /Notify me/ }).isChecked()).toBe(true);
  });
});
