/**
 * The fleet as a whole (issue 34): a real redis-server, the supervisor the board talks to and hosts
 * with state roots of their own. What a dead host left is read without waking it; a card the fleet
 * cannot run is refused at launch, with the reason, before any job is queued.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogDir } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { DIST, Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';
import { LEASE_MS, maxOverlap, startGateway, startHost } from './hosts.ts';
import { CuttableLink, type RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
let gatewayEnv: NodeJS.ProcessEnv;
const hosts: Harness[] = [];
const boards: Harness[] = [];

beforeAll(async () => {
  ({ board, redis, env: gatewayEnv } = await startGateway());
  boards.push(board);
}, 120_000);

afterAll(async () => {
  for (const h of hosts) await h.stop().catch(() => undefined);
  for (const b of boards) await b.stop().catch(() => undefined);
  await redis?.stop();
});

/** Another board's supervisor on the same fleet (its own state root). */
async function anotherBoard(): Promise<Harness> {
  const b = await Harness.start({ env: { RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS) } });
  boards.push(b);
  b.client.close();
  const exited = new Promise((r) => b.supervisor.once('exit', r));
  b.supervisor.kill('SIGTERM');
  await exited;
  await b.startSupervisor(undefined, gatewayEnv);
  writeFileSync(path.join(b.root, 'card.md'), '---\ntitle: test card\n---\nSay hello.\n');
  return b;
}

/** Start and end (µs, one clock) of each run that noted them in a host's workspace. */
function spansIn(...hs: Harness[]): [number, number][] {
  return hs.flatMap((h) => {
    const f = path.join(h.workspace, 'spans.log');
    if (!existsSync(f)) return [];
    return readFileSync(f, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l): [number, number] => {
        const [a, b] = l.split(' ');
        return [Number(BigInt(a!) / 1000n), Number(BigInt(b!) / 1000n)];
      });
  });
}
/** A second's sleep named by this process (found in /proc by it, never another suite's `sleep 1`). */
const NAP = `sleep 1.${String(process.pid).padStart(7, '0')}`;
const SPAN = `s=$(date +%s%N); ${NAP}; echo "$s $(date +%s%N)" >> spans.log`;

