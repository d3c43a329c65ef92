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
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunResult } from '@runboard/supervisor/protocol';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';
import { desktopFlow, exec, final } from '../fixtures/attempts-board.ts';
import { ownDisk, type OwnDisk } from '../helpers/disk.ts';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 4 }
flows:
${desktopFlow('desktop', { cap: 3, attempts: 2, timeout: '3m', maxSteps: 4 })}`;
const CARD = `---\ntitle: ATT-KEPT\nflow: desktop\nworkspace: ./workspace\n---\n# Task\nATT-KEPT: write result.txt.\n\n## Success criteria\nresult.txt says two.\n`;

let model: ModelServer;
let server: BoardServer;
let mounted: string | undefined;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(CONFIG, { 'kept.md': CARD }, BoardServer.withModel('openai', model.url));
}, 60_000);
afterAll(async () => {
  if (mounted) execFileSync('umount', ['-l', mounted]);
  await server?.stop();
  await model?.close();
});

const front = (): Record<string, unknown> =>
  YAML.parse(readFileSync(server.cardFile('kept.md'), 'utf8').split('---')[1]!) as Record<string, unknown>;

/** The board's ledger folder on a 1 MiB tmpfs of its own (tests/helpers/disk.ts), unmounted after. */
function ledgerDisk(dir: string): OwnDisk {
  const disk = ownDisk(dir);
  mounted = dir;
  return disk;
}

it('a board killed after the winner was kept and before the card was written: restarted, the card is Done', async () => {
  model.setEpisodes([
    {
      name: 'judge',
      match: 'You are the judge of',
      requireTools: false,
      indexBy: 'requests',
      // the judge's answer waits for the test's release: the ledger's disk is filled first
      turns: Array.from({ length: 4 }, () => ({
        text: JSON.stringify({ winner: 1, reasons: 'it wrote two' }),
        after: 'release',
      })),
    },
    { name: 'release', match: 'RELEASE-THE-JUDGE', requireTools: false, turns: [{ text: 'ok' }] },
    {
      name: 'kept',
      match: 'ATT-KEPT',
      turns: [],
      variants: [
        [exec('echo two > result.txt'), final({ status: 'SUCCESS', summary: 'wrote two' })],
        [exec('echo two > result.txt'), final({ status: 'SUCCESS', summary: 'wrote two as well' })],
      ],
    },
  ]);
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
