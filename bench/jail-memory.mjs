// The memory cgroup's cost on a run's start (issue 27): `runboard-jail --max-procs 1024 -- /bin/true`
// (the pids cgroup, as every run has it) against the same with `--memory` (the run's memory cgroup too),
// in alternating blocks so that a drift of the machine's speed hits both alike. Wall time of the whole
// jail process (start, cgroups made, run moved, /bin/true, cgroups removed), p50 and p99.
//
// Usage: node bench/jail-memory.mjs [runs per variant, default 300] [block, default 20]
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const runs = Number(process.argv[2] ?? 300);
const block = Number(process.argv[3] ?? 20);
const jail = path.resolve(import.meta.dirname, '..', 'native', 'build', 'Release', 'runboard-jail');
const variants = {
  'pids cgroup only': ['--max-procs', '1024', '--', '/bin/true'],
  'pids + memory cgroup': ['--max-procs', '1024', '--memory', String(512 << 20), '--', '/bin/true'],
};
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
const once = (args) => {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(jail, ['--status-fd', '1', ...args], { encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (r.status !== 0) throw new Error(`jail failed: ${r.stderr}${r.stdout}`);
  return { ms, out: r.stdout };
};
// what each variant holds (said once)
for (const [name, args] of Object.entries(variants)) {
  const started = JSON.parse(once(args).out.split('\n')[0]);
  console.log(`${name}: pidsLimit ${started.pidsLimit}, memoryLimit ${started.memoryLimit ?? '-'}`);
}
for (let done = 0; done < runs; done += block)
  for (const [name, args] of Object.entries(variants))
    for (let i = 0; i < block; i++) times[name].push(once(args).ms);
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
const [a, b] = Object.keys(variants);
for (const name of [a, b])
  console.log(
    `${name.padEnd(22)} p50 ${pct(times[name], 50).toFixed(2)} ms, p99 ${pct(times[name], 99).toFixed(2)} ms (${times[name].length} runs)`,
  );
console.log(
  `ratio p50 ${(pct(times[b], 50) / pct(times[a], 50)).toFixed(3)}, difference ${(pct(times[b], 50) - pct(times[a], 50)).toFixed(2)} ms`,
);
