/**
 * A newcomer's first minutes on the board (issue 31), in Debian's Chromium at 1280×720 (and 1440×900
 * for the screenshots): the first-run checklist (grant, optional key, try a card) that goes away once
 * done, Run in the inspector for a card that never ran, a queued card whose flow is missing saying
 * why, the live log in view at 1280×720 with the task as rendered (safe) Markdown, columns that keep
 * their width beside the inspector, a header on one line, a cancelled run without "exit –", a missing
 * command named from its log, and the help with the shortcuts. Real serve, supervisor and runs.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const config = `version: 2
flows:
  shell: { runner: command, cap: 2 }
  agent: { runner: codex, provider: openai, model: gpt-x }
`;
const card = (title: string, command: string, extra = '', body = '# Task\n'): string =>
  `---\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n${extra}---\n${body}`;

let server: BoardServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  server = await BoardServer.start(
    config,
    {
      'a-hello.md': card('Say hello', 'echo hello from the first card'),
      'b-markdown.md': card(
        'Rendered task',
        'true',
        '',
        '# Task\nSome **bold** words, `code`, a [bad link](javascript:alert(1)) and <img src=x onerror="document.title=1">.\n\n- one\n- two\n',
      ),
      'c-nope.md': card('Missing command', 'frobnicate --now'),
      'd-slow.md': card('Slow', 'for i in $(seq 1 600); do echo tick $i; sleep 0.1; done'),
      'e-blocked.md': card('Blocked', 'true', 'status: queued\n').replace('flow: shell', 'flow: ghost'),
    },
    // a fresh state root: no grant yet, as on a newcomer's first open
    { beforeServe: (paths) => rmSync(paths.grantsDir, { recursive: true, force: true }) },
  );
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 720 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="a-hello"]');
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const inspector = (title: string) => page.getByRole('complementary', { name: `Inspector: ${title}` });

describe('a newcomer’s first minutes on the board', () => {
  it('one checklist: grant, an optional key (where to get one, most cards need none), try a card', async () => {
    const list = page.getByRole('region', { name: 'Getting started' });
    await list.waitFor();
    await list.getByRole('button', { name: /^Run “/ }).waitFor();
    expect(await list.getByRole('button', { name: /^Run “/ }).isDisabled()).toBe(true); // grant first
    const keys = list.getByRole('region', { name: 'Set up model providers' });
    await keys.getByText(/Most cards need none/).waitFor();
    expect(await keys.getByRole('link', { name: 'platform.openai.com/api-keys' }).count()).toBe(1);
    // the header stays on one line at 1280 px
    const header = (await page.locator('header.topbar').boundingBox())!;
    expect(header.height).toBeLessThan(50);
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'firstrun-board-1280.png'));
    await page.setViewportSize({ width: 1440, height: 900 });
    await savePicture(page, path.join(ARTIFACTS, 'firstrun-board-1440.png'));
    await page.setViewportSize({ width: 1280, height: 720 });
    // compact: the whole checklist, key field included, is smaller than the key panel alone was (175 px)
    expect((await list.boundingBox())!.height).toBeLessThan(170);

    await list.getByRole('button', { name: `Grant ${server.workspace}` }).click();
    await list.getByText('Runs may use the project’s folder (granted).').waitFor();
    await list.getByRole('button', { name: 'Run “Say hello”' }).click();
    // it opens the card, whose live log shows the run; once a card has run the checklist goes away
    await inspector('Say hello')
      .getByRole('log', { name: 'Run output' })
      .getByText('hello from the first card')
      .waitFor({ timeout: 20_000 });
    await waitUntil('the checklist is gone', async () => (await list.count()) === 0);
  });

  it('a card that never ran has Run in its inspector; at 1280×720 its live log is in view, columns keep their width', async () => {
    await page.locator('li[data-card-id="d-slow"]').click();
    const ins = inspector('Slow');
    await ins.getByText('No runs yet: press Run (or drag the card into Queued).').waitFor();
    await ins.getByRole('button', { name: 'Run', exact: true }).click();
    const tick = ins.getByRole('log', { name: 'Run output' }).getByText('tick 3', { exact: true });
    await tick.waitFor({ timeout: 20_000 });
    const log = (await ins.getByRole('log', { name: 'Run output' }).boundingBox())!;
    expect(log.y + 60).toBeLessThan(720); // the log's first lines are above the fold
    for (const col of await page.locator('.board .column').all())
      expect((await col.boundingBox())!.width).toBeGreaterThanOrEqual(169);
    await savePicture(page, path.join(ARTIFACTS, 'firstrun-inspector-running-1280.png'));
    // cancelled: the run says what stopped it, not an empty exit code
    await ins.getByRole('button', { name: 'Cancel run' }).click();
    await ins.locator('.metrics dt', { hasText: 'Stopped by' }).waitFor({ timeout: 15_000 });
    expect(await ins.locator('.metrics dd', { hasText: /^–$/ }).count()).toBe(0);
  });

  it('the task is rendered Markdown, and nothing in it runs or loads', async () => {
    await page.locator('li[data-card-id="b-markdown"]').click();
    const md = inspector('Rendered task').locator('.card-body .markdown');
    await md.locator('strong', { hasText: 'bold' }).waitFor();
    expect(await md.locator('li').allTextContents()).toEqual(['one', 'two']);
    expect(await md.locator('img').count()).toBe(0);
    expect(await md.textContent()).toContain('<img src=x onerror="document.title=1">');
    expect(await md.locator('a').count()).toBe(0); // a javascript: link is text
    expect(await page.title()).not.toBe('1');
  });

  it('a missing command names itself from the log; a queued card with a missing flow says what to do', async () => {
    await page.locator('li[data-card-id="c-nope"]').click();
    await inspector('Missing command').getByRole('button', { name: 'Run', exact: true }).click();
    const c = await waitUntil('the failure recorded', async () => {
      const x = await server.card('c-nope');
      return x?.lastError ? x : undefined;
    });
    expect(c.lastError).toMatch(/frobnicate: not found/);
    await inspector('Missing command')
      .getByText(/frobnicate: not found/)
      .first()
      .waitFor();
    await page.locator('li[data-card-id="e-blocked"]').click();
    await inspector('Blocked')
      .getByText(/Waiting: flow "ghost" is not in config.yaml: add it there, or Edit the card/)
      .waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'firstrun-blocked-1280.png'));
    await page.setViewportSize({ width: 1440, height: 900 });
    await savePicture(page, path.join(ARTIFACTS, 'firstrun-blocked-1440.png'));
    await page.setViewportSize({ width: 1280, height: 720 });
  });

  it('? opens the help with the keyboard shortcuts; Escape closes it', async () => {
    await page.locator('header.topbar h1').click();
    await page.keyboard.press('?');
    const help = page.getByRole('dialog', { name: 'Help' });
    await help.getByText('open the focused card in the inspector').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await waitUntil('help closed', async () => (await help.count()) === 0);
  });
});
