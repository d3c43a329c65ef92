// Shared by bench/agents.mjs and bench/cu.mjs: bundles a TypeScript benchmark that reuses the test
// fixtures (once, with esbuild, after the dist/ bundles), then runs it with the given arguments.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const importMetaDirname = {
  name: 'import-meta-dirname',
  setup(b) {
    b.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('import.meta.dirname')) return undefined;
      return {
        contents: text.replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path))),
        loader: args.path.endsWith('.ts') ? 'ts' : 'js',
      };
    });
  },
};

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
    // The fixtures use import.meta.dirname, which a CJS bundle does not have: each file gets its own
    // real folder (one folder for all broke native/scripts/bundle-cli.mjs, which the desktop helper runs).
    plugins: [importMetaDirname],
    define: { 'import.meta.url': '__rbUrl' },
    banner: {
      js: `const __rbUrl = require('node:url').pathToFileURL(${JSON.stringify(path.join(root, 'dist', 'x.js'))}).href;`,
    },
  });
  execFileSync(process.execPath, [out, ...args], { cwd: root, stdio: 'inherit' });
}
