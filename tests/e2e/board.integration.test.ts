/**
 * The board end to end: Debian's Chromium (playwright-core) against a real `runboard serve`, its real
 * supervisor and real runs. One browser and one server for the whole file, to keep it fast.
 * Screenshots land in test-results/ (look at them).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLUMNS } from '../../host/src/shared/board-types.ts';
import {
  ARTIFACTS,
  BoardServer,
  dragCard,
  keyboardMove,
  launchBrowser,
  sleep,
  waitUntil,
} from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `# e2e board
version: 1
scheduler:
  maxConcurrency: 4 # all flows together
flows:
  # quick shell commands
  shell:
    runner: command
    cap: 2 # runs of this flow at once
  slow:
    runner: command
    cap: 2
`;
const card = (title: string, flow: string, command: string, extra = ''): string =>
  `---\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n${extra}---\n# Task\n${title}.\n`;

let server: BoardServer;
let browser: Browser;
let page: Page;

const cardSel = (id: string, column?: string): string =>
  column ? `ul.cards[data-column="${column}"] li[data-card-id="${id}"]` : `li[data-card-id="${id}"]`;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  server = await BoardServer.start(CONFIG, {
    'quick.md': card(
      'Say hello',
      'shell',
      "echo hello-from-the-board; printf '\\033[32mgreen line\\033[0m\\n'; for i in 1 2 3; do echo line $i; done",
    ),
    'long.md': card('Count slowly', 'shell', 'for i in $(seq 1 600); do echo "tick $i"; sleep 0.1; done'),
    'lines.md': card('Many lines', 'shell', "seq 1 100000 | sed 's/^/log line /'"),
    'slow-a.md': card('Slow A', 'slow', 'sleep 2.5'),
    'slow-b.md': card('Slow B', 'slow', 'sleep 2.5'),
  });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  // Every line each run stream delivers, kept in the page (observation only: the app is unchanged), so a
  // test can check the whole of a long output without scrolling the virtualised log through it.
  await page.addInitScript(() => {
    const seen: Record<string, string[]> = {};
    (window as unknown as { streamedLines: typeof seen }).streamedLines = seen;
    const Real = window.EventSource;
    window.EventSource = class extends Real {
      constructor(url: string | URL, init?: EventSourceInit) {
        super(url, init);
        const run = /\/api\/runs\/([^/]+)\/stream/.exec(String(url))?.[1];
        if (!run) return;
        const lines = (seen[run] ??= []);
        this.addEventListener('message', (e: MessageEvent<string>) => {
          const m = JSON.parse(e.data) as { type: string; stream?: string; lines?: string[] };
          if (m.type === 'lines' && m.stream === 'stdout') lines.push(...m.lines!);
        });
      }
    };
  });
  await page.goto(server.url);
  await page.waitForSelector(cardSel('quick', 'backlog'));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('the board in a browser', () => {
  it('rejects requests without the token or with a foreign Host/Origin', async () => {
    expect((await fetch(`${server.base}/api/board`)).status).toBe(401);
    expect((await fetch(`${server.base}/?token=wrong`)).status).toBe(401);
    const foreign = await fetch(`${server.base}/api/board`, {
      headers: { authorization: `Bearer ${server.token}`, origin: 'http://evil.example' },
    });
    expect(foreign.status).toBe(403);
  });

  it('drag a card to Queued: it goes Running → Done, with its logs in the inspector', async () => {
    await dragCard(page, 'quick', 'queued');
    await page.waitForSelector(cardSel('quick', 'done'), { timeout: 20_000 });
    const file = readFileSync(server.cardFile('quick.md'), 'utf8');
    expect(file).toMatch(/status: done/);
    expect(file).toMatch(/lastRun: \d{8}-\d{6}-[0-9a-f]{6}/);
    await page.click(cardSel('quick'));
    const log = page.getByRole('log', { name: 'Run output' });
    await log.getByText('hello-from-the-board').waitFor();
    await log.getByText('line 3').waitFor();
    // ANSI colours become classes
    expect(await page.locator('.log-line .ansi-green-fg').first().textContent()).toBe('green line');
    await page.locator('.metrics .status', { hasText: 'succeeded' }).waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'board-inspector-done.png'));
    // with the inspector open no column is under it: the board (which scrolls sideways) ends where the
    // inspector begins, and its columns keep a readable width instead of being squeezed (issue 31)
    const inspector = (await page.locator('aside.inspector').boundingBox())!;
    const board = (await page.locator('.board').boundingBox())!;
    expect(board.x + board.width).toBeLessThanOrEqual(inspector.x + 1);
    for (const col of COLUMNS) {
      const box = (await page.locator(`ul.cards[data-column="${col}"]`).boundingBox())!;
      expect(box.width, col).toBeGreaterThanOrEqual(150);
    }
  });

  it(
    'a 100k-line run streams live into the open inspector, every line in order',
    { timeout: 600_000 },
    async () => {
      // the inspector is open before the run starts, so every line comes through the live stream
      await page.click(cardSel('lines'));
      await page.getByRole('complementary', { name: 'Inspector: Many lines' }).waitFor();
      await page.getByText('No runs yet').waitFor();
      await server.api('POST', '/api/cards/lines/move', { to: 'queued', index: 0 });
      const log = page.getByRole('log', { name: 'Run output' });
      // What is checked is that every line arrives, in order, none lost or doubled, however long the
      // machine takes (the throughput is a benchmark's: host/bench): waits on the run's end and on the
      // view's count, bounded only by the test's own limit.
      await page.locator(`${cardSel('lines', 'done')}`).waitFor({ timeout: 0 });
      await page.locator('.log-head', { hasText: '100,000 lines' }).waitFor({ timeout: 0 });
      await log.getByText('log line 100000', { exact: true }).waitFor();
      const runId = (await server.card('lines'))!.runId!;
      const streamed = await page.evaluate((id) => {
        const lines =
          (window as unknown as { streamedLines: Record<string, string[]> }).streamedLines[id] ?? [];
        const wrong = lines.findIndex((l, i) => l !== `log line ${i + 1}`);
        return { count: lines.length, firstWrong: wrong < 0 ? null : `#${wrong + 1}: ${lines[wrong]}` };
      }, runId);
      expect(streamed).toEqual({ count: 100_000, firstWrong: null });
      await savePicture(page, path.join(ARTIFACTS, 'inspector-100k-lines.png'));
      // scrolling up stops following; ticking follow goes back to the end
      const follow = page.getByRole('checkbox', { name: 'follow' });
      expect(await follow.isChecked()).toBe(true);
      await log.hover();
      await page.mouse.wheel(0, -3000);
      await waitUntil('follow off', async () => !(await follow.isChecked()), 5000);
      await log.getByText('log line 100000', { exact: true }).waitFor({ state: 'detached' });
      await follow.check();
      await log.getByText('log line 100000', { exact: true }).waitFor();
    },
  );

  it('keyboard drag queues a long run; Cancel stops it within 2 s', async () => {
    await page.locator(`${cardSel('long')} [data-card-handle]`).focus();
    await keyboardMove(page, ['ArrowRight'], 'queued');
    await page.waitForSelector(cardSel('long', 'running'), { timeout: 15_000 });
    // Enter opens a card in the inspector
    await page.locator(`${cardSel('long')} [data-card-handle]`).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('complementary', { name: 'Inspector: Count slowly' }).waitFor();
    await page.getByRole('log', { name: 'Run output' }).getByText('tick 5', { exact: true }).waitFor();
    // the running card is locked: a drag out of Running does nothing
    await dragCard(page, 'long', 'backlog', true);
    await sleep(300); // a move it made would have shown by now (nothing to wait for when there is none)
    expect(await page.locator(cardSel('long', 'running')).count()).toBe(1);
    await savePicture(page, path.join(ARTIFACTS, 'board-running.png'));
    const t0 = Date.now();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await waitUntil(
      'the run to be cancelled',
      async () => (await server.card('long'))?.column === 'backlog',
      5000,
    );
    const stoppedIn = Date.now() - t0;
    expect(stoppedIn).toBeLessThan(2000);
    await page.waitForSelector(cardSel('long', 'backlog'));
    await page.locator('.metrics .status', { hasText: 'cancelled' }).waitFor();
  });

  it('lowering a flow cap in Settings rewrites config.yaml (comments kept) and the scheduler honours it', async () => {
    await page.getByRole('button', { name: 'Settings' }).click();
    const cap = page.getByLabel('Cap of flow slow');
    await cap.fill('1');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved to config.yaml').waitFor();
    const cfg = readFileSync(path.join(server.project, 'config.yaml'), 'utf8');
    expect(cfg).toMatch(/slow:\n {4}runner: command\n {4}cap: 1\n/);
    expect(cfg).toContain('# quick shell commands');
    expect(cfg).toContain('cap: 2 # runs of this flow at once');
    await savePicture(page, path.join(ARTIFACTS, 'settings.png'));
    await page.getByRole('button', { name: 'Close settings' }).click();

    await server.api('POST', '/api/cards/slow-a/move', { to: 'queued', index: 0 });
    await server.api('POST', '/api/cards/slow-b/move', { to: 'queued', index: 1 });
    let maxRunning = 0;
    let sawWaiting = '';
    await waitUntil(
      'both slow cards done',
      async () => {
        const b = await server.board();
        const slow = b.cards.filter((c) => c.flow === 'slow');
        maxRunning = Math.max(maxRunning, slow.filter((c) => c.column === 'running').length);
        sawWaiting ||= slow.find((c) => c.waiting)?.waiting ?? '';
        return slow.every((c) => c.column === 'done');
      },
      20_000,
    );
    expect(maxRunning).toBe(1);
    expect(sawWaiting).toMatch(/at its cap \(1\/1\)/);
  });

  it('an external edit to a card file appears on the board; status: queued in the file waits for one Confirm', async () => {
    server.writeCard('external.md', card('Written outside', 'shell', 'echo external'));
    await page.waitForSelector(cardSel('external', 'backlog'));
    await page.locator(cardSel('external')).getByText('Written outside').waitFor();
    const text = readFileSync(server.cardFile('external.md'), 'utf8');
    expect(text).toMatch(/id: external\nstatus: backlog/);
    server.writeCard('external.md', text.replace('Written outside', 'Renamed outside'));
    await page.locator(cardSel('external')).getByText('Renamed outside').waitFor();
    // Written outside the board (an editor, a script or a run), a queued card waits for a person's
    // confirm (issue 27); the banner's Confirm, from the keyboard, runs it.
    server.writeCard('external.md', text.replace('status: backlog', 'status: queued'));
    const confirm = page.getByRole('button', { name: 'Confirm Written outside' });
    await confirm.waitFor();
    expect(await page.locator(cardSel('external', 'queued')).textContent()).toMatch(
      /changed outside the board/,
    );
    await savePicture(page, path.join(ARTIFACTS, 'board-confirm.png'));
    await confirm.focus();
    await page.keyboard.press('Enter');
    await page.waitForSelector(cardSel('external', 'done'), { timeout: 20_000 });
    expect(await confirm.count()).toBe(0);
  });

  it('a broken card shows its parse error; the rest of the board works', async () => {
    server.writeCard('broken.md', '---\ntitle: [oops\nflow: shell\n---\n');
    const broken = page.locator('li.card.broken');
    await broken.waitFor();
    // its button's name (from its content) says which file and what is wrong
    expect(await broken.locator('[data-card-handle]').textContent()).toMatch(
      /cards\/broken\.md.*front matter is not valid YAML.*broken card in Backlog/s,
    );
    expect(await page.locator(cardSel('quick', 'done')).count()).toBe(1);
    await page.getByRole('button', { name: 'Close inspector' }).click();
    await savePicture(page, path.join(ARTIFACTS, 'board.png'));
  });
});