/** `runboard` as a person runs it on that machine (its own state root). */
async function rb(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: home };
  delete env.NODE_EXTRA_CA_CERTS;
  try {
    const r = await promisify(execFile)(process.execPath, [path.join(DIST, 'runboard.mjs'), ...args], {
      env,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the fleet whole', () => {
  it("`runboard runs` on a dead host's state reads its runs without starting a supervisor there", async () => {
    const host = await startHost(redis.url, 'doomed', ['doomed'], 1);
    hosts.push(host);
    const { runId } = await board.launch('echo "on the doomed host"; sleep 60', { name: 'doomed' });
    let hostRun = '';
    // Running there, its marker on disk (written off the host's event loop, after the board hears of it).
    await waitUntil(
      'the host runs it',
      async () => {
        hostRun = String((await board.client.getRun(runId)).run.metrics.hostRunId ?? '');
        return /^\d{8}-/.test(hostRun) && existsSync(path.join(host.paths.supervisorDir, 'active', hostRun));
      },
      20_000,
    );
    host.supervisor.kill('SIGKILL');
    await new Promise((r) => (host.supervisor.exitCode !== null ? r(0) : host.supervisor.once('exit', r)));
    await waitUntil('nothing of the host left', () => processesMentioning(host.root).length === 0, 10_000);
    const marker = path.join(host.paths.supervisorDir, 'active', hostRun);
    expect(existsSync(marker)).toBe(true);

    const text = await rb(path.join(host.root, 'home'), ['runs']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toMatch(/no supervisor is running for .*: its runs as their files record them/);
    expect(text.stderr).toMatch(
      /1 marked running \(\*\) were going when their supervisor \(pid \d+\) stopped/,
    );
    expect(text.stdout.split('\n')[1]).toMatch(new RegExp(`^${hostRun}\\s+running\\*\\s+doomed`));
    const json = await rb(path.join(host.root, 'home'), ['runs', '--json', '--active']);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ runId: hostRun, status: 'running' });

    // Nothing was started and nothing rewritten: the host's record is as its supervisor left it.
    expect(processesMentioning(host.root)).toEqual([]);
    expect(existsSync(marker)).toBe(true);
    const rec = JSON.parse(
      readFileSync(path.join(runLogDir(host.paths, hostRun), 'result.json'), 'utf8'),
    ) as RunResult;
    expect(rec.status).toBe('running');
    // The board's side ends the run as its host stopped renewing the lease.
    const end = await board.collect(runId);
    expect(end.result.termination?.reason).toBe('heartbeat-timeout');
  }, 120_000); // the dead host's run ends about four leases after its last renewal (decision 103)

  it('several boards on one fleet share one global cap, also across a Redis restart', async () => {
    const other = await anotherBoard();
    const wide = [
      await startHost(redis.url, 'wide1', ['wide'], 3),
      await startHost(redis.url, 'wide2', ['wide'], 3),
    ];
    hosts.push(...wide);
    // Each board says its scheduler.maxConcurrency, as a board does (followBackend): 2 on both.
    for (const b of [board, other])
      await b.client.setBackend({ backend: 'redis', redisUrl: redis.url, maxConcurrency: 2 });
    // Each board dispatches up to its own cap (2 at once each); the hosts have room for 6.
    const launched = await Promise.all(
      [board, other, board, other, board, other].map(async (b) => ({
        b,
        ...(await b.launch(SPAN, { name: 'wide' })),
      })),
    );
    await waitUntil(
      'a run going',
      () => spansIn(...wide).length > 0 || processesMentioning(NAP).length > 0,
      20_000,
    );
    await redis.outage(LEASE_MS); // longer than a lease: the locks run out while it is down
    const results = await Promise.all(launched.map(({ b, runId }) => b.collect(runId).then((r) => r.result)));
    for (const r of results) expect(r.status, JSON.stringify(r.termination)).toBe('succeeded');
    const spans = spansIn(...wide);
    expect(spans).toHaveLength(6); // each ran once
    expect(maxOverlap(spans)).toBeLessThanOrEqual(2);
    for (const b of [board, other]) await b.client.setBackend({ backend: 'redis', redisUrl: redis.url });
  }, 120_000);

  it("several boards on one fleet share each flow's cap: two boards never run more than 1 of a flow capped at 1", async () => {
    const other = await anotherBoard();
    const solo = [
      await startHost(redis.url, 'solo1', ['solo'], 2),
      await startHost(redis.url, 'solo2', ['solo'], 2),
    ];
    hosts.push(...solo);
    // Each board says its flows' caps, as a board does (followBackend): `solo: { cap: 1 }` on both,
    // and no global cap. Each board dispatches up to its own cap; the hosts have room for 4.
    for (const b of [board, other])
      await b.client.setBackend({ backend: 'redis', redisUrl: redis.url, flowCaps: { solo: 1 } });
    try {
      const launched = await Promise.all(
        [board, other, board, other].map(async (b) => ({ b, ...(await b.launch(SPAN, { name: 'solo' })) })),
      );
      const results = await Promise.all(
        launched.map(({ b, runId }) => b.collect(runId).then((r) => r.result)),
      );
      for (const r of results) expect(r.status, JSON.stringify(r.termination)).toBe('succeeded');
      const spans = spansIn(...solo);
      expect(spans).toHaveLength(4); // each ran once
      expect(maxOverlap(spans)).toBe(1);
    } finally {
      for (const b of [board, other]) await b.client.setBackend({ backend: 'redis', redisUrl: redis.url });
    }
  }, 120_000);

  it("a host cut off from Redis does not hold the fleet's cap: its slot lapses once it has stopped its run", async () => {
    const link = await CuttableLink.open(redis);
    const cut = await startHost(link.url, 'island', ['capped'], 1);
    const mainland = await startHost(redis.url, 'mainland', ['capped2'], 1);
    hosts.push(cut, mainland);
    await board.client.setBackend({ backend: 'redis', redisUrl: redis.url, maxConcurrency: 1 });
    try {
      const first = await board.launch('echo island; sleep 63', { name: 'capped' });
      let islandRun = '';
      await waitUntil(
        'the island runs it',
        async () => {
          islandRun = String((await board.client.getRun(first.runId)).run.metrics.hostRunId ?? '');
          return /^\d{8}-/.test(islandRun);
        },
        20_000,
      );
      // With the cap of 1 taken by the island, this one waits for a slot until the island's lapses.
      const second = await board.launch('echo mainland', { name: 'capped2' });
      await link.cut();
      const r2 = (await board.collect(second.runId)).result;
      expect(r2.status, JSON.stringify(r2.termination)).toBe('succeeded');
      expect(r2.metrics.host).toBe('mainland');
      const r1 = (await board.collect(first.runId)).result;
      expect(r1.termination?.reason).toBe('heartbeat-timeout');
      // The island stopped its own run (fencing) before the mainland's began: never over the cap.
      const islandEnd = JSON.parse(
        readFileSync(path.join(runLogDir(cut.paths, islandRun), 'result.json'), 'utf8'),
      ) as RunResult;
      const mainlandStart = JSON.parse(
        readFileSync(
          path.join(runLogDir(mainland.paths, String(r2.metrics.hostRunId)), 'result.json'),
          'utf8',
        ),
      ) as RunResult;
      expect(Date.parse(islandEnd.endedAt!)).toBeLessThanOrEqual(Date.parse(mainlandStart.startedAt));
    } finally {
      await board.client.setBackend({ backend: 'redis', redisUrl: redis.url });
      await link.restore();
    }
  }, 120_000);
});
