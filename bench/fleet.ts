/**
 * What a run costs on a fleet (scheduler.backend: redis) against the local backend, on this machine:
 * one board-side supervisor, one host supervisor and a private redis-server, all local, so the figures
 * are Runboard's and BullMQ's own overhead (no network). Prints markdown for docs/benchmarks.md.
 *   node bench/run.mjs bench/fleet.ts [--runs 40] [--concurrency 4]
 * With `--start N [--dist DIR]`: only how long a supervisor in local mode (of DIR, default dist/) takes
 * from spawn to ready, wall and CPU time (medians of N): the fleet's code (BullMQ, ioredis) must not
 * slow that down.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { RedisServer } from '../tests/fleet/redis.ts';
import { benchSupervisor, cpuMs, pct, spawnSupervisor } from './setup.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '40' },
    concurrency: { type: 'string', default: '4' },
    start: { type: 'string' },
    dist: { type: 'string' },
  },
});
const RUNS = Number(values.runs);
const CONC = Number(values.concurrency);
/** Spawn to `ready` of a local-mode supervisor of `dist` on a fresh state root, `n` times: medians, ms. */
async function supervisorStart(n: number, dist: string): Promise<{ wall: number; cpu: number }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < n; i++) {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-start-'));
    const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: root };
    delete env.NODE_EXTRA_CA_CERTS;
    const t0 = performance.now();
    const sv = await spawnSupervisor(path.join(dist, 'supervisor.mjs'), env);
    wall.push(performance.now() - t0);
    cpu.push(cpuMs(sv.pid!).own);
    sv.kill('SIGTERM');
    await new Promise((r) => sv.once('exit', r));
    rmSync(root, { recursive: true, force: true });
  }
  return { wall: pct(wall, 50), cpu: pct(cpu, 50) };
}

async function main(): Promise<void> {
  if (values.start) {
    const n = Number(values.start);
    const dist = values.dist ?? process.env.RUNBOARD_DIST!;
    const m = await supervisorStart(n, dist);
    console.log(
      `${dist}: local-mode supervisor, spawn → ready, medians of ${n}: ${m.wall.toFixed(0)} ms wall, ${m.cpu.toFixed(0)} ms CPU (load ${os.loadavg()[0]!.toFixed(1)})`,
    );
    return;
  }
  const bench = await benchSupervisor('rb-bench-fleet-', 'board');
  const { root, ws, grant, client, card } = bench;
  const redis = await RedisServer.start(path.join(root, 'redis'));
  // The host: its own state root and grant of the same folder.
  const hostPaths = statePaths({ RUNBOARD_HOME: path.join(root, 'host') });
  createGrant(hostPaths, ws);
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: hostPaths.root };
  delete env.NODE_EXTRA_CA_CERTS;
  env.RUNBOARD_FLEET_CARDS = path.join(root, 'cards');
  env.RUNBOARD_FLEET_HOST = JSON.stringify({
    redis: redis.url,
    name: 'h',
    flows: ['bench'],
    capacity: CONC,
    workspaces: { '.': ws },
  });
  const host = await spawnSupervisor(
    path.join(process.env.RUNBOARD_DIST!, 'supervisor.mjs'),
    env,
    'the host supervisor',
  );

  writeFileSync(card.path, '# bench\n');
  const one = async (): Promise<number> => {
    const t0 = performance.now();
    const { runId } = await client.launch({
      card,
      flow: { name: 'bench', runner: 'command' },
      workspace: ws,
      grant,
      command: 'true',
    });
    await new Promise<RunResult>((resolve) => void client.attach(runId, { onEnd: resolve }));
    return performance.now() - t0;
  };
  const measure = async (): Promise<{ p50: number; p95: number; perSec: number }> => {
    const lat: number[] = [];
    for (let i = 0; i < RUNS; i++) lat.push(await one());
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONC }, async () => {
        while (next++ < RUNS) await one();
      }),
    );
    return { p50: pct(lat, 50), p95: pct(lat, 95), perSec: RUNS / ((performance.now() - t0) / 1000) };
  };
  await one(); // warm-up
  const local = await measure();
  await client.setBackend({ backend: 'redis', redisUrl: redis.url });
  await one();
  const fleet = await measure();
  console.log(
    `\n${RUNS} \`true\` runs each (launch → end seen by the client), then ${RUNS} at concurrency ${CONC}; load ${os.loadavg()[0]!.toFixed(1)}\n`,
  );
  console.log('| backend | p50 ms | p95 ms | runs/s | p50 vs local | runs/s vs local |');
  console.log('|---|---|---|---|---|---|');
  for (const [name, m] of [
    ['local', local],
    ['redis (1 host)', fleet],
  ] as const)
    console.log(
      `| ${name} | ${m.p50.toFixed(0)} | ${m.p95.toFixed(0)} | ${m.perSec.toFixed(1)} | ${(m.p50 / local.p50).toFixed(2)}× | ${(m.perSec / local.perSec).toFixed(2)}× |`,
    );
  await client.setBackend({ backend: 'local' });
  host.kill('SIGTERM');
  await new Promise((r) => host.once('exit', r));
  await redis.stop();
  await bench.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
