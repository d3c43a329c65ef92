// Bundles desktop-cli into one file (fast start-up: no module resolution at run time). The addon stays
// a separate .node file, found at run time from the bundle's location (src/binding.ts).
// Usage: node native/scripts/bundle-cli.mjs [outfile]   (default native/dist/desktop-cli.mjs)
import { build } from 'esbuild';
import path from 'node:path';

const here = import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname);
const outfile = process.argv[2] ?? path.join(here, '..', 'dist', 'desktop-cli.mjs');
await build({
  entryPoints: [path.join(here, '..', 'src', 'cli', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  logLevel: 'warning',
  external: ['*.node'],
});
