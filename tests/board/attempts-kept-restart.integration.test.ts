/**
 * A board that dies between keeping the winning attempt's changes (the supervisor applied its workspace
 * copy; the run's result.json says `kept`) and writing the card: the board started again must see the
 * keep in the run's record and settle the card Done with the judge's pick. Before, it kept again, was
 * refused ("already kept") and left the card Failed though the changes were in the workspace (a
 * review leftover of issue 33).
 *
 * Real parts: `runboard serve` and its supervisor, two computer-use attempts on private displays with
 * their copies of the workspace, the judge's run; the scripted model server is the one double. The
 * point to kill at is made a condition: the board's ledger is on a tmpfs of its own, filled before
 * the judge answers, so the card's write after the keep is held (kept in memory, "could not be
 * saved") until serve is killed with SIGKILL.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunResult } from '@runboard/supervisor/protocol';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { statePaths } from '@runboard/supervisor/paths';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';
import { desktopFlow, exec, final } from '../fixtures/attempts-board.ts';
import { ownDisk, type OwnDisk } from '../helpers/disk.ts';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 4 }
flows:
${desktopFlow('desktop', { cap: 3, attempts: 2, timeout: '3m', maxSteps: 4 })}`;
const CARD = `---\ntitle: ATT-KEPT\nflow: desktop\nworkspace: ./workspace\n---\n# Task\nATT-KEPT: write result.txt.\n\n## Success criteria\nresult.txt says two.\n`;

const HELD = `---\ntitle: ATT-HELD\nflow: desktop\nworkspace: ./held\n---\n# Task\nATT-HELD: write result.txt.\n\n## Success criteria\nresult.txt says two.\n`;

let model: ModelServer;
let server: BoardServer;
let mounted: string | undefined;
/** The second test's workspace: an ext4 image of its own, frozen (fsfreeze) to hold the keep's writes. */
let frozen: { dir: string; image: string } | undefined;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(
    CONFIG,
    { 'kept.md': CARD, 'held.md': HELD },
    BoardServer.withModel('openai', model.url),
  );
}, 60_000);
afterAll(async () => {
  if (frozen) {
    // thawed first: a process writing there waits (in D state) until then, and no kill ends it
    try {
      execFileSync('fsfreeze', ['-u', frozen.dir], { stdio: 'ignore' });
    } catch {
      // not frozen (the test thawed it)
    }
  }
  if (mounted) execFileSync('umount', ['-l', mounted]);
  if (frozen) execFileSync('umount', ['-l', frozen.dir]);
  await server?.stop();
  if (frozen) rmSync(path.dirname(frozen.image), { recursive: true, force: true });
  await model?.close();
});

const front = (file = 'kept.md'): Record<string, unknown> =>
  YAML.parse(readFileSync(server.cardFile(file), 'utf8').split('---')[1]!) as Record<string, unknown>;

/** The board's ledger folder on a 1 MiB tmpfs of its own (tests/helpers/disk.ts), unmounted after. */
function ledgerDisk(dir: string): OwnDisk {
  const disk = ownDisk(dir);
  mounted = dir;
  return disk;
}

/**
 * Episodes of two attempts that both write result.txt and a judge naming attempt 1, whose answer waits
 * until the model server sees `releaseMatch` (the test holds the keep's way first).
 */
const judgeHeld = (release: string, releaseMatch: string, name: string, match: string) => [
  {
    name: 'judge',
    match: 'You are the judge of',
    requireTools: false,
    indexBy: 'requests' as const,
    turns: Array.from({ length: 4 }, () => ({
      text: JSON.stringify({ winner: 1, reasons: 'it wrote two' }),
      after: release,
    })),
  },
  { name: release, match: releaseMatch, requireTools: false, turns: [{ text: 'ok' }] },
  {
    name,
    match,
    turns: [],
    variants: [
      [exec('echo two > result.txt'), final({ status: 'SUCCESS', summary: 'wrote two' })],
      [exec('echo two > result.txt'), final({ status: 'SUCCESS', summary: 'wrote two as well' })],
    ],
  },
];

