// Shared by bench/agents.mjs and bench/cu.mjs: bundles a TypeScript benchmark that reuses the test
// fixtures (once, with esbuild, after the dist/ bundles), then runs it with the given arguments.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { build } from 'esbuild';

export async function runFixtureBench(name, args) {
  const root = path.resolve(import.meta.dirname, '..');
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  const out = path.join(root, 'dist', `bench-${name}.cjs`);
  await build({
    entryPoints: [path.join(root, 'bench', `${name}-main.ts`)],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
    external: ['*.node', 'esbuild'],
    // The fixtures use import.meta.dirname; in a CJS bundle give them the real source folder.
    define: {
      'import.meta.dirname': JSON.stringify(path.join(root, 'tests', 'helpers')),
      'import.meta.url': '__rbUrl',
    },
    banner: {
      js: `const __rbUrl = require('node:url').pathToFileURL(${JSON.stringify(path.join(root, 'dist', 'x.js'))}).href;`,
    },
  });
  execFileSync(process.execPath, [out, ...args], { cwd: root, stdio: 'inherit' });
}
