/**
 * Launch cost against an older build, alternated in ONE process (issue 27: launch p50 and throughput of
 * `npm run bench` (a) must not regress by more than 10 %). Pairs of separate benchmark processes
 * drifted 0.85–1.38× on this VM within minutes; here both supervisors live side by side (each its own
 * RUNBOARD_HOME, its own dist/ and native build) and short blocks of runs alternate between them (the
 * order flips every block), so a drift of the machine weighs on both alike. Each block prints its
 * ratios (this build / the baseline: latency p50, throughput); the verdict is their median. Then as
 * many mixed blocks, where every lane takes the two builds in turn run by run (both are measured at the
 * same instants: the steadiest figure on a loaded machine).
 *
 * The baseline is a checkout of the old commit with its own native build and bundles:
 *   git worktree add ../old <commit> && cd ../old && npm ci --ignore-scripts && \
 *     node native/scripts/build.mjs && node scripts/bundle.mjs
 * Usage: node bench/run.mjs bench/launch-ab.ts --baseline DIR [--blocks 12] [--runs 20] [--concurrency 4]
 * (docs/benchmarks.md, "Launch against a baseline").
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { SupervisorClient } from '../host/src/core/supervisor-client.ts';
import { benchRoot, cpuMs as procCpuMs, pct, pool, spawnSupervisor, type BenchRoot } from './setup.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    blocks: { type: 'string', default: '12' },
    runs: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '4' },
  },
});
if (!values.baseline) {
  console.error(
    'launch-ab needs --baseline DIR: a checkout of the commit to compare with, with its own native build and dist/ (see the head of bench/launch-ab.ts)',
  );
  process.exit(2);
}
const BLOCKS = Math.max(2, Number(values.blocks));
const RUNS = Math.max(4, Number(values.runs));
const CONC = Math.max(1, Number(values.concurrency));

const f1 = (n: number): string => n.toFixed(1);
const f2 = (n: number): string => n.toFixed(2);

interface Side extends BenchRoot {
  name: string;
  supervisor: ChildProcess;
  client: SupervisorClient;
}

/** A supervisor of the build in `dir` (its dist/ and native/build/Release), in a home of its own. */
async function startSide(name: string, dir: string): Promise<Side> {
  const supervisorJs = path.join(dir, 'dist', 'supervisor.mjs');
  const nativeDir = path.join(dir, 'native', 'build', 'Release');
  for (const need of [supervisorJs, path.join(nativeDir, 'runboard-jail')])
    if (!existsSync(need))
      throw new Error(
        `${need} is missing: build ${dir} first (node native/scripts/build.mjs && node scripts/bundle.mjs there)`,
      );
  const b = benchRoot(`rb-ab-${name}-`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    RUNBOARD_HOME: b.paths.root,
    RUNBOARD_NATIVE_DIR: nativeDir,
  };
  delete env.RUNBOARD_DIST;
  const supervisor = await spawnSupervisor(supervisorJs, env, `${name} supervisor`);
  const client = await SupervisorClient.connect(b.paths);
  return { ...b, name, supervisor, client };
}

/**
 * CPU time of a side so far, ms: its supervisor's own, and its reaped children's (the jails, with the
 * runs' processes each jail reaped): steadier on a loaded machine than any wall time.
 */
function cpuMs(side: Side): { own: number; children: number } {
  return procCpuMs(side.supervisor.pid!);
}

/** One run of `true`: launch → the worker's `ready` as seen here, ms; `total`: launch → its end. */
async function launchOne(side: Side): Promise<{ ready: number; total: number }> {
  const t0 = performance.now();
  const { runId } = await side.client.launch({
    card: side.card,
    flow: { name: 'bench', runner: 'command' },
    workspace: side.ws,
    grant: side.grant,
    command: 'true',
  });
  let ready = 0;
  await new Promise<void>((resolve, reject) => {
    side.client
      .attach(runId, {
        onEvent: (e) => {
          if (e.type === 'ready' && !ready) ready = performance.now() - t0;
        },
        onEnd: (r) =>
          r.status === 'succeeded'
            ? resolve()
            : reject(new Error(`${side.name} run ${runId} ${r.status}: ${r.termination?.detail}`)),
      })
      .catch(reject);
  });
  return { ready, total: performance.now() - t0 };
}

/** A block of runs on one side: launch latencies and runs per second. */
async function block(side: Side, n: number): Promise<{ ready: number[]; perSec: number }> {
  const t = performance.now();
  const ready = (await pool(n, CONC, () => launchOne(side))).map((r) => r.ready);
  return { ready, perSec: n / ((performance.now() - t) / 1000) };
}

