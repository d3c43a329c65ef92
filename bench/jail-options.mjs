// What each of the jail's options costs a `command` run (issue 27): the jail alone, run as the
// supervisor runs it (`--max-procs --write --hide --ro-mounts --private-tmp 1g --init -- /bin/sh -c true`),
// with and without the memory cgroup (`--memory`) and the reads allow-list (`--read` ×N), a root
// run's covers of /etc's root-only entries (`--blank`, when run as root), and
// optionally a build from before (OLD_JAIL=/path/to/runboard-jail, run without the two options it lacks).
// Variants alternate in blocks so that a drift of the machine's speed hits all alike. Wall time of the
// whole jail process (min, p10, p50: on a loaded machine only the low ones mean anything) and the CPU
// of the jail with its children.
//
// Usage: [OLD_JAIL=…] node bench/jail-options.mjs [runs per variant, default 200] [block, default 10]
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const runs = Number(process.argv[2] ?? 200);
const block = Number(process.argv[3] ?? 10);
const root = path.resolve(import.meta.dirname, '..');
const jail = path.join(root, 'native', 'build', 'Release', 'runboard-jail');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rb-jail-options-'));
for (const d of ['ws', 'state/scratch/run', 'state/run']) mkdirSync(path.join(tmp, d), { recursive: true });
writeFileSync(path.join(tmp, 'card.md'), '# bench\n');
const base = [
  ...['--max-procs', '1024', '--write', path.join(tmp, 'ws'), '--write', path.join(tmp, 'state/scratch/run')],
  ...['--hide', path.join(tmp, 'state'), '--hide', path.join(tmp, 'state/run')],
];
const tail = ['--ro-mounts', '--private-tmp', '1g', '--init', '--', '/bin/sh', '-c', 'true'];
const memory = ['--memory', String(Math.floor(os.totalmem() / 2))];
// what the supervisor gives a command run: the system's trees, the install, the workspace and the card
const reads = [
  ...['/usr', '/etc', '/opt', '/proc', '/sys', '/var/cache/fontconfig', '/var/lib/dbus/machine-id', root],
  ...[path.join(tmp, 'ws'), path.join(tmp, 'card.md'), path.join(tmp, 'card')],
].flatMap((r) => ['--read', r]);
// what a root supervisor adds: /etc's entries that others may not read (reads.ts rootOnlyEntries)
const rootOnly = [];
const walk = (d) => {
  for (const name of readdirSync(d)) {
    const p = path.join(d, name);
    const st = lstatSync(p);
    if (!st.isFile() && !st.isDirectory()) continue;
    if ((st.mode & 0o004) === 0) rootOnly.push(p);
    else if (st.isDirectory()) walk(p);
  }
};
if (process.getuid() === 0) walk('/etc');
const blank = rootOnly.flatMap((b) => ['--blank', b]);
const variants = {
  ...(process.env.OLD_JAIL
    ? { 'OLD_JAIL (no --memory, --read)': [process.env.OLD_JAIL, [...base, ...tail]] }
    : {}),
  neither: [jail, [...base, ...tail]],
  '--memory': [jail, [...base, ...memory, ...tail]],
  '--read': [jail, [...base, ...reads, ...tail]],
  '--memory --read (a run)': [jail, [...base, ...memory, ...reads, ...tail]],
  ...(blank.length
    ? {
        [`+ --blank ×${rootOnly.length} (a root run)`]: [
          jail,
          [...base, ...memory, ...reads, ...blank, ...tail],
        ],
      }
    : {}),
};
const childrenCpuMs = () => {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
};
const took = Object.fromEntries(Object.keys(variants).map((k) => [k, { ms: [], cpu: 0 }]));
for (let done = 0; done < runs; done += block)
  for (const [name, [bin, args]] of Object.entries(variants)) {
    const c0 = childrenCpuMs();
    for (let i = 0; i < block; i++) {
      const t0 = process.hrtime.bigint();
      const r = spawnSync(bin, ['--status-fd', '1', ...args], { encoding: 'utf8' });
      took[name].ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (r.status !== 0) throw new Error(`${name}: the jail failed: ${r.stderr}${r.stdout}`);
    }
    took[name].cpu += childrenCpuMs() - c0;
  }
rmSync(tmp, { recursive: true, force: true });
const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
for (const [name, t] of Object.entries(took))
  console.log(
    `${name.padEnd(32)} min ${pct(t.ms, 0).toFixed(2)}  p10 ${pct(t.ms, 10).toFixed(2)}  p50 ${pct(t.ms, 50).toFixed(2)} ms` +
      `  CPU per jail ${(t.cpu / t.ms.length).toFixed(2)} ms (${t.ms.length} runs)`,
  );
