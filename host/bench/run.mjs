// Runs the board benchmarks (not tests): bundles dispatch.ts, then runs it and browser.mjs.
// Usage: node scripts/bundle.mjs && node host/bench/run.mjs
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';

const here = import.meta.dirname;
const out = path.join(here, '..', '..', 'dist', 'bench-dispatch.mjs');
await build({
  entryPoints: [path.join(here, 'dispatch.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
  external: ['*.node'],
  banner: {
    js: "import { createRequire as __rbCreateRequire } from 'node:module'; const require = __rbCreateRequire(import.meta.url);",
  },
});
const which = process.argv[2];
if (!which || which === 'dispatch') execFileSync(process.execPath, [out], { stdio: 'inherit' });
if (!which || which === 'browser')
  execFileSync(process.execPath, [path.join(here, 'browser.mjs')], { stdio: 'inherit' });
