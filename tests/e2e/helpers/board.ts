/**
 * End-to-end helpers: a real `runboard serve` (bundled dist/) on a private RUNBOARD_HOME and a temp
 * project, its auto-started supervisor, and one Debian Chromium driven by playwright-core.
 * (Process checks are shared with tests/helpers/harness.ts.)
 */
import { spawn, execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths, type StatePaths } from '@runboard/supervisor/paths';
import { writeProviderKey } from '../../../supervisor/src/common/secrets.ts';
import { COLUMN_TITLES, type BoardView, type Column } from '../../../host/src/shared/board-types.ts';

import { CHROMIUM_FLAGS } from '../../helpers/chromium.ts';
import { commandLine, processesMentioning } from '../../helpers/harness.ts';
import { git } from '../../agents/agent-harness.ts';

export const REPO = path.resolve(import.meta.dirname, '..', '..', '..');
export const DIST = path.join(REPO, 'dist');
export const ARTIFACTS = path.join(REPO, 'test-results');

/** Headless Chromium's command line (tests/helpers/chromium.ts has what every Chromium of ours takes). */
export const CHROMIUM_ARGS = ['--headless', ...CHROMIUM_FLAGS];

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function waitUntil<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${await diagnoseBoards()}`);
    await sleep(50);
  }
}

/** The boards of this test file that are up: a wait that timed out says what each showed then. */
const liveBoards = new Set<BoardServer>();

/** What every live board shows (cards, why they wait, the supervisor's runs and log's end), or ''. */
async function diagnoseBoards(): Promise<string> {
  if (liveBoards.size === 0) return '';
  const parts = await Promise.all(
    [...liveBoards].map((s) =>
      Promise.race([s.diagnose(), sleep(3000).then(() => `${s.root}: no answer to the diagnosis in 3 s`)]),
    ),
  );
  return `\n--- what the boards showed then ---\n${parts.join('\n')}`;
}

/**
 * What the page shows, for a failed test's message: each open dialog's name, its fields' values, its
 * buttons' names and alerts, and where the focus is (a CI failure said only which click timed out).
 */
export async function pageState(p: Page): Promise<string> {
  try {
    const dialogs = await p.getByRole('dialog').evaluateAll((ds) =>
      ds.map((d) => ({
        dialog: d.getAttribute('aria-label') ?? d.getAttribute('aria-labelledby') ?? '',
        fields: [...d.querySelectorAll('input, textarea, select')].map(
          (e) => `${e.id}=${JSON.stringify((e as unknown as { value: string }).value)}`,
        ),
        buttons: [...d.querySelectorAll('button')].map((b) => (b.textContent ?? '').trim()).slice(0, 30),
        alerts: [...d.querySelectorAll('[role="alert"]')].map((a) => (a.textContent ?? '').trim()),
      })),
    );
    const focus = await p.evaluate(() => {
      // (this file is type-checked without the DOM's types: the page's document, by its shape)
      type El = { tagName: string; id: string; className: string; textContent: string | null };
      const a = (globalThis as unknown as { document: { activeElement: El | null } }).document.activeElement;
      return a
        ? `${a.tagName.toLowerCase()}#${a.id}.${a.className} ${(a.textContent ?? '').trim().slice(0, 60)}`
        : '';
    });
    return JSON.stringify({ dialogs, focus }, null, 1);
  } catch (err) {
    return `(the page could not be read: ${(err as Error).message})`;
  }
}

/** Prints what the page shows when a test of the file fails (call at the top of a describe). */
export function explainFailures(page: () => Page | undefined): void {
  beforeEach((ctx) => {
    ctx.onTestFailed(async () => {
      const p = page();
      if (p)
        console.error(`--- what the page showed when "${ctx.task.name}" failed ---\n${await pageState(p)}`);
    });
  });
}

/** Waits until the drag's live region (what a screen reader is told) matches `said`. */
async function announced(p: Page, said: RegExp, timeout = 10_000): Promise<void> {
  await p
    .locator('[id^="DndLiveRegion"]')
    .filter({ hasText: said })
    .first()
    .waitFor({ state: 'attached', timeout });
}

/** What the drag announces when a card is over column `to` (the column itself, or a card in it). */
const overColumn = (to: Column): RegExp => new RegExp(`is over (the )?${COLUMN_TITLES[to]}\\b`);

/**
 * Drags the card `id` by mouse into the column `toColumn` (near its end), as a person would, and
 * lets go once the board says the card is over it (`locked`: a card that cannot be picked up; the
 * same gestures, nothing waited for).
 */