async function main(): Promise<void> {
  const repo = path.resolve(process.env.RUNBOARD_DIST ? path.dirname(process.env.RUNBOARD_DIST) : '.');
  const sides = [await startSide('new', repo), await startSide('old', path.resolve(values.baseline!))];
  const [neu, old] = sides as [Side, Side];
  try {
    // Warm-up of both (page cache, JIT, the first cgroups).
    for (const s of sides) await block(s, 8);
    console.log(
      `launch of \`true\` runs at concurrency ${CONC}: ${BLOCKS} blocks of ${RUNS} runs per build, alternated`,
    );
    console.log(`  new: ${repo}\n  old: ${path.resolve(values.baseline!)}`);
    const cpu0 = { new: cpuMs(neu), old: cpuMs(old) };
    let counted = 0; // runs per build from here on
    console.log('block  order    p50 new/old (ms)    ratio   runs/s new/old    ratio');
    const latRatios: number[] = [];
    const thrRatios: number[] = [];
    const all = { new: [] as number[], old: [] as number[] };
    for (let b = 0; b < BLOCKS; b++) {
      const order = b % 2 === 0 ? [neu, old] : [old, neu];
      const got: Record<string, { ready: number[]; perSec: number }> = {};
      for (const s of order) got[s.name] = await block(s, RUNS);
      counted += RUNS;
      const n = got.new!;
      const o = got.old!;
      all.new.push(...n.ready);
      all.old.push(...o.ready);
      const lat = pct(n.ready, 50) / pct(o.ready, 50);
      const thr = n.perSec / o.perSec;
      latRatios.push(lat);
      thrRatios.push(thr);
      console.log(
        `${String(b + 1).padStart(5)}  ${order.map((s) => s.name).join('→')}  ${f1(pct(n.ready, 50)).padStart(7)} / ${f1(pct(o.ready, 50)).padEnd(7)}  ${f2(lat).padStart(6)}×  ${f1(n.perSec).padStart(6)} / ${f1(o.perSec).padEnd(6)}  ${f2(thr).padStart(6)}×`,
      );
    }
    // Mixed: the same instants for both. Each of the CONC lanes takes the two builds in turn, so half
    // the runs in flight are each build's at every moment; a lane's runs/s is 1 / its mean run time.
    console.log(
      `mixed blocks: ${CONC} lanes, each alternating the builds run by run, ${RUNS} runs per build`,
    );
    console.log('block  p50 new/old (ms)    ratio   mean run new/old (ms)  throughput ratio');
    const mixLat: number[] = [];
    const mixThr: number[] = [];
    for (let b = 0; b < BLOCKS; b++) {
      const got = {
        new: [] as { ready: number; total: number }[],
        old: [] as { ready: number; total: number }[],
      };
      let next = 0;
      await Promise.all(
        Array.from({ length: CONC }, async (_, lane) => {
          for (let k = 0; next < 2 * RUNS; k++, next++) {
            const side = (lane + k + b) % 2 === 0 ? neu : old;
            got[side.name as 'new' | 'old'].push(await launchOne(side));
          }
        }),
      );
      const mean = (xs: { total: number }[]): number => xs.reduce((a, r) => a + r.total, 0) / xs.length;
      const pn = pct(
        got.new.map((r) => r.ready),
        50,
      );
      const po = pct(
        got.old.map((r) => r.ready),
        50,
      );
      counted += RUNS;
      mixLat.push(pn / po);
      mixThr.push(mean(got.old) / mean(got.new));
      console.log(
        `${String(b + 1).padStart(5)}  ${f1(pn).padStart(7)} / ${f1(po).padEnd(7)}  ${f2(pn / po).padStart(6)}×  ${f1(mean(got.new)).padStart(8)} / ${f1(mean(got.old)).padEnd(8)}  ${f2(mean(got.old) / mean(got.new)).padStart(6)}×`,
      );
    }
    const load = os.loadavg().map(f2).join(' ');
    console.log(
      `median of the blocks: launch p50 ${f2(pct(latRatios, 50))}× (new/old; > 1.10 is over budget), throughput ${f2(pct(thrRatios, 50))}× (new/old; < 0.90 is over budget)`,
    );
    console.log(
      `median of the mixed blocks: launch p50 ${f2(pct(mixLat, 50))}×, throughput ${f2(pct(mixThr, 50))}× (the same budget)`,
    );
    const cpu = (s: Side, was: { own: number; children: number }) => {
      const now = cpuMs(s);
      return { own: (now.own - was.own) / counted, children: (now.children - was.children) / counted };
    };
    const cn = cpu(neu, cpu0.new);
    const co = cpu(old, cpu0.old);
    console.log(
      `CPU per run: new ${f1(cn.own + cn.children)} ms (supervisor ${f1(cn.own)}, jail and run ${f1(cn.children)}), old ${f1(co.own + co.children)} ms (supervisor ${f1(co.own)}, jail and run ${f1(co.children)}): ${f2((cn.own + cn.children) / (co.own + co.children))}×`,
    );
    console.log(
      `all runs pooled: p50 new ${f1(pct(all.new, 50))} ms, old ${f1(pct(all.old, 50))} ms; p90 new ${f1(pct(all.new, 90))} ms, old ${f1(pct(all.old, 90))} ms`,
    );
    console.log(
      `machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, load average ${load}, node ${process.version}, ${new Date().toISOString()}`,
    );
  } finally {
    for (const s of sides) {
      await s.client.shutdown(true).catch(() => undefined);
      s.client.close();
      rmSync(s.root, { recursive: true, force: true });
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
