/**
 * A fleet on one machine: a real redis-server, the supervisor the board talks to (backend redis), and
 * supervisors as hosts with state roots of their own, pulling runs of the flows they offer. Runs are
 * launched through the real protocol and watched through the supervisor that submitted them.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '@runboard/supervisor/protocol';
import { redisOptions } from '../../supervisor/src/node/fleet/job.ts';
import { processesMentioning, sleep, waitUntil, type Harness } from '../helpers/harness.ts';
import { startGateway, startHost as startFleetHost } from './hosts.ts';
import { CuttableLink, type RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
const hosts: Record<string, Harness> = {};

async function startHost(name: string, flows: string[], capacity: number, mapped = true): Promise<Harness> {
  const h = await startFleetHost(redis.url, name, flows, capacity, mapped ? ['.'] : []);
  hosts[name] = h;
  return h;
}

async function runOn(flow: string, command: string): Promise<{ runId: string; done: Promise<RunResult> }> {
  const { runId } = await board.launch(command, { name: flow });
  return { runId, done: board.collect(runId).then((r) => r.result) };
}

beforeAll(async () => {
  ({ board, redis } = await startGateway());
  await Promise.all([
    startHost('alpha', ['shell'], 2),
    startHost('beta', ['shell', 'slow'], 2),
    startHost('gamma', ['other'], 1, false),
  ]);
}, 120_000);

afterAll(async () => {
  for (const h of Object.values(hosts)) await h.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

/**
 * The long sleep of this file's runs, named by this process: the processes of a run are found by it in
 * /proc, and a plain `sleep 61` matched another suite's run of this test on the same machine (the lead's
 * two clean-clone CIs at once: the link was cut before this run had started, and it waited for ever).
 */
const nap = (seconds: number): string => `sleep ${seconds}.${String(process.pid).padStart(7, '0')}`;
const NAP = nap(60);
const NAP61 = nap(61);

