/**
 * Live asks on the board, session 14's review leftovers, in Debian's Chromium against a real
 * `runboard serve` (its supervisor, jails and workers; the scripted model server is the one double):
 * - the header counts what the caps count: a run that waits for the person holds its slot, so a card
 *   in Needs input whose run waits is "1/4 running · 1 waiting for you", not "0/4 running";
 * - "Allow always" says on its button and beside it that it is the flow's (every run of the flow);
 * - a card's attempts ask too: each attempt's run that waits at its tool call shows on the card with
 *   the attempt it belongs to, every one at once in the inspector (the header counts each; what each
 *   answer does said once for the card, not once per attempt), answered
 *   from the board (Deny) and from `runboard answer` (Allow), and each attempt's run goes on with its
 *   answer; then the workspace-copy panel of a non-git attempt.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer, type ScriptedTurn } from '../fixtures/model-server/server.ts';
import { desktopFlow, exec, NO_VERDICT_JUDGE } from '../fixtures/attempts-board.ts';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, DIST, launchBrowser, shellCard, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const run = promisify(execFile);

const CONFIG = `version: 1
scheduler: { maxConcurrency: 4 }
flows:
  shell: { runner: command, cap: 4 }
${desktopFlow('desktop', { cap: 2, attempts: 2, timeout: '3m', maxSteps: 4 })}`;

/**
 * The project folder's name: long, as real projects' paths are (the header's path is capped at 30vw,
 * 307 px at 1024), so the header at 1024 is short of room whatever the test root's random name.
 */
const PROJECT = 'quarterly-reports-and-exports-for-the-board';

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;
let outside: string;

const inColumn = (id: string, column: string): string =>
  `ul.cards[data-column="${column}"] li[data-card-id="${id}"]`;
const header = (): Promise<string> => page.getByLabel('Runs going').innerText();

/** The header's "N waiting for you" lies whole inside the run count's box, and that inside the header. */
async function waitingShownWhole(width: number): Promise<void> {
  const box = (sel: string): Promise<{ left: number; right: number; top: number; bottom: number }> =>
    page.locator(sel).evaluate((e) => {
      const { left, right, top, bottom } = e.getBoundingClientRect();
      return { left, right, top, bottom };
    });
  const [text, slots, bar] = [
    await box('header.topbar .waiting-you'),
    await box('header.topbar .slots'),
    await box('header.topbar'),
  ];
  const inside = (a: typeof text, b: typeof text): boolean =>
    a.left >= b.left - 0.5 && a.right <= b.right + 0.5 && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  expect(
    { width, waitingInSlots: inside(text, slots), slotsInHeader: inside(slots, bar) },
    `at ${width} px: waiting ${JSON.stringify(text)}, slots ${JSON.stringify(slots)}, header ${JSON.stringify(bar)}`,
  ).toEqual({ width, waitingInSlots: true, slotsInHeader: true });
}

/** The first busy flow's chip ("shell 1/4") lies whole inside the run count's box: not wrapped away. */
async function chipShown(width: number): Promise<void> {
  const got = await page.locator('header.topbar .slots').evaluate((slots) => {
    const chip = slots.querySelector('.flowcap');
    const s = slots.getBoundingClientRect();
    const c = chip?.getBoundingClientRect();
    return {
      chip: chip?.textContent,
      inside: !!c && c.left >= s.left - 0.5 && c.right <= s.right + 0.5 && c.bottom <= s.bottom + 0.5,
    };
  });
  expect(got, `the header at ${width} px`).toEqual({ chip: 'shell 1/4', inside: true });
}

/**
 * The inspector's line under its title (flow · file · column, and its button) breaks between its
 * parts, never inside one ("needs-/input", "Cancel/run" in a 340 px inspector), and stays inside it;
 * so does the run's heading's "Export run" (it broke into "Export/run"); nothing in the inspector is
 * wider than it.
 */
async function metaLineWhole(width: number): Promise<void> {
  const got = await page.locator('.inspector .inspector-meta').evaluate((meta) => {
    const right = meta.getBoundingClientRect().right;
    const parts = [...meta.children] as HTMLElement[];
    const lines = (e: HTMLElement): number => {
      const r = document.createRange();
      r.selectNodeContents(e);
      return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size;
    };
    const inspector = meta.closest('.inspector')!;
    const exportRun = inspector.querySelector<HTMLElement>('section.run h3 > button');
    return {
      broken: [...parts, ...(exportRun ? [exportRun] : [])]
        .filter((e) => lines(e) > 1)
        .map((e) => e.innerText),
      outside: parts.filter((e) => e.getBoundingClientRect().right > right + 0.5).map((e) => e.innerText),
      // nothing in the inspector sticks out sideways (a command's long progress line did at 1024)
      sideways: inspector.scrollWidth - inspector.clientWidth,
    };
  });
  expect(got, `the inspector at ${width} px`).toEqual({ broken: [], outside: [], sideways: 0 });
}

