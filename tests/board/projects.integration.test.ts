/**
 * Projects (issue 27): no run can make a board run something no person asked for. A real run of
 * project A, whose workspace holds two other projects (B and C: folders with a Runboard config.yaml),
 * writes into them as an adversary would: a queued card, a card with a `schedule:` and a config.yaml
 * whose flow gets a wider sandbox (B), a scheduled card changed after the person confirmed it (C).
 * B's board is open meanwhile; C's is closed (the supervisor's schedule book fires on its own). C has
 * a schedule, so the supervisor knows it and the run cannot write it at all (read-only in the jail);
 * its card is then changed from outside any run (an editor, or a run with no mount namespace). Nothing
 * planted runs, schedules or widens a sandbox until a person confirms it; one Confirm then runs it.
 * Real processes throughout: `runboard serve` (twice), the supervisor, the jail; the schedule clock is
 * injected (RUNBOARD_SCHEDULE_CLOCK).
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import type { BoardView, CardDetail, CardView } from '../../host/src/shared/board-types.ts';
import {
  ARTIFACTS,
  BoardServer,
  boardCall,
  launchBrowser,
  shellCard,
  spawnServe,
  waitUntil,
} from '../e2e/helpers/board.ts';
import { DIST } from '../helpers/harness.ts';
import { statePaths } from '@runboard/supervisor/paths';
import { savePicture } from '../helpers/picture.ts';

const projectConfig = `version: 2
scheduler:
  maxConcurrency: 4
flows:
  shell: { runner: command, cap: 4 }
`;
const at8 = '{ cron: "0 8 * * *", timezone: UTC }';

let a: BoardServer;
/** B and C: projects inside A's workspace; `outside`: a folder no flow of theirs may write. */
let B: string;
let C: string;
let outside: string;

/** A board of another project on the same state root (and so the same supervisor). */
class OtherBoard {
  proc!: ChildProcess;
  base = '';
  token = '';
  url = '';
  constructor(
    readonly project: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}
  async start(): Promise<this> {
    Object.assign(this, await spawnServe(this.project, this.env));
    return this;
  }
  api<T>(method: string, p: string, body?: unknown): Promise<T> {
    return boardCall<T>(this, method, p, body);
  }
  board(): Promise<BoardView> {
    return this.api<BoardView>('GET', '/api/board');
  }
  async card(id: string): Promise<CardView | undefined> {
    return (await this.board()).cards.find((c) => c.id === id);
  }
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise((r) => this.proc.once('exit', r));
    this.proc.kill('SIGTERM');
    await exited;
  }
}

interface ScheduleRow {
  cardId: string;
  cardPath: string;
  lastFire?: string;
  history: { decision: string; reason: string }[];
}

async function schedules(env: NodeJS.ProcessEnv): Promise<ScheduleRow[]> {
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), 'schedules', '--json'],
      { env },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    ),
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ScheduleRow);
}

/** A project folder with config.yaml, its cards and a granted workspace `ws`. */
function makeProject(dir: string, cards: Record<string, string>): void {
  mkdirSync(path.join(dir, 'cards'), { recursive: true });
  mkdirSync(path.join(dir, 'ws'), { recursive: true });
  writeFileSync(path.join(dir, 'config.yaml'), projectConfig);
  for (const [name, text] of Object.entries(cards)) writeFileSync(path.join(dir, 'cards', name), text);
}

const card = (title: string, command: string, extra = ''): string =>
  `---\ntitle: ${title}\nflow: shell\nworkspace: ./ws\ncommand: ${JSON.stringify(command)}\n${extra}---\n# Task\n`;

