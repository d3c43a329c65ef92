// Runs the desktop benchmark inside a fresh test desktop: bundles the bench and desktop-cli, then
// scripts/desktop-session.sh run -- node bench.mjs. Prints markdown tables (docs/bench-desktop.md).
// Usage: node native/bench/run.mjs [desktop | recorder | video | heavy]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { cliBuildOptions, yamlBuildOptions } from '../scripts/bundle-cli.mjs';

const here = import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname);
const repo = path.resolve(here, '..', '..');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-bench-build-'));
const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning' };
const which = process.argv[2] ?? 'desktop';
if (!['desktop', 'recorder', 'video', 'heavy'].includes(which))
  throw new Error(`unknown bench "${which}" (desktop, recorder, video, heavy)`);
await build({
  ...common,
  entryPoints: [path.join(here, `${which}.bench.ts`)],
  outfile: path.join(tmp, 'bench.mjs'),
});
await build(cliBuildOptions(path.join(tmp, 'desktop-cli.cjs')));
await build(yamlBuildOptions(path.join(tmp, 'desktop-yaml.cjs'))); // --format yaml
const env = { ...process.env, RUNBOARD_NATIVE_DIR: path.join(repo, 'native/build/Release') };
// ~75 ms of CA parsing at every node start-up here (DESKTOP-NOTES); workers run trimmed too. The bench
// still measures the CLI started with it, as a person's shell may (BENCH_NODE_EXTRA_CA_CERTS).
if (env.NODE_EXTRA_CA_CERTS) env.BENCH_NODE_EXTRA_CA_CERTS = env.NODE_EXTRA_CA_CERTS;
delete env.NODE_EXTRA_CA_CERTS;
const r = spawnSync(
  'bash',
  [
    path.join(repo, 'scripts/desktop-session.sh'),
    'run',
    '--',
    process.execPath,
    path.join(tmp, 'bench.mjs'),
    path.join(tmp, 'desktop-cli.cjs'),
    repo,
  ],
  { env, stdio: 'inherit' },
);
rmSync(tmp, { recursive: true, force: true });
process.exit(r.status ?? 1);
