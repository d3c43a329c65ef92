// Shared by bench/agents.mjs and bench/cu.mjs: bundles a TypeScript benchmark that reuses the test
// fixtures (once, with esbuild, after the dist/ bundles), then runs it with the given arguments.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';

// CommonJS has no import.meta: give each of our modules its own real folder and URL (one value for all
// would send e.g. native/scripts/bundle-cli.mjs looking for its sources under tests/).
const importMeta = {
  name: 'import-meta',
  setup(b) {
    b.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => {
      if (args.path.includes('node_modules')) return undefined;
      const code = (await readFile(args.path, 'utf8')).replace(
        /(?<!['"])\bimport\.meta\.(dirname|url)\b(?!['"])/g,
        (_m, what) =>
          JSON.stringify(what === 'url' ? pathToFileURL(args.path).href : path.dirname(args.path)),
      );
      return { contents: code, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
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
    plugins: [importMeta],
  });
  execFileSync(process.execPath, [out, ...args], { cwd: root, stdio: 'inherit' });
}
