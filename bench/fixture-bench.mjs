// Shared by bench/agents.mjs and bench/cu.mjs: bundles a TypeScript benchmark that reuses the test
// fixtures (once, with esbuild, after the dist/ bundles), then runs it with the given arguments.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
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
    external: ['*.node', 'esbuild', 'playwright-core'], // playwright-core finds its files from its own folder
    // The fixtures use import.meta.dirname / import.meta.url, which a CJS bundle does not have: give each
    // of our source files its own real location (one define for all would point every file at one folder).
    plugins: [ownLocation(root)],
  });
  execFileSync(process.execPath, [out, ...args], { cwd: root, stdio: 'inherit' });
}

/** Replaces import.meta.dirname/url in the project's own sources by the file's real location. */
function ownLocation(root) {
  return {
    name: 'own-location',
    setup(b) {
      b.onLoad({ filter: /\.(ts|mjs)$/ }, async (args) => {
        if (!args.path.startsWith(root) || args.path.includes('node_modules')) return undefined;
        const text = await readFile(args.path, 'utf8');
        if (!text.includes('import.meta')) return undefined;
        // Not inside quotes: bundle-cli.mjs names `import.meta.url` as a string in its own define.
        const contents = text
          .replace(/(?<!['"])import\.meta\.dirname(?!['"])/g, JSON.stringify(path.dirname(args.path)))
          .replace(/(?<!['"])import\.meta\.url(?!['"])/g, JSON.stringify(pathToFileURL(args.path).href));
        return { contents, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
      });
    },
  };
}
