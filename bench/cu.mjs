// Runs bench/cu-main.ts (TypeScript, it reuses the test fixtures): bundled once with esbuild, then run.
// Usage: node bench/cu.mjs [steps per run] [runs per case]   (needs the dist/ bundles: node scripts/bundle.mjs)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
const out = path.join(root, 'dist', 'bench-cu.cjs');
await build({
  entryPoints: [path.join(root, 'bench', 'cu-main.ts')],
  outfile: out,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  logLevel: 'warning',
  external: ['*.node', 'esbuild'],
  // The fixtures use import.meta.dirname; in a CJS bundle it is the bundle's own folder's parent's
  // files that matter, so give it the real source folder.
  define: {
    'import.meta.dirname': JSON.stringify(path.join(root, 'tests', 'helpers')),
    'import.meta.url': '__rbUrl',
  },
  banner: {
    js: `const __rbUrl = require('node:url').pathToFileURL(${JSON.stringify(path.join(root, 'dist', 'x.js'))}).href;`,
  },
});
execFileSync(process.execPath, [out, ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