let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  // The schedule clock starts 60 s before 08:00: B's and C's boards open and the attack runs first.
  a = await BoardServer.start(
    projectConfig,
    {},
    { env: { RUNBOARD_SCHEDULE_CLOCK: '2026-01-05T07:59:00Z' } },
  );
  B = path.join(a.workspace, 'other-b');
  C = path.join(a.workspace, 'other-c');
  outside = path.join(a.root, 'outside');
  mkdirSync(outside);
  makeProject(B, {
    'victim.md': card('Victim', `echo widened > ${outside}/victim-wrote`),
  });
  makeProject(C, { 'nightly.md': card('Nightly', 'echo nightly', `schedule: ${at8}\n`) });
  const paths = statePaths({ RUNBOARD_HOME: a.home });
  createGrant(paths, path.join(B, 'ws'));
  createGrant(paths, path.join(C, 'ws'));
  env = { ...process.env, RUNBOARD_HOME: a.home };
  delete env.NODE_EXTRA_CA_CERTS;
}, 60_000);

afterAll(async () => {
  await a?.stop();
});

describe('cards and flows a run writes into another project', () => {
  it('do not run, schedule or widen a sandbox until a person confirms them on that board', async () => {
    // C's board registers its nightly schedule, then closes: C's fires are the supervisor's own.
    const c = await new OtherBoard(C, env).start();
    await waitUntil('C registered', async () => (await schedules(env)).some((s) => s.cardId === 'nightly'));
    await c.stop();
    // B's board opens (a person opened it: what it holds now is theirs) and stays open.
    const b = await new OtherBoard(B, env).start();
    try {
      await waitUntil('B on its board', () => b.card('victim'));
      expect((await b.card('victim'))?.column).toBe('backlog');

      // The attack, from inside a real run of project A.
      const planted = card('Planted', 'touch planted-ran', 'status: queued\n');
      const plantedSchedule = card('Planted schedule', 'touch scheduled-ran', `schedule: ${at8}\n`);
      const nightlyFile = path.join(C, 'cards', 'nightly.md');
      const confirmedNightly = readFileSync(nightlyFile, 'utf8');
      const cConfig = readFileSync(path.join(C, 'config.yaml'), 'utf8');
      const changedNightly = confirmedNightly.replace('echo nightly', 'touch nightly-changed-ran');
      const widened = projectConfig.replace(
        'shell: { runner: command, cap: 4 }',
        `shell: { runner: command, cap: 4, sandbox: { writable: [${JSON.stringify(outside)}] } }`,
      );
      const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
      const attack = [
        `printf %s ${q(planted)} > other-b/cards/planted.md`,
        `printf %s ${q(plantedSchedule)} > other-b/cards/planted-schedule.md`,
        `printf %s ${q(widened)} > other-b/config.yaml`,
        `{ printf %s ${q(changedNightly)} > other-c/cards/nightly.md || echo 'C refused'; }`,
        `{ echo 'flows: {}' >> other-c/config.yaml || echo 'C refused'; }`,
        'echo attacked',
      ].join(' && ');
      a.writeCard('attack.md', shellCard('Attack', attack));
      await waitUntil('the attack card', async () => (await a.card('attack')) !== undefined);
      await a.api('POST', '/api/cards/attack/move', { to: 'queued', index: 0 });
      const attacked = await waitUntil(
        'the attack ran',
        async () => {
          const v = await a.card('attack');
          return v && (v.column === 'done' || v.column === 'failed') ? v : undefined;
        },
        30_000,
      );
      expect(attacked.column, attacked.lastError).toBe('done');
      expect(readFileSync(path.join(B, 'cards', 'planted.md'), 'utf8')).toMatch(/title: Planted/); // the writes landed
      // C is a project the supervisor knows (its schedule): read-only to the run, although in its workspace
      expect(readFileSync(nightlyFile, 'utf8')).toBe(confirmedNightly);
      expect(readFileSync(path.join(C, 'config.yaml'), 'utf8')).toBe(cConfig);
      // C's card changed by a writer outside any jail (an editor; a run on the fallback with no mounts)
      writeFileSync(nightlyFile, changedNightly);

      // B's board: the planted queued card waits for a confirm instead of running. (Its confirm is the
      // card store's at once; the scheduler says why it waits at its next look: wait for both.)
      const waiting = await waitUntil(
        'the planted card waits or runs',
        async () => {
          const v = await b.card('planted');
          return v && ((v.confirm && v.waiting) || v.column !== 'queued') ? v : undefined;
        },
        20_000,
      );
      expect(waiting.column).toBe('queued');
      expect(waiting.confirm?.reason).toMatch(/changed outside the board/);
      expect(waiting.waiting).toMatch(/Confirm/);
      const scheduled = await waitUntil('the planted schedule card', () => b.card('planted-schedule'));
      expect(scheduled.confirm?.reason).toMatch(/schedule/);
      // config.yaml: one banner names what changed; the board keeps the confirmed flows
      const board = await b.board();
      expect(board.configChange?.changes.join('\n')).toMatch(/flow "shell".*sandbox/);

      // 08:00 passes: C's nightly, changed outside the board, is refused by the book with no board open...
      const nightly = await waitUntil(
        'C nightly decided at 08:00',
        async () => {
          const s = (await schedules(env)).find((r) => r.cardId === 'nightly');
          return s && s.history.some((h) => h.decision !== 'pending') ? s : undefined;
        },
        90_000,
      );
      expect(nightly.history.map((h) => h.decision)).toEqual(['pending', 'skipped']);
      expect(nightly.history[1]!.reason).toMatch(/changed outside the board/);
      // ...and the planted schedule was never registered (so never fired)
      expect((await schedules(env)).some((s) => s.cardId === 'planted-schedule')).toBe(false);
      const plantedRuns = await b.api<CardDetail>('GET', '/api/cards/planted-schedule');
      expect(plantedRuns.runs).toEqual([]);

      // A person queues the victim card: it runs with the confirmed (narrow) flow.
      await b.api('POST', '/api/cards/victim/move', { to: 'queued', index: 0 });
      const victim = await waitUntil(
        'the victim ran',
        async () => {
          const v = await b.card('victim');
          return v && v.column !== 'queued' && v.column !== 'running' ? v : undefined;
        },
        30_000,
      );
      expect(victim.column).not.toBe('done');
      expect(existsSync(path.join(outside, 'victim-wrote'))).toBe(false);
      expect(existsSync(path.join(B, 'ws', 'planted-ran'))).toBe(false);
      expect(existsSync(path.join(B, 'ws', 'scheduled-ran'))).toBe(false);
      expect(existsSync(path.join(C, 'ws', 'nightly-changed-ran'))).toBe(false);

      // A confirm of a card as it was shown is refused when the card changed since.
      await expect(b.api('POST', '/api/cards/planted/confirm', { digest: 'A'.repeat(43) })).rejects.toThrow(
        /409.*changed again/,
      );
      // One click: the person confirms the planted card, and it runs.
      // (as the board shows it now: the victim's move above re-ranked the Queued column, a board write
      // that kept the planted card unconfirmed and changed its digest)
      const shown = (await b.card('planted'))!.confirm!;
      expect(shown.reason).toMatch(/changed outside the board/);
      await b.api('POST', '/api/cards/planted/confirm', { digest: shown.digest });
      await waitUntil(
        'the confirmed card ran',
        async () => (await b.card('planted'))?.column === 'done',
        30_000,
      );
      expect(existsSync(path.join(B, 'ws', 'planted-ran'))).toBe(true);
      // and the config: confirmed, the wider flow applies
      // and config.yaml, on the page: the banner names the change; its button, from the keyboard
      const browser = await launchBrowser();
      try {
        const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
        await page.goto(b.url);
        const banner = page.getByRole('region', { name: 'Changed outside the board' });
        await banner.getByText('flow "shell": sandbox changed').waitFor();
        await savePicture(page, path.join(ARTIFACTS, 'board-config-confirm.png'));
        await banner.getByRole('button', { name: 'Confirm config.yaml' }).focus();
        await page.keyboard.press('Enter');
        // (the banner stays for the planted schedule card, still unconfirmed)
        await banner.getByRole('button', { name: 'Confirm config.yaml' }).waitFor({ state: 'detached' });
        expect(await banner.getByText('Planted schedule').count()).toBe(1);
      } finally {
        await browser.close();
      }
      expect((await b.board()).configChange).toBeUndefined();
      expect((await b.board()).flows).toEqual([expect.objectContaining({ name: 'shell' })]);
    } finally {
      await b.stop();
    }
  }, 240_000);
});