describe('a fleet of supervisors on Redis', () => {
  it('spreads runs over the hosts that offer their flow, with their output mirrored where they were launched', async () => {
    const runs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        runOn('shell', `echo "hello ${i} from $(basename $PWD)"; sleep 0.3`),
      ),
    );
    const results = await Promise.all(runs.map((r) => r.done));
    const hostsUsed = new Set<string>();
    for (const [i, r] of results.entries()) {
      expect(r.status, JSON.stringify(r.termination)).toBe('succeeded');
      expect(['alpha', 'beta']).toContain(r.metrics.host); // never gamma: it does not offer `shell`
      hostsUsed.add(String(r.metrics.host));
      const out = readFileSync(path.join(r.logDir, 'stdout.log'), 'utf8');
      expect(out).toBe(`hello ${i} from ws\n`);
      expect(r.stdoutBytes).toBe(Buffer.byteLength(out));
      const events = readFileSync(path.join(r.logDir, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(events.map((e) => e.seq)).toEqual(events.map((_, n) => n)); // numbered without gaps, as locally
      expect(events.some((e) => /runs it/.test(e.message ?? ''))).toBe(true);
    }
    expect(hostsUsed.size).toBe(2);
    // Per-host capacity (2) held: no more than two of a host's runs overlapped in time.
    for (const host of hostsUsed) {
      const mine = results.filter((r) => r.metrics.host === host);
      for (const r of mine) {
        const t = Date.parse(r.startedAt) + 1;
        const overlapping = mine.filter((o) => Date.parse(o.startedAt) <= t && Date.parse(o.endedAt!) >= t);
        expect(overlapping.length).toBeLessThanOrEqual(2);
      }
    }
  });

  it('a launch no host can run (its workspace mapped by none) is refused up front, saying what to grant', async () => {
    // gamma offers `other` but maps no workspace ".": the board's supervisor refuses it before any job
    // is queued (it had queued it, and gamma refused the job: issue 34), naming the hosts and the fix.
    const before = (await board.client.list({ limit: 1000 })).runs.length;
    await expect(board.launch('true', { name: 'other' })).rejects.toThrow(
      /the fleet cannot run this card: no host of the fleet that offers flow "other" has workspace "\." \(gamma maps none\): on a host, `runboard grant DIR` and join with `--workspace \.=DIR`/,
    );
    await expect(board.launch('true', { name: 'nobody' })).rejects.toThrow(
      /no host of the fleet offers flow "nobody" \(alpha offers "shell"; beta offers "shell", "slow"; gamma offers "other"\)/,
    );
    expect((await board.client.list({ limit: 1000 })).runs.length).toBe(before);
  });

  it('a launch of a flow a host of an older release offers is refused up front, saying which host to upgrade', async () => {
    // as a host of a release before session 17 says what it offers: no fleet version (decision 115); it
    // would take the flow's jobs from the queue and refuse them as "not a run of this version"
    const r = new Redis(redisOptions(redis.url));
    const entry = `runboard:fleet:host:${Buffer.from('elder').toString('hex')}`;
    try {
      await r.set(
        entry,
        JSON.stringify({ name: 'elder', flows: ['legacy'], workspaces: ['.'], capacity: 1 }),
        'PX',
        60_000,
      );
      const before = (await board.client.list({ limit: 1000 })).runs.length;
      await expect(board.launch('true', { name: 'legacy' })).rejects.toThrow(
        'the fleet cannot run this card: elder runs fleet version 1, and this supervisor 2: a host of another Runboard release offering flow "legacy" would refuse the runs of it that it takes; every supervisor of a fleet must run the same release: upgrade elder (or stop that host)',
      );
      expect((await board.client.list({ limit: 1000 })).runs.length).toBe(before);
    } finally {
      await r.del(entry);
      r.disconnect();
    }
  });

  it('cancel from the board stops the run on its host, and nothing of it stays running there', async () => {
    const { runId, done } = await runOn('slow', `echo started; ${NAP}`);
    await waitUntil(
      'the run started on beta',
      () => {
        const f = path.join(board.root, 'home');
        return existsSync(f) && processesMentioning(NAP).length > 0;
      },
      20_000,
    );
    await board.client.cancel(runId);
    const r = await done;
    expect(r.status).toBe('cancelled');
    expect(r.metrics.host).toBe('beta');
    await waitUntil('no process of the run left', () => processesMentioning(NAP).length === 0, 10_000);
  });

  it('a host killed mid-run: the run ends failed as stalled (never run twice), and the others go on', async () => {
    const victim = await startHost('delta', ['fragile'], 1);
    const { done } = await runOn('fragile', `echo "on $(basename $PWD)"; ${NAP}`);
    await waitUntil('the run going on delta', () => processesMentioning(NAP).length > 0, 20_000);
    victim.supervisor.kill('SIGKILL'); // its runs die with it (parent-death signal)
    const r = await done;
    expect(r.status).toBe('failed');
    expect(r.termination?.reason).toBe('heartbeat-timeout');
    expect(r.termination?.detail).toMatch(/stalled/);
    expect(processesMentioning(NAP)).toEqual([]);
    // The fleet still works.
    const again = await runOn('shell', 'echo still here');
    expect((await again.done).status).toBe('succeeded');
    delete hosts.delta;
    await victim.stop(); // its folder goes too
  }, 120_000); // a dead host's run ends about four leases after its last renewal (decision 103)

  it('a host cut off the network stops its own run before the board gives up on it: never two at once', async () => {
    const link = await CuttableLink.open(redis);
    const cutoff = await startFleetHost(link.url, 'epsilon', ['remote'], 1);
    hosts.epsilon = cutoff;
    const { done } = await runOn('remote', `echo "on $(basename $PWD)"; ${NAP61}`);
    await waitUntil('the run going on epsilon', () => processesMentioning(NAP61).length > 0, 20_000);
    await link.cut();
    const r = await done;
    // When the board ends the run (and a retry could start elsewhere), nothing of it runs any more.
    expect(processesMentioning(NAP61)).toEqual([]);
    expect(r.status).toBe('failed');
    expect(r.termination?.reason).toBe('heartbeat-timeout');
    expect(r.metrics.host).toBe('epsilon');
    await link.restore();
  }, 120_000); // a dead host's run ends about four leases after its last renewal (decision 103)

  it('runs queued while Redis restarts are neither lost nor run twice', async () => {
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => runOn('shell', `echo run ${i}; sleep 1`)),
    );
    await sleep(300);
    await redis.stop();
    await sleep(500);
    await redis.restart();
    const results = await Promise.all(runs.map((r) => r.done));
    for (const [i, r] of results.entries()) {
      expect(r.status, JSON.stringify(r.termination)).toBe('succeeded');
      expect(readFileSync(path.join(r.logDir, 'stdout.log'), 'utf8')).toBe(`run ${i}\n`);
    }
  });
});