/** A card whose command asks as Claude Code's PreToolUse hook does (the real hook) to write `file`, then waits for `release`. */
function askingCard(file: string): string {
  const call = JSON.stringify({ tool_name: 'Write', tool_input: { file_path: file, content: 'x' } });
  const command =
    `r=$(echo '${call}' | node ${path.join(DIST, 'agent-hook.cjs')} claude); echo "hook: $r"; ` +
    `while [ ! -e release ]; do sleep 0.05; done`;
  return shellCard('Export the report', command);
}

beforeAll(async () => {
  model = await startModelServer();
  const withModel = BoardServer.withModel('openai', model.url);
  // the cards are there before the board starts (no wait on its watcher)
  server = await BoardServer.start(
    CONFIG,
    {
      'attempts.md': `---\ntitle: ATT-ASKS\nflow: desktop\nworkspace: ./workspace\n---\n# Task\nATT-ASKS: read the notes, write result.txt.\n`,
    },
    {
      // a command run gets a Node worker (and so the ask socket), as agent runs do
      env: { ...withModel.env, RUNBOARD_COMMAND_WORKER: 'node' },
      beforeServe: (paths) => {
        withModel.beforeServe(paths);
        // a folder beside the workspace, outside every run's sandbox: what the runs ask for
        const root = path.dirname(paths.root);
        outside = path.join(root, 'outside');
        mkdirSync(outside);
        outside = realpathSync(outside);
        writeFileSync(path.join(outside, 'notes.md'), 'the-notes-beside-the-workspace\n');
        writeFileSync(
          path.join(root, PROJECT, 'cards', 'header.md'),
          askingCard(path.join(outside, 'report.txt')),
        );
      },
      projectName: PROJECT,
    },
  );
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 1000 } })).newPage();
  await page.goto(server.url);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe('live asks on the board: the header, Allow always, attempts', () => {
  it('the header counts a run that waits for you as running, and says it waits; Allow always names the flow', async () => {
    await page.waitForSelector('li[data-card-id="header"]');
    await server.api('POST', '/api/cards/header/move', { to: 'queued', index: 0 });
    await page.locator(inColumn('header', 'needs-input')).waitFor({ timeout: 60_000 });
    // its run holds a slot of the caps while it waits (its file says running): counted, and said
    await waitUntil('the header to count the waiting run', async () =>
      /^1\/4 running · 1 waiting for you/.test(await header()),
    );
    expect((await server.board()).running).toBe(1);

    await page.locator('[data-card-handle="header"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Export the report' });
    const asks = ins.getByRole('region', { name: 'Permission asks' });
    const group = asks.getByRole('group', { name: `Answer: write in ${outside}` });
    // the button says whose it is; beside it, that every run of the flow gets it, not this card only
    await group.getByRole('button', { name: 'Allow always for flow shell' }).waitFor();
    await asks
      .getByText(`Allow always gives every run of flow shell from now, this card's and every other card's`, {
        exact: false,
      })
      .waitFor();
    const runId = (await server.card('header'))!.runId!;
    await asks.getByText(`runboard answer ${runId} a1 allow|deny`).waitFor();
    // its run's section too: metaLineWhole checks its heading's button
    await ins.getByRole('region', { name: `Run ${runId}` }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await chipShown(1440);
    await savePicture(page, path.join(ARTIFACTS, 'board-header-waiting-1440.png'));
    // narrower, the project's path and the flows' chips give way: "1 waiting for you" is never cut;
    // at 1024 the path leaves room for the count and one chip (it hid "shell 1/4" there)
    for (const width of [1024, 800]) {
      await page.setViewportSize({ width, height: 1000 });
      await waitingShownWhole(width);
      if (width === 1024) await chipShown(width);
      await metaLineWhole(width);
      await savePicture(page, path.join(ARTIFACTS, `board-header-waiting-${width}.png`));
    }
    await page.setViewportSize({ width: 1440, height: 1000 });

    await group.getByRole('button', { name: 'Deny' }).click();
    await page.locator(inColumn('header', 'running')).waitFor({ timeout: 30_000 });
    await waitUntil('the header without a waiting run', async () =>
      (await header()).startsWith('1/4 running'),
    );
    expect(await header()).not.toContain('waiting for you');
    writeFileSync(path.join(server.workspace, 'release'), '');
    await page.locator(inColumn('header', 'done')).waitFor({ timeout: 30_000 });
    await waitUntil('the header at 0/4', async () => (await header()).startsWith('0/4 running'));
    await page.keyboard.press('Escape');
  }, 120_000);

  it("each attempt's ask shows with its attempt; one answered on the board, one by runboard answer", async () => {
    const notes = path.join(outside, 'notes.md');
    const variant = (n: number): ScriptedTurn[] => [
      { toolCalls: [{ name: 'read_document', arguments: { path: notes } }] },
      exec(`echo attempt-${n} > result-${n}.txt`),
      { text: JSON.stringify({ status: 'SUCCESS', summary: `wrote ${n}`, error: '', questions: [] }) },
    ];
    model.setEpisodes([
      // the judge gives no verdict: the attempts' copies stay for the person (the panel below)
      NO_VERDICT_JUDGE,
      { name: 'ask', match: 'ATT-ASKS', turns: [], variants: [variant(1), variant(2)] },
    ]);
    await page.waitForSelector('li[data-card-id="attempts"]');
    await server.api('POST', '/api/cards/attempts/move', { to: 'queued', index: 0 });
    const card = page.locator(inColumn('attempts', 'needs-input'));
    await card.waitFor({ timeout: 120_000 });
    await card
      .getByText(new RegExp(`needs: your permission to read ${outside} \\(attempt [12] of 2\\)`))
      .waitFor();
    await card.getByText('● running').waitFor();
    await waitUntil(
      'both attempts wait, counted in the header',
      async () => /^2\/4 running · 2 waiting for you/.test(await header()),
      120_000,
    );

    await page.locator('[data-card-handle="attempts"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: ATT-ASKS' });
    const asks = ins.getByRole('region', { name: 'Permission asks' });
    // every attempt that waits shows its ask at once (the header counts both), each with its
    // attempt and its own run, each answerable
    const attempt = (n: number) =>
      asks.getByRole('group', { name: `Attempt ${n} of 2 waits for your answer` });
    await attempt(1).waitFor();
    await attempt(2).waitFor();
    const cli = async (n: number): Promise<string> =>
      /runboard answer (\S+) a1/.exec(await attempt(n).locator('.ask-cli').innerText())![1]!;
    const firstRun = await cli(1);
    const secondRun = await cli(2);
    expect(secondRun).not.toBe(firstRun);
    // what each answer does is said once for the card, below both asks (they ask the same), and each
    // attempt keeps its own ask and buttons
    const answerNotes = asks.locator('.ask-note');
    await answerNotes
      .getByText("Allow once lets this attempt's run read (not write)", { exact: false })
      .waitFor();
    expect(await answerNotes.count()).toBe(1);
    for (const n of [1, 2])
      await attempt(n)
        .getByRole('group', { name: `Answer: read ${outside}` })
        .getByRole('button', { name: 'Allow once' })
        .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'board-attempt-ask-1440.png'));
    await page.setViewportSize({ width: 800, height: 1000 });
    await metaLineWhole(800);
    await savePicture(page, path.join(ARTIFACTS, 'board-attempt-ask-800.png'));
    await page.setViewportSize({ width: 1440, height: 1000 });
    await attempt(1)
      .getByRole('group', { name: `Answer: read ${outside}` })
      .getByRole('button', { name: 'Deny' })
      .click();

    // attempt 1's ask is gone; attempt 2's still shows, and is answered from a terminal
    await attempt(1).waitFor({ state: 'detached' });
    expect(await cli(2)).toBe(secondRun);
    const answered = await run(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), 'answer', secondRun, 'a1', 'allow'],
      {
        env: { ...process.env, RUNBOARD_HOME: server.home },
      },
    );
    expect(answered.stdout).toBe(`allowed: run ${secondRun}, a1\n`);

    // both attempts went on with their answer; the judge gives no verdict, so the card fails with the copies kept
    await page.locator(inColumn('attempts', 'failed')).waitFor({ timeout: 150_000 });
    await waitUntil('the header at 0/4', async () => (await header()).startsWith('0/4 running'));
    // one attempt's model was told the denial, the other's read the notes in the same run
    const said = model.requests.filter((r) => r.episode === 'ask').map((r) => JSON.stringify(r.body));
    expect(said.some((b) => b.includes('the person denied read'))).toBe(true);
    expect(said.some((b) => b.includes('the-notes-beside-the-workspace'))).toBe(true);

    // the workspace-copy panel of a non-git attempt, as a person sees it after the attempts
    await ins
      .getByRole('region', { name: 'Attempts' })
      .getByRole('button', { name: /^Attempt 1/ })
      .click();
    const copy = ins.getByRole('region', { name: 'Workspace copy' });
    await copy.getByText(`Copy of ${server.workspace}`).waitFor();
    await copy.getByRole('button', { name: /^Keep/ }).waitFor();
    await copy.scrollIntoViewIfNeeded();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'inspector-workspace-copy-1440.png'));
    await savePicture(copy, path.join(ARTIFACTS, 'inspector-workspace-copy.png'));
    await copy.getByRole('button', { name: /^Keep/ }).click();
    await copy.getByText(/^kept: 1 path applied \(result-\d\.txt\)$/).waitFor();
    await savePicture(copy, path.join(ARTIFACTS, 'inspector-workspace-copy-kept.png'));
    const kept = readdirSync(server.workspace).filter((f) => /^result-\d\.txt$/.test(f));
    expect(kept).toHaveLength(1);
    expect(readFileSync(path.join(server.workspace, kept[0]!), 'utf8')).toMatch(/^attempt-\d\n$/);
  }, 300_000);
});