export async function dragCard(p: Page, id: string, toColumn: Column, locked = false): Promise<void> {
  const from = await p.locator(`li[data-card-id="${id}"]`).boundingBox();
  const to = await p.locator(`ul.cards[data-column="${toColumn}"]`).boundingBox();
  if (!from || !to) throw new Error('nothing to drag');
  await p.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await p.mouse.down();
  await p.mouse.move(from.x + from.width / 2 + 10, from.y + from.height / 2, { steps: 3 });
  await p.mouse.move(to.x + to.width / 2, to.y + 40, { steps: 12 });
  if (!locked) await announced(p, overColumn(toColumn)); // the drop lands where the board says
  await p.mouse.up();
}

/**
 * Moves the focused card by keyboard, as a person would: Space picks it up, each arrow is pressed
 * once the board is listening for it, and Space drops it once the board says it is over `to`.
 */
export async function keyboardMove(p: Page, arrows: string[], to: Column): Promise<void> {
  await p.keyboard.press('Space');
  // (the pick-up is said, then at once where the card is over: the region keeps only the last; a
  // drag before this one ended saying where it was dropped or that it was cancelled)
  await announced(p, /Picked up card|is over/);
  // the keyboard sensor starts listening for arrows on a timer of 0 after the pick-up: one of ours,
  // set later, runs after it
  await p.evaluate(() => new Promise((r) => setTimeout(r, 0)));
  for (const key of arrows) await p.keyboard.press(key);
  await announced(p, overColumn(to));
  await p.keyboard.press('Space');
}

/** A project config with one flow, `shell` (the command runner, cap 4); `extra` goes under `scheduler:`. */
export function shellConfig(extra = '', maxConcurrency = 4): string {
  return `version: 1\nscheduler:\n  maxConcurrency: ${maxConcurrency}\n${extra}flows:\n  shell: { runner: command, cap: 4 }\n`;
}

/** A card of the `shell` flow running `command` in the project's workspace; `extra` front matter lines. */
export function shellCard(title: string, command: string, extra = ''): string {
  return `---\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\n${extra}---\n# Task\n`;
}

/** `runboard serve --project <project>` started; resolves with its URL once it prints it. */
export async function spawnServe(
  project: string,
  env: NodeJS.ProcessEnv,
): Promise<{ proc: ChildProcess; url: string; token: string; base: string; stderr: () => string }> {
  const proc = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), 'serve', '--project', project], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.once('exit', (code) => reject(new Error(`runboard serve exited (${code}): ${err}`)));
  });
  const u = new URL(url);
  return { proc, url, token: u.searchParams.get('token')!, base: u.origin, stderr: () => err };
}

