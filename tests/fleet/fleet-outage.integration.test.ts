/**
 * A Redis outage longer than a job's lease while hosts are alive and running (issue 34, decision 103):
 * the locks run out while Redis is down; each host takes its jobs' locks again once Redis is back, and
 * the board's side declares no job stalled, so every run goes on and succeeds, each run once. A host
 * that died or is cut off still has its runs ended (fleet.integration, fleet-whole).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil, type Harness } from '../helpers/harness.ts';
import { LEASE_MS, startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
const hosts: Harness[] = [];

beforeAll(async () => {
  ({ board, redis } = await startGateway());
  hosts.push(
    await startHost(redis.url, 'north', ['long'], 2),
    await startHost(redis.url, 'south', ['long'], 2),
  );
}, 120_000);

afterAll(async () => {
  for (const h of hosts) await h.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

/** Lines the runs wrote in the hosts' workspaces (`started` once per run). */
const started = (): number =>
  hosts
    .map((h) => path.join(h.workspace, 'runs.log'))
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, 'utf8').split('\n').filter(Boolean)).length;

/** The job locks in Redis, as holders' tokens (a verdict's starts with `stalled:`). */
async function locks(): Promise<string[]> {
  const c = new Redis({ port: redis.port, password: redis.password, maxRetriesPerRequest: 1 });
  c.on('error', () => undefined);
  try {
    const keys = await c.keys('*:lock');
    return (await Promise.all(keys.map((k) => c.get(k)))).filter((v): v is string => v !== null);
  } catch {
    return [];
  } finally {
    c.disconnect();
  }
}

describe('a Redis outage longer than the lease', () => {
  it('runs going on hosts that stay alive go on through it and succeed, each run once', async () => {
    // Each run notes its start, then waits until the test releases it (after Redis is back).
    const script = 'echo started >> runs.log; while [ ! -e release ]; do sleep 0.1; done; echo done';
    const runs = await Promise.all([1, 2, 3].map(() => board.launch(script, { name: 'long' })));
    await waitUntil('the three runs going', () => started() === 3, 30_000);
    await waitUntil('their locks held', async () => (await locks()).length === 3, 10_000);

    await redis.outage(LEASE_MS);

    // Back: every host holds its jobs' locks again (no verdict took one), then the runs are let go.
    await waitUntil(
      "the hosts' locks taken again",
      async () => {
        const held = await locks();
        return held.length === 3 && held.every((t) => !t.startsWith('stalled:'));
      },
      30_000,
    );
    for (const h of hosts) writeFileSync(path.join(h.workspace, 'release'), '');
    const results = await Promise.all(runs.map(({ runId }) => board.collect(runId).then((r) => r.result)));
    for (const r of results) expect(r.status, JSON.stringify(r.termination)).toBe('succeeded');
    expect(started()).toBe(3); // each ran once
  }, 120_000);
});
