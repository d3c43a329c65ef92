/**
 * Folders from the board in Debian's Chromium against a real `runboard serve`: the folder picker (a
 * folder browser served by the host, starting at the user's home) grants a folder for a new card; a
 * card whose folder is not granted, or whose grant is stale (the folder was replaced), says so and
 * offers the grant (again); a grant of Runboard's own state is refused, saying why. A card's run
 * starts once its folder is granted. Screenshots and axe-core on each view.
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import { seriousViolations } from './helpers/axe.ts';
import {
  ARTIFACTS,
  BoardServer,
  explainFailures,
  holdFirstAnswer,
  launchBrowser,
  waitUntil,
} from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = 'version: 1\nflows:\n  shell: { runner: command, cap: 2 }\n';

let server: BoardServer;
let browser: Browser;
let page: Page;
let home: string;

const grantOf = (folder: string) => findGrant(statePaths({ RUNBOARD_HOME: server.home }), folder);

beforeAll(async () => {
  // the user's home the picker starts at: a folder of this test's own
  home = mkdtempSync(path.join(os.tmpdir(), 'rb-e2e-home-'));
  mkdirSync(path.join(home, 'projects', 'site'), { recursive: true });
  mkdirSync(path.join(home, '.hidden'));
  server = await BoardServer.start(
    CONFIG,
    {
      'elsewhere.md':
        '---\ntitle: Elsewhere\nflow: shell\nworkspace: ./other\ncommand: echo other\n---\n# Task\n',
    },
    { env: { HOME: home } },
  );
  mkdirSync(path.join(server.project, 'other'));
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="elsewhere"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  rmSync(home, { recursive: true, force: true });
});

describe('folders granted from the board', () => {
  // (a picker test failed once in CI on a click that timed out, with nothing more said)
  explainFailures(() => page);
  it('a card whose folder is not granted says so; Grant in the inspector grants it and the card runs', async () => {
    const tile = page.locator('li[data-card-id="elsewhere"]');
    await tile.getByText('folder not granted').waitFor();
    await tile.locator('[data-card-handle]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Elsewhere' });
    await ins.getByText(/Runs of this card cannot start: its folder .*other is not granted/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'grants-missing-1440.png'));
    await ins.getByRole('button', { name: /^Grant .*other$/ }).click();
    await waitUntil('the banner gone', async () => (await ins.getByText(/cannot start/).count()) === 0);
    expect(grantOf(path.join(server.project, 'other'))?.path).toBe(path.join(server.project, 'other'));
    await server.api('POST', '/api/cards/elsewhere/move', { to: 'queued', index: 0 });
    await waitUntil(
      'elsewhere done',
      async () => (await server.card('elsewhere'))?.column === 'done',
      30_000,
    );
    await page.keyboard.press('Escape');
  });

  it('a stale grant (the folder was replaced) says why and offers Grant again', async () => {
    const other = path.join(server.project, 'other');
    // replaced as a checkout or a restore would: another folder under the same name
    renameSync(other, `${other}-before`);
    mkdirSync(other);
    // the board notices on its next look (a view reuses a folder's grant status for 2 s)
    const tile = page.locator('li[data-card-id="elsewhere"]');
    await waitUntil('the card says its grant is stale', async () => {
      await page.reload();
      await tile.waitFor();
      return (await tile.getByText('grant stale: grant the folder again').count()) > 0;
    });
    await tile.locator('[data-card-handle]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Elsewhere' });
    await ins.getByText(/was replaced since it was granted/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'grants-stale-1440.png'));
    await ins.getByRole('button', { name: 'Grant again' }).click();
    await waitUntil('the banner gone', async () => (await ins.getByText(/cannot start/).count()) === 0);
    await tile.getByText(/grant/).waitFor({ state: 'detached' });
    await page.keyboard.press('Escape');
  });

  it('the folder picker starts at home, walks down, grants a folder, and the new card works there', async () => {
    // The editor's first form (with its default workspace) answered only after the grant, as a slow
    // host did in a CI run: the folder the person granted stays the card's workspace.
    const form = await holdFirstAnswer(page, '**/api/card-form'); // answered before the grant, delivered late
    await page.getByRole('button', { name: 'New card', exact: true }).click();
    const editor = page.getByRole('dialog', { name: 'New card' });
    await editor.getByLabel('Title').fill('Build the site');
    await editor.getByLabel('Command').fill('ls');
    await editor.getByRole('button', { name: 'Grant a folder…' }).click();
    const picker = page.getByRole('dialog', { name: 'Grant a folder' });
    await expect.poll(() => picker.getByLabel('Folder', { exact: true }).inputValue()).toBe(home);
    expect(await picker.getByText('.hidden').count()).toBe(0);
    await picker.getByRole('button', { name: '📁 projects' }).click();
    await picker.getByRole('button', { name: '📁 site' }).click();
    const site = path.join(home, 'projects', 'site');
    await picker.getByRole('button', { name: `Grant ${site}` }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'grants-picker-1440.png'));
    await picker.getByRole('button', { name: `Grant ${site}` }).click();
    await picker.waitFor({ state: 'detached' });
    expect(grantOf(site)?.path).toBe(site);
    await expect.poll(() => editor.getByLabel('Workspace').inputValue()).toBe(site);
    form.release();
    await form.answered;
    // the page has taken the late answer (its promise, then React's render) before this looks
    await page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(r), 50)));
    expect(await editor.getByLabel('Workspace').inputValue()).toBe(site);
    await editor.getByRole('button', { name: 'Create in Backlog' }).click();
    await page.getByRole('complementary', { name: 'Inspector: Build the site' }).waitFor();
    expect(readFileSync(path.join(server.project, 'cards', 'build-the-site.md'), 'utf8')).toContain(
      `workspace: ${site}\n`,
    );
    await page.keyboard.press('Escape');
  });

  it('a path typed while the first listing loads is kept, and Go lists that folder', async () => {
    // the host answers the picker's first listing slowly (as on a loaded machine)
    const listing = await holdFirstAnswer(page, '**/api/folders*');
    await page.getByRole('button', { name: 'New card', exact: true }).click();
    const editor = page.getByRole('dialog', { name: 'New card' });
    await editor.getByRole('button', { name: 'Grant a folder…' }).click();
    const picker = page.getByRole('dialog', { name: 'Grant a folder' });
    const typed = path.join(home, 'projects');
    await picker.getByLabel('Folder', { exact: true }).fill(typed);
    listing.release();
    await listing.answered;
    await picker.getByRole('button', { name: '📁 projects' }).waitFor(); // the first listing (home's) came in
    expect(await picker.getByLabel('Folder', { exact: true }).inputValue()).toBe(typed);
    await picker.getByRole('button', { name: 'Go', exact: true }).click();
    await picker.getByRole('button', { name: `Grant ${typed}` }).waitFor();
    await page.keyboard.press('Escape');
    await picker.waitFor({ state: 'detached' });
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
  });

  it('a listing that comes in while the person is in the Folder field does not put its path before what they type', async () => {
    // a person clicks into the field, the first listing comes in, then they type (CI once saw Playwright's
    // fill select the field's text, the listing land, and the path typed after the listing's)
    const listing = await holdFirstAnswer(page, '**/api/folders*');
    await page.getByRole('button', { name: 'New card', exact: true }).click();
    const editor = page.getByRole('dialog', { name: 'New card' });
    await editor.getByRole('button', { name: 'Grant a folder…' }).click();
    const picker = page.getByRole('dialog', { name: 'Grant a folder' });
    const field = picker.getByLabel('Folder', { exact: true });
    await field.click();
    await page.keyboard.press('Control+A'); // about to type over whatever is there
    listing.release();
    await listing.answered;
    await picker.getByRole('button', { name: '📁 projects' }).waitFor(); // the listing is shown
    const typed = path.join(home, 'projects', 'site');
    await page.keyboard.type(typed);
    expect(await field.inputValue()).toBe(typed);
    await page.keyboard.press('Enter');
    await picker.getByRole('button', { name: `Grant ${typed}` }).waitFor();
    expect(await field.inputValue()).toBe(typed);
    // leaving the field without typing shows the folder listed
    await picker.getByRole('button', { name: /^↑ Up to / }).click();
    await picker.getByRole('button', { name: `Grant ${path.join(home, 'projects')}` }).waitFor();
    await field.click();
    await page.keyboard.press('Tab');
    expect(await field.inputValue()).toBe(path.join(home, 'projects'));
    await page.keyboard.press('Escape');
    await picker.waitFor({ state: 'detached' });
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
  });

  it('refuses to grant Runboard state or a relative path, and to list what is not a folder, saying why', async () => {
    await expect(server.api('POST', '/api/grants', { path: server.home })).rejects.toThrow(/400 .*state/);
    await expect(server.api('POST', '/api/grants', { path: 'relative/dir' })).rejects.toThrow(
      /400 not an absolute folder path/,
    );
    await expect(
      server.api('GET', `/api/folders?path=${encodeURIComponent('/nonexistent-rb')}`),
    ).rejects.toThrow(/404 no folder/);
    // the picker in the page says so too
    await page.getByRole('button', { name: 'New card', exact: true }).click();
    const editor = page.getByRole('dialog', { name: 'New card' });
    await editor.getByRole('button', { name: 'Grant a folder…' }).click();
    const picker = page.getByRole('dialog', { name: 'Grant a folder' });
    await picker.getByLabel('Folder', { exact: true }).fill(server.home);
    await picker.getByRole('button', { name: 'Go', exact: true }).click();
    await picker.getByRole('button', { name: `Grant ${server.home}` }).click();
    await picker.getByRole('alert').getByText(/state/).waitFor();
    await page.keyboard.press('Escape');
    await picker.waitFor({ state: 'detached' });
    await editor.waitFor(); // Escape closed only the picker
    await page.keyboard.press('Escape');
    await editor.waitFor({ state: 'detached' });
  });
});
