/**
 * How long a cancel takes to end a stubborn run (a double-forked grandchild that ignores SIGTERM, as in
 * tests/integration/lifecycle "cancel is idempotent…"): the stop is SIGTERM, then SIGKILL after the
 * flow's kill grace (1 s by default). The lifecycle test asserts what the stop does; how long it takes
 * is this figure (a pass/fail bound on a duration fails on a loaded machine, not on a broken stop).
 *   - by the supervisor's own stamps: the run's `cancel` event → its `endedAt`;
 *   - as a client sees it: the cancel call → run/didEnd.
 * Each is printed next to the kill grace (ratio), with the load average.
 * Usage: node bench/run.mjs bench/cancel.ts [--runs N] [--grace MS]
 */
import { parseArgs } from 'node:util';
import type { RunResult } from '@runboard/supervisor/protocol';
import { benchSupervisor, loadAverage as load, pct } from './setup.ts';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '10' }, grace: { type: 'string', default: '1000' } },
});
const RUNS = Number(values.runs);
const GRACE = Number(values.grace);

async function main(): Promise<void> {
  const bench = await benchSupervisor('rb-bench-cancel-');
  const { client, card, grant, ws } = bench;
  const flow = { name: 'bench', runner: 'command' as const, killGraceMs: GRACE };
  const command = `trap '' TERM; (setsid sh -c 'trap "" TERM; exec sleep 300' &) ; echo spawned; sleep 300`;
  const own: number[] = [];
  const seen: number[] = [];
  const loadBefore = load();
  try {
    for (let i = 0; i < RUNS; i++) {
      const { runId } = await client.launch({ card, flow, workspace: ws, grant, command });
      let cancelTs = 0;
      let spawned!: () => void;
      const started = new Promise<void>((r) => (spawned = r));
      const ended = new Promise<RunResult>((resolve) => {
        void client.attach(runId, {
          onEvent: (e) => {
            if (e.type === 'cancel') cancelTs = Date.parse(e.ts);
          },
          onOutput: (_s, d) => d.includes('spawned') && spawned(),
          onEnd: resolve,
        });
      });
      await started;
      const t0 = performance.now();
      await client.cancel(runId);
      const result = await ended;
      seen.push(performance.now() - t0);
      if (result.status !== 'cancelled' || !result.endedAt) throw new Error(`run ${runId}: ${result.status}`);
      own.push(Date.parse(result.endedAt) - cancelTs);
    }
  } finally {
    await bench.close();
  }
  const line = (what: string, xs: number[]): string =>
    `${what}: median ${pct(xs, 50).toFixed(0)} ms (${(pct(xs, 50) / GRACE).toFixed(2)}x the grace), ` +
    `p95 ${pct(xs, 95).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;
  console.log(
    `cancel of a stubborn run, ${RUNS} runs, kill grace ${GRACE} ms, load ${loadBefore} → ${load()}`,
  );
  console.log(line('  cancel event → endedAt (the supervisor)', own));
  console.log(line('  cancel call → didEnd (a client)', seen));
}

await main();
