/**
 * Asks that wait at the tool call, on the board, in Debian's Chromium against a real `runboard serve`
 * (its supervisor, jail and worker): a card's run calls the agent CLIs' real permission hook
 * (dist/agent-hook.cjs, as claude does before a Write) for a file outside its granted folder; the run
 * waits there, and the card shows in Needs input, still running (locked, Cancel run), with the exact
 * folder, what each answer grants and the three buttons. Deny: the hook gets Runboard's denial, the
 * card is back in Running and the run goes on to Done. Allow once: the file is written (by the same
 * run where the live sandbox can gain the folder, else by the card's next run, queued at once). No
 * answer within the flow's askTimeout: a denial, shown in the card's log. axe-core; a screenshot.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, DIST, launchBrowser, shellCard, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let server: BoardServer;
let browser: Browser;
let page: Page;
let reports: string;

const inColumn = (id: string, column: string): string =>
  `ul.cards[data-column="${column}"] li[data-card-id="${id}"]`;

/**
 * A command that asks as Claude Code's PreToolUse hook does before Write `file` (the real hook; its
 * answer printed), waits for the test's `release-<id>` file in its workspace, then writes `file`
 * unless the hook said deny (an agent told no goes on without it).
 */
function asking(id: string, file: string): string {
  const call = JSON.stringify({ tool_name: 'Write', tool_input: { file_path: file, content: 'x' } });
  return (
    `r=$(echo '${call}' | node ${path.join(DIST, 'agent-hook.cjs')} claude); echo "hook: $r"; ` +
    `while [ ! -e release-${id} ]; do sleep 0.05; done; ` +
    `case "$r" in *'"deny"'*) echo went on without it;; *) echo done > ${file};; esac`
  );
}

beforeAll(async () => {
  server = await BoardServer.start(
    'version: 1\nscheduler:\n  maxConcurrency: 4\nflows:\n' +
      '  shell: { runner: command, cap: 4 }\n  quick: { runner: command, cap: 4, askTimeout: 300ms }\n',
    {},
    // a command run gets a Node worker (and so the ask socket), as agent runs do
    { env: { RUNBOARD_COMMAND_WORKER: 'node' } },
  );
  reports = path.join(server.root, 'reports');
  mkdirSync(reports);
  reports = realpathSync(reports);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 1000 } })).newPage();
  await page.goto(server.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

const release = (id: string): void => writeFileSync(path.join(server.workspace, `release-${id}`), '');

describe('a live run that asks, on the board', () => {
  it('waits in Needs input, still running, with the folder and the three answers; Deny: it runs on', async () => {
    const file = path.join(reports, 'denied.txt');
    server.writeCard('deny.md', shellCard('Export the report', asking('deny', file)));
    await page.waitForSelector('li[data-card-id="deny"]');
    await server.api('POST', '/api/cards/deny/move', { to: 'queued', index: 0 });
    const card = page.locator(inColumn('deny', 'needs-input'));
    await card.waitFor({ timeout: 60_000 });
    await card.getByText(`needs: your permission to write in ${reports}`).waitFor();
    await card.getByText('● running').waitFor(); // its run goes on: locked
    await page.locator('[data-card-handle="deny"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Export the report' });
    const asks = ins.getByRole('region', { name: 'Permission asks' });
    await asks.getByText('The run waits for your answer').waitFor();
    await asks.getByText(`write in ${reports}`, { exact: true }).waitFor();
    await asks.getByText(`Write write ${file}`, { exact: false }).waitFor();
    await asks.getByText(/Allow once .* this run only|Allow once .* that run only/).waitFor();
    await asks.getByText(`adds ${reports} to flow shell's sandbox.writable`, { exact: false }).waitFor();
    await asks.getByText('Deny tells the agent no', { exact: false }).waitFor();
    await ins.getByRole('button', { name: 'Cancel run' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'board-live-ask-1440.png'));

    await asks
      .getByRole('group', { name: `Answer: write in ${reports}` })
      .getByRole('button', { name: 'Deny' })
      .click();
    // the tool got the denial; the run goes on (Running until the test lets it finish)
    // (a wait that times out prints what the board showed: one run in five under load missed this)
    await waitUntil(
      'the card back in Running after Deny',
      async () => (await page.locator(inColumn('deny', 'running')).count()) === 1,
      30_000,
    );
    await waitUntil('the ask gone', async () => (await asks.count()) === 0);
    await ins
      .getByRole('region', { name: 'Asks at the tool call' })
      .getByText(`write in ${reports}: denied by you`)
      .waitFor();
    release('deny');
    await page.locator(inColumn('deny', 'done')).waitFor({ timeout: 30_000 });
    await page.keyboard.press('Escape');
  }, 120_000);

  it('Allow once: the file is written and the card is done', async () => {
    const file = path.join(reports, 'allowed.txt');
    server.writeCard('allow.md', shellCard('Save the export', asking('allow', file)));
    release('allow'); // only the ask holds this run
    await page.waitForSelector('li[data-card-id="allow"]');
    await server.api('POST', '/api/cards/allow/move', { to: 'queued', index: 0 });
    await page.locator(inColumn('allow', 'needs-input')).waitFor({ timeout: 60_000 });
    await page.locator('[data-card-handle="allow"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Save the export' });
    await ins
      .getByRole('group', { name: `Answer: write in ${reports}` })
      .getByRole('button', { name: 'Allow once' })
      .click();
    await page.locator(inColumn('allow', 'done')).waitFor({ timeout: 60_000 });
    expect(readFileSync(file, 'utf8')).toBe('done\n');
    await page.keyboard.press('Escape');
  }, 120_000);

  it("no answer within the flow's askTimeout is a denial, shown in the card's log", async () => {
    const file = path.join(reports, 'late.txt');
    server.writeCard(
      'late.md',
      shellCard('Late answer', asking('late', file)).replace('flow: shell', 'flow: quick'),
    );
    release('late');
    await page.waitForSelector('li[data-card-id="late"]');
    await server.api('POST', '/api/cards/late/move', { to: 'queued', index: 0 });
    await page.locator(inColumn('late', 'done')).waitFor({ timeout: 60_000 });
    await page.locator('[data-card-handle="late"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Late answer' });
    await ins
      .getByRole('region', { name: 'Asks at the tool call' })
      .getByText(`write in ${reports}: denied: no answer within the time limit`)
      .waitFor();
    // the jail refused the write the person never allowed
    expect(existsSync(file)).toBe(false);
  }, 120_000);
});