it('a board killed after the winner was kept and before the card was written: restarted, the card is Done', async () => {
  // the judge's answer waits for the test's release: the ledger's disk is filled first
  model.setEpisodes(judgeHeld('release', 'RELEASE-THE-JUDGE', 'kept', 'ATT-KEPT'));
  // the ledger's folder moves to a disk of its own while serve is stopped (nothing writes it then)
  const ledgerDir = path.join(server.home, 'ledger');
  expect(existsSync(ledgerDir)).toBe(true);
  const stopped = new Promise((r) => server.proc.once('exit', r));
  server.proc.kill('SIGTERM');
  await stopped;
  const disk = ledgerDisk(ledgerDir);
  await server.startServe();
  const id = (await server.board()).cards.find((c) => c.title === 'ATT-KEPT')!.id;
  await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
  // both attempts ended, the judge's run is recorded on the card and waits for its answer
  await waitUntil(
    'the judge waits for its answer',
    () => model.requests.some((r) => r.episode === 'judge') && typeof front().judgeRun === 'string',
    150_000,
  );
  const runs = front().attemptRuns as string[];
  disk.fill();
  const release = await fetch(`${model.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'RELEASE-THE-JUDGE' }] }),
  });
  expect(release.status).toBe(200);
  // the winner's copy is applied (its record says kept); the card's write after it cannot be saved
  const winner = await waitUntil('the winner kept', async () => {
    const all = (await server.supervisorRuns()) as unknown as RunResult[];
    return all.find((r) => runs.includes(r.runId) && r.copy?.state === 'kept');
  });
  expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('two\n');
  await waitUntil('the card waiting to save its end', async () =>
    (await server.card(id))?.waiting?.includes('could not be saved'),
  );
  expect(front().verdict).toBeUndefined();
  // the board dies with the card's write; a new one starts with room on the disk
  const killed = new Promise((r) => server.proc.once('exit', r));
  server.proc.kill('SIGKILL');
  await killed;
  disk.free();
  await server.startServe();
  const done = await waitUntil(
    'the card settled',
    async () => {
      const c = await server.card(id);
      return c?.column === 'done' || c?.column === 'failed' ? c : undefined;
    },
    60_000,
  );
  expect(done.lastError ?? '').toBe('');
  expect(done.column).toBe('done');
  const f = front();
  expect(f.verdict).toBe('attempt 1 of 2 won: it wrote two');
  expect(f.lastRun).toBe(winner.runId);
  expect(model.requests.filter((r) => r.episode === 'judge')).toHaveLength(1);
  expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('two\n');
}, 300_000);

/** Whether a thread of `pid` waits to write on a frozen file system (fsfreeze holds it in D state). */
function waitsOnFrozen(pid: number): boolean {
  return readdirSync(`/proc/${pid}/task`).some((t) => {
    try {
      return readFileSync(`/proc/${pid}/task/${t}/wchan`, 'utf8') === 'percpu_rwsem_wait';
    } catch {
      return false; // the thread ended
    }
  });
}

it("a board killed while the supervisor applies the winner's keep: restarted, it waits for that keep and the card is Done", async () => {
  // the judge's answer waits for the test's release: the workspace is frozen first
  model.setEpisodes(judgeHeld('release-held', 'RELEASE-THE-HELD-JUDGE', 'held', 'ATT-HELD'));
  // the card's workspace is a file system of its own, granted as a person grants a folder
  const dir = path.join(server.project, 'held');
  const image = path.join(mkdtempSync(path.join(os.tmpdir(), 'rb-held-')), 'ext4.img');
  execFileSync('truncate', ['-s', '16M', image]);
  execFileSync('mkfs.ext4', ['-q', '-F', image]);
  mkdirSync(dir);
  execFileSync('mount', ['-o', 'loop', image, dir]);
  frozen = { dir, image };
  await server.api('POST', '/api/grants', { path: dir });
  const id = (await server.board()).cards.find((c) => c.title === 'ATT-HELD')!.id;
  await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
  await waitUntil(
    'the judge waits for its answer',
    () => model.requests.some((r) => r.episode === 'judge') && typeof front('held.md').judgeRun === 'string',
    150_000,
  );
  const runs = front('held.md').attemptRuns as string[];
  // the keep's writes into the workspace wait while it is frozen: the keep is held going
  execFileSync('fsfreeze', ['-f', dir]);
  const log = path.join(statePaths({ RUNBOARD_HOME: server.home }).supervisorDir, 'supervisor.log');
  const lines = (): string[] => readFileSync(log, 'utf8').split('\n').filter(Boolean);
  // every line of the supervisor's log carries its pid (a line being written may not parse yet)
  const supervisorPid = lines()
    .map((l) => {
      try {
        return (JSON.parse(l) as { pid?: number }).pid;
      } catch {
        return undefined;
      }
    })
    .filter((p) => p !== undefined)
    .at(-1)!;
  const release = await fetch(`${model.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'RELEASE-THE-HELD-JUDGE' }] }),
  });
  expect(release.status).toBe(200);
  await waitUntil(
    'the supervisor applying the keep (its write held)',
    () => waitsOnFrozen(supervisorPid),
    60_000,
  );
  expect(front('held.md').verdict).toBeUndefined();
  // the board dies while the keep goes; a new one settles the card
  const killed = new Promise((r) => server.proc.once('exit', r));
  server.proc.kill('SIGKILL');
  await killed;
  const seenBefore = lines().length;
  await server.startServe();
  // it asked to keep the winner too (or, before, failed the card at once: "being kept already")
  await waitUntil(
    'the new board asks for the keep',
    async () => {
      if (
        lines()
          .slice(seenBefore)
          .some((l) => l.includes('is being kept already: this keep waits for it'))
      )
        return true;
      const c = await server.card(id);
      return c?.column === 'done' || c?.column === 'failed';
    },
    60_000,
  );
  execFileSync('fsfreeze', ['-u', dir]);
  const done = await waitUntil(
    'the card settled',
    async () => {
      const c = await server.card(id);
      return c?.column === 'done' || c?.column === 'failed' ? c : undefined;
    },
    60_000,
  );
  expect(done.lastError ?? '').toBe('');
  expect(done.column).toBe('done');
  const f = front('held.md');
  expect(f.verdict).toBe('attempt 1 of 2 won: it wrote two');
  expect(f.lastRun).toBe(runs[0]);
  expect(readFileSync(path.join(dir, 'result.txt'), 'utf8')).toBe('two\n');
  const all = (await server.supervisorRuns()) as unknown as RunResult[];
  expect(all.find((r) => r.runId === runs[0])?.copy?.state).toBe('kept');
}, 300_000);
