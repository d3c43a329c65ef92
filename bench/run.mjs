// Runs a TypeScript benchmark: bundles it with esbuild into a temp file, then runs it with node.
//   node bench/run.mjs [bench/core.ts] [-- args]
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const entry = process.argv[2] && !process.argv[2].startsWith('-') ? process.argv[2] : 'bench/core.ts';
const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'rb-bench-')), 'bench.mjs');
await build({
  entryPoints: [entry],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['*.node'],
  banner: { js: "import { createRequire as __c } from 'node:module'; const require = __c(import.meta.url);" },
  logLevel: 'warning',
});
const r = spawnSync(process.execPath, [out, ...process.argv.slice(3)], {
  stdio: 'inherit',
  env: {
    ...process.env,
    RUNBOARD_DIST: path.resolve('dist'),
    RUNBOARD_NATIVE_DIR: path.resolve('native/build/Release'),
  },
});
process.exit(r.status ?? 1);