/** A board method over HTTP, with serve's token as the page sends it; a refusal throws with its status. */
export async function boardCall<T>(
  serve: { base: string; token: string },
  method: string,
  p: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(serve.base + p, {
    method,
    headers: { authorization: `Bearer ${serve.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const data = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${data.error}`);
  return data;
}

export class BoardServer {
  proc!: ChildProcess;
  url!: string;
  token!: string;
  base!: string;
  /** What serve has written to stderr so far. */
  stderr: () => string = () => '';
  readonly project: string;
  readonly home: string;
  readonly workspace: string;
  private readonly env: NodeJS.ProcessEnv;

  private constructor(
    readonly root: string,
    extraEnv: NodeJS.ProcessEnv = {},
    projectName = 'project',
  ) {
    this.project = path.join(root, projectName);
    this.home = path.join(root, 'home');
    this.workspace = path.join(this.project, 'workspace');
    mkdirSync(path.join(this.project, 'cards'), { recursive: true });
    mkdirSync(this.workspace, { recursive: true });
    this.env = { ...process.env, ...extraEnv, RUNBOARD_HOME: this.home };
    delete this.env.NODE_EXTRA_CA_CERTS;
  }

  /**
   * BoardServer.start options for runs that reach `provider` at the scripted model server `url`: the
   * supervisor's base URL for it, and a key stored as a user stores it.
   */
  static withModel(
    provider: 'openai' | 'anthropic',
    url: string,
    /** More to do once the state root exists (e.g. make the workspace a git repository). */
    then?: (paths: StatePaths) => void,
  ): { env: NodeJS.ProcessEnv; beforeServe: (paths: StatePaths) => void } {
    return {
      env: { [`RUNBOARD_PROVIDER_${provider.toUpperCase()}_URL`]: url },
      beforeServe: (paths) => {
        writeProviderKey(paths, provider, `sk-test-${provider}-0123456789`);
        then?.(paths);
      },
    };
  }

  /** A project with `config` and `cards` (file name → text), its workspace granted, served. */
  static async start(
    config: string,
    cards: Record<string, string>,
    /**
     * Extra environment of serve and its supervisor; `beforeServe` runs once the state root exists;
     * `projectName`: the project folder's name in the test's root (`project`).
     */
    opts: { env?: NodeJS.ProcessEnv; beforeServe?: (paths: StatePaths) => void; projectName?: string } = {},
  ): Promise<BoardServer> {
    const s = new BoardServer(mkdtempSync(path.join(os.tmpdir(), 'rb-e2e-')), opts.env, opts.projectName);
    writeFileSync(path.join(s.project, 'config.yaml'), config);
    for (const [name, text] of Object.entries(cards)) s.writeCard(name, text);
    const paths = statePaths({ RUNBOARD_HOME: s.home });
    createGrant(paths, s.workspace);
    opts.beforeServe?.(paths);
    await s.startServe();
    return s;
  }

  async startServe(): Promise<void> {
    Object.assign(this, await spawnServe(this.project, this.env));
    liveBoards.add(this);
  }

  /** The board's cards (column, why waiting, last error), the supervisor's runs and its log's end. */
  async diagnose(): Promise<string> {
    const out: string[] = [`board ${this.root}:`];
    try {
      for (const c of (await this.board()).cards) {
        const x = c as unknown as Record<string, unknown>;
        out.push(
          `  card ${c.id}: ${c.column}` +
            ['runId', 'waiting', 'lastError', 'confirm', 'nextTryAt', 'locked']
              .filter((k) => x[k] !== undefined)
              .map((k) => ` ${k}=${JSON.stringify(x[k]).slice(0, 300)}`)
              .join(''),
        );
      }
    } catch (err) {
      out.push(`  board: ${(err as Error).message}`);
    }
    try {
      const runs = await this.supervisorRuns();
      out.push(`  supervisor runs: ${runs.map((r) => `${r.runId} ${r.status}`).join(', ') || 'none'}`);
    } catch (err) {
      out.push(`  supervisor runs: ${(err as Error).message.split('\n')[0]}`);
    }
    try {
      const log = readFileSync(
        path.join(statePaths({ RUNBOARD_HOME: this.home }).supervisorDir, 'supervisor.log'),
        'utf8',
      );
      out.push(
        '  supervisor.log (end):',
        ...log
          .split('\n')
          .slice(-25)
          .map((l) => `    ${l.slice(0, 400)}`),
      );
    } catch (err) {
      out.push(`  supervisor.log: ${(err as Error).message}`);
    }
    out.push(`  serve stderr (end): ${this.stderr().slice(-1500)}`);
    return out.join('\n');
  }

  cardFile(name: string): string {
    return path.join(this.project, 'cards', name);
  }
  writeCard(name: string, text: string): void {
    writeFileSync(this.cardFile(name), text);
  }

  api<T>(method: string, p: string, body?: unknown): Promise<T> {
    return boardCall<T>(this, method, p, body);
  }
  board(): Promise<BoardView> {
    return this.api<BoardView>('GET', '/api/board');
  }
  async card(id: string) {
    return (await this.board()).cards.find((c) => c.id === id);
  }
  /**
   * A person's one click on a card written outside the board (it would run by itself: queued, or a
   * schedule): waits until the board shows it waiting for a confirm, then confirms it as shown.
   */
  async confirmCard(id: string): Promise<void> {
    const shown = await waitUntil(
      `card ${id} waiting for a confirm`,
      async () => (await this.card(id))?.confirm,
    );
    await this.api('POST', `/api/cards/${id}/confirm`, { digest: shown.digest });
  }

  /** The supervisor's runs as `runboard runs --json` prints them (works while serve is down). */
  async supervisorRuns(): Promise<{ runId: string; status: string }[]> {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [path.join(DIST, 'runboard.mjs'), 'runs', '--json'],
        { env: this.env },
        (err, stdout) => (err ? reject(err) : resolve(stdout)),
      ),
    );
    return out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { runId: string; status: string });
  }

  /** Stops serve and its supervisor; fails when a process of this root is left. */
  async stop(): Promise<void> {
    liveBoards.delete(this);
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      await exited;
    }
    try {
      execFileSync(process.execPath, [path.join(DIST, 'runboard.mjs'), 'supervisor', 'stop', '--force'], {
        env: this.env,
        stdio: 'ignore',
      });
    } catch {
      // none running
    }
    await waitUntil('no leftover processes', () => processesMentioning(this.root).length === 0, 8000).catch(
      () => {
        const left = processesMentioning(this.root);
        // what each was, read before it is killed (a bare pid said nothing in CI)
        const what = left.map((pid) => `${pid} (${commandLine(pid)})`).join(', ');
        for (const pid of left) process.kill(pid, 'SIGKILL');
        throw new Error(`processes left behind: ${what}`);
      },
    );
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** A page on the board with card `id`'s inspector open (the token first, then the card by its URL). */
/**
 * `beforeServe` (or `withModel`'s `then`) that makes the project's workspace a git repository: branch
 * main, one commit of a README.
 */
