/**
 * The fleet through `runboard serve` (issue 34): the board's supervisor killed while its run goes on a
 * host (the board shows the run going on and its end, not `supervisor-died`), and a scheduled card
 * fired with no board open that no host can run (refused up front as a board's launch is, no job
 * queued). A real redis-server (with a password), a real host supervisor, serve and its supervisor.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BoardServer, DIST, shellCard, waitUntil } from '../e2e/helpers/board.ts';
import { pidAlive, type Harness } from '../helpers/harness.ts';
import { startHost } from './hosts.ts';
import { RedisServer } from './redis.ts';

let redis: RedisServer;
let host: Harness;
let redisDir: string;
let server: BoardServer | undefined;

beforeAll(async () => {
  redisDir = mkdtempSync(path.join(os.tmpdir(), 'rb-redis-'));
  redis = await RedisServer.start(redisDir);
  host = await startHost(redis.url, 'h1', ['shell'], 2, ['workspace']);
}, 120_000);

afterEach(async () => {
  await server?.stop();
  server = undefined;
});

afterAll(async () => {
  await host?.stop().catch(() => undefined);
  await redis?.stop();
  rmSync(redisDir, { recursive: true, force: true });
});

const config = (): string =>
  'version: 2\nscheduler:\n  maxConcurrency: 4\n  backend: redis\n' +
  `redis: { url: ${redis.url} }\n` +
  'flows:\n  shell: { runner: command, cap: 2 }\n  nowhere: { runner: command, cap: 1 }\n';

/** `runboard …` against the board's state root (works with serve down). */
function rb(s: BoardServer, args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: s.home };
  delete env.NODE_EXTRA_CA_CERTS;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [path.join(DIST, 'runboard.mjs'), ...args], { env }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    ),
  );
}

const supervisorPid = async (s: BoardServer): Promise<number> =>
  (JSON.parse(await rb(s, ['supervisor', 'status', '--json'])) as { pid: number }).pid;

describe('the fleet through runboard serve', () => {
  it("the board's supervisor killed mid run: the new one takes the run over, and the board shows it going on and its end", async () => {
    server = await BoardServer.start(config(), {
      'long.md': shellCard('Long', 'echo started; while [ ! -e go.mark ]; do sleep 0.1; done; echo finished'),
    });
    await server.api('POST', '/api/cards/long/move', { to: 'queued', index: 0 });
    type Runs = {
      runs: { runId: string; status: string; logDir: string; metrics: Record<string, unknown> }[];
    };
    const run = await waitUntil(
      'a host runs it',
      async () => {
        const r = (await server!.api<Runs>('GET', '/api/cards/long')).runs[0];
        return typeof r?.metrics.hostRunId === 'string' ? r : undefined;
      },
      30_000,
    );
    await waitUntil('its output mirrored', () => {
      try {
        return readFileSync(path.join(run.logDir, 'stdout.log'), 'utf8') === 'started\n';
      } catch {
        return false;
      }
    });
    const pid = await supervisorPid(server);
    process.kill(pid, 'SIGKILL');
    await waitUntil('the supervisor is gone', () => !pidAlive(pid));
    // The board starts a new supervisor, which takes the run over from its marker and its job.
    await waitUntil(
      'a new supervisor follows the run',
      async () => {
        const p = await supervisorPid(server!).catch(() => 0);
        if (p === 0 || p === pid) return false;
        const runs = await server!.supervisorRuns();
        return runs.some((r) => r.runId === run.runId && r.status === 'running');
      },
      30_000,
    );
    const going = await server.card('long');
    expect(going?.column, await server.diagnose()).toBe('running');
    expect(going?.runId).toBe(run.runId);
    // The run goes on on its host, and ends there: the board shows its end on the same card.
    writeFileSync(path.join(host.workspace, 'go.mark'), '');
    const done = await waitUntil(
      'the card ends',
      async () => {
        const c = await server!.card('long');
        return c && c.column !== 'running' ? c : undefined;
      },
      30_000,
    );
    expect(done.column, `${done.lastError ?? ''}\n${await server.diagnose()}`).toBe('done');
    expect(done.runId).toBe(run.runId);
    const detail = await server.api<Runs>('GET', '/api/cards/long');
    expect(detail.runs).toHaveLength(1);
    expect(detail.runs[0]).toMatchObject({ runId: run.runId, status: 'succeeded' });
    expect(detail.runs[0]!.metrics.host).toBe('h1');
    expect(readFileSync(path.join(run.logDir, 'stdout.log'), 'utf8')).toBe('started\nfinished\n');
    rmSync(path.join(host.workspace, 'go.mark'));
  }, 120_000);

  it('a scheduled card no host can run, fired with no board open, is refused up front with the reason, and no job is queued', async () => {
    // The schedule clock starts 15 s before the card's 08:00 fire; no host offers `nowhere`.
    server = await BoardServer.start(
      config(),
      {
        'nightly.md': shellCard(
          'Nightly',
          'echo never',
          'schedule: { cron: "0 8 * * *", timezone: UTC }\n',
        ).replace('flow: shell', 'flow: nowhere'),
      },
      { env: { RUNBOARD_SCHEDULE_CLOCK: '2026-01-05T07:59:45Z' } },
    );
    type Row = { cardId: string; history: { decision: string; reason: string }[]; started: unknown[] };
    const rows = async (): Promise<Record<string, Row>> =>
      Object.fromEntries(
        (await rb(server!, ['schedules', '--json']))
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as Row)
          .map((r) => [r.cardId, r]),
      );
    await waitUntil('registered', async () => (await rows()).nightly !== undefined);
    // The board closes; its supervisor goes on alone, still sending launches to the fleet.
    const exited = new Promise((r) => server!.proc.once('exit', r));
    server.proc.kill('SIGTERM');
    await exited;
    const decided = await waitUntil(
      'the fire decided',
      async () => {
        const r = (await rows()).nightly!;
        return r.history.some((d) => d.decision !== 'pending') ? r : undefined;
      },
      30_000,
    );
    expect(decided.history.map((d) => d.decision)).toEqual(['pending', 'skipped']);
    expect(decided.history[1]!.reason).toMatch(
      /^no board was open and the supervisor could not start the run: the fleet cannot run this card: no host of the fleet offers flow "nowhere" \(h1 offers "shell"\)/,
    );
    expect(decided.started).toEqual([]);
    expect(await server.supervisorRuns()).toEqual([]);
  }, 90_000);
});
