/**
 * What a run costs on a fleet (scheduler.backend: redis) against the local backend, on this machine:
 * one board-side supervisor, one host supervisor and a private redis-server, all local, so the figures
 * are Runboard's and BullMQ's own overhead (no network). Prints markdown for docs/benchmarks.md.
 *   node bench/run.mjs bench/fleet.ts [--runs 40] [--concurrency 4]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../host/src/core/supervisor-client.ts';
import { RedisServer } from '../tests/fleet/redis.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '40' }, concurrency: { type: 'string', default: '4' } },
});
const RUNS = Number(values.runs);
const CONC = Number(values.concurrency);
const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function main(): Promise<void> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-fleet-'));
  const redis = await RedisServer.start(path.join(root, 'redis'));
  const paths = statePaths({ RUNBOARD_HOME: path.join(root, 'board') });
  process.env.RUNBOARD_HOME = paths.root;
  const ws = path.join(root, 'ws');
  mkdirSync(ws);
  const grant = createGrant(paths, ws);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
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
  const host = spawn(process.execPath, [path.join(process.env.RUNBOARD_DIST!, 'supervisor.mjs')], {
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise<void>((r) =>
    host.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && r()),
  );

  const card = { path: path.join(root, 'card.md'), title: 'bench' };
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
  await client.shutdown(true).catch(() => undefined);
  client.close();
  host.kill('SIGTERM');
  await new Promise((r) => host.once('exit', r));
  await redis.stop();
  rmSync(root, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
