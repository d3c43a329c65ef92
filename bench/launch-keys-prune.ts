// What a prune of the supervisor's launch keys costs (supervisor/src/node/launch-keys.ts; retention's
// keeper runs it at the start, hourly and after a pass removed runs): N keys pruned with none removed
// (every key's run has its record) and with all removed (every run gone), the pass's wall time and the
// event loop's delay meanwhile (the prune looks off the loop; each removal is two synchronous calls).
//   node bench/run.mjs bench/launch-keys-prune.ts -- [keys, default 10000] [rounds, default 3]
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { LaunchKeys } from '../supervisor/src/node/launch-keys.ts';

const args = process.argv.slice(2).filter((a) => a !== '--');
const n = Number(args[0] ?? 10_000);
const rounds = Number(args[1] ?? 3);
console.log(`load average ${os.loadavg()[0]!.toFixed(1)}, ${os.cpus().length} cores`);
for (let round = 1; round <= rounds; round++)
  for (const gone of [false, true]) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-prune-bench-'));
    try {
      const keys = new LaunchKeys(path.join(dir, 'keys'));
      for (let i = 0; i < n; i++) keys.record(`/p/cards/c${i}.md`, 'k', `run-${i}`, false);
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const t0 = performance.now();
      const removed = await keys.prune(async () => !gone);
      const ms = performance.now() - t0;
      delay.disable();
      console.log(
        `round ${round}: ${n} keys, ${removed} removed: ${ms.toFixed(0)} ms, event loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms, max ${(delay.max / 1e6).toFixed(1)} ms`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
