/**
 * What the supervisor benchmarks share (bench/core.ts, cancel.ts, fleet.ts, launch-ab.ts): a state root
 * of their own with a granted workspace and a client of its supervisor, a supervisor process of a given
 * build waited for until it says `ready`, CPU times read from /proc, percentiles and a pool of lanes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths, type StatePaths } from '@runboard/supervisor/paths';
import type { Grant } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../host/src/core/supervisor-client.ts';

/** The `p`th percentile of `xs` (nearest rank). */
export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** The load averages (1, 5, 15 minutes), as printed beside a figure. */
export const loadAverage = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** `n` jobs on `conc` lanes; the results in the order of their index. */
export async function pool<T>(n: number, conc: number, job: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await job(i);
      }
    }),
  );
  return out;
}

/**
 * CPU time of a process so far, ms (/proc's 10 ms ticks): its own (user + system) and its children's
 * that were waited for. `self`: this process.
 */
export function cpuMs(pid: number | 'self'): { own: number; children: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return { own: (Number(f[11]) + Number(f[12])) * 10, children: (Number(f[13]) + Number(f[14])) * 10 };
}

/** A benchmark's own state root under /tmp, with a granted workspace `ws` and a card file's place. */
export interface BenchRoot {
  root: string;
  paths: StatePaths;
  ws: string;
  grant: Grant;
  card: { path: string; title: string };
}

/** A fresh folder `prefix…` in /tmp holding a state root at `home` and a workspace granted to runs. */
export function benchRoot(prefix: string, home = 'home'): BenchRoot {
  const root = mkdtempSync(path.join(os.tmpdir(), prefix));
  const paths = statePaths({ RUNBOARD_HOME: path.join(root, home) });
  const ws = path.join(root, 'ws');
  mkdirSync(ws);
  const grant = createGrant(paths, ws);
  return { root, paths, ws, grant, card: { path: path.join(root, 'card.md'), title: 'bench' } };
}

/** A bench root whose supervisor this process starts (`autoStart`, of dist/) and talks to. */
export interface BenchSupervisor extends BenchRoot {
  client: SupervisorClient;
  /** Shuts the supervisor down (its runs cancelled) and removes the folder. */
  close(): Promise<void>;
}

export async function benchSupervisor(prefix: string, home?: string): Promise<BenchSupervisor> {
  const b = benchRoot(prefix, home);
  process.env.RUNBOARD_HOME = b.paths.root;
  const client = await SupervisorClient.connect(b.paths, { autoStart: true });
  return {
    ...b,
    client,
    close: async () => {
      await client.shutdown(true).catch(() => undefined);
      client.close();
      rmSync(b.root, { recursive: true, force: true });
    },
  };
}

/**
 * Spawns `node supervisorJs` with `env` and waits for its `ready` line on stdout; a supervisor that
 * exits first fails with its stderr.
 */
export async function spawnSupervisor(
  supervisorJs: string,
  env: NodeJS.ProcessEnv,
  name = 'supervisor',
): Promise<ChildProcess> {
  const supervisor = spawn(process.execPath, [supervisorJs], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  supervisor.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    supervisor.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready ')) resolve();
    });
    supervisor.once('exit', (code) => reject(new Error(`${name} exited (${code}): ${stderr}`)));
  });
  return supervisor;
}