export function gitWorkspace(paths: StatePaths): void {
  const ws = path.join(path.dirname(paths.root), 'project', 'workspace');
  git(ws, 'init', '-q', '-b', 'main');
  writeFileSync(path.join(ws, 'README.md'), '# repo\n');
  git(ws, 'add', '-A');
  git(ws, 'commit', '-qm', 'initial');
}

/** Waits for card `id`'s run (not run `after`, an earlier one) to end in one of the final columns. */
export function cardRunEnded(server: BoardServer, id: string, after?: string) {
  return waitUntil(
    `card ${id} to end its run`,
    async () => {
      const c = await server.card(id);
      return c?.runId && c.runId !== after && ['done', 'failed', 'needs-input'].includes(c.column)
        ? c
        : undefined;
    },
    90_000,
  );
}

export async function openCard(
  server: BoardServer,
  browser: Browser,
  id: string,
  title: string,
): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 1000 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector(`li[data-card-id="${id}"]`);
  await page.goto(`${server.base}/#card=${id}`);
  await page.getByRole('complementary', { name: `Inspector: ${title}` }).waitFor();
  return page;
}

/** Writes card `id`'s workflow (cards/<id>/schema.json) into the server's project; returns its path. */
export function writeCardWorkflow(server: BoardServer, id: string, text: string): string {
  const file = path.join(server.project, 'cards', id, 'schema.json');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/**
 * A suite on one board with one card's inspector open: `start` makes the board in `beforeAll`, then
 * card `id` is opened in Debian's Chromium; both are stopped in `afterAll`. Its parts are there once
 * `beforeAll` ran.
 */
export function suiteOnCard(
  start: () => Promise<BoardServer>,
  id: string,
  title: string,
): { server: BoardServer; browser: Browser; page: Page } {
  const suite = {} as { server: BoardServer; browser: Browser; page: Page };
  beforeAll(async () => {
    suite.server = await start();
    suite.browser = await launchBrowser();
    suite.page = await openCard(suite.server, suite.browser, id, title);
  });
  afterAll(async () => {
    await suite.browser?.close();
    await suite.server?.stop();
  });
  return suite;
}

/** A first answer held back by {@link holdFirstAnswer}. */
export interface HeldAnswer {
  /** Resolves when the page has asked (the request is in the route). */
  asked: Promise<void>;
  /** Resolves when the host has answered (read as things were then, and held; rejects as `answered`). */
  read: Promise<void>;
  /** Lets the held answer go to the page. */
  release(): void;
  /** Resolves when the page has been given the answer (rejects if the route failed). */
  answered: Promise<void>;
}

/**
 * Holds the host's answer to the page's first request matching `glob` (Playwright's `page.route`, once):
 * the host answers at once, as it would have then, and the page gets that answer only after `release()`,
 * as from a slow host. Later requests go through untouched.
 */
export async function holdFirstAnswer(page: Page, glob: string): Promise<HeldAnswer> {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let markAsked!: () => void;
  const asked = new Promise<void>((r) => (markAsked = r));
  let markRead!: (error?: unknown) => void;
  const read = new Promise<void>((resolve, reject) => {
    markRead = (error) => (error === undefined ? resolve() : reject(error));
  });
  read.catch(() => {});
  let settle!: (error?: unknown) => void;
  const answered = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error));
  });
  answered.catch(() => {}); // a test that ended before awaiting it does not report it
  await page.route(
    glob,
    async (route) => {
      markAsked();
      try {
        const early = await route.fetch();
        markRead();
        await held;
        await route.fulfill({ response: early });
        settle();
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        markRead(error); // (no-op once read)
        settle(error);
      }
    },
    { times: 1 },
  );
  return { asked, read, release, answered };
}
