// Bundles desktop-cli into one minified CommonJS file: an agent's shell pays Node's start-up at every
// call, and a CJS bundle loads ~8 ms faster than the same code as an ES module here. The addon stays a
// separate .node file, found at run time from the bundle's location (src/binding.ts).
// Usage: node native/scripts/bundle-cli.mjs [outfile]   (default native/dist/desktop-cli.cjs)
import { build } from 'esbuild';
import path from 'node:path';

const here = import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname);

/** esbuild options for the CLI bundle (shared with the tests, which bundle it into a temp dir). */
export function cliBuildOptions(outfile) {
  return {
    entryPoints: [path.join(here, '..', 'src', 'cli', 'main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    logLevel: 'warning',
    // import.meta.url, which CommonJS does not have: the bundle's own file URL, made when first asked
    // for (desktop-cli's commands never ask: binding.ts takes __dirname in CommonJS).
    define: { 'import.meta.url': '__rbMeta.url' },
    banner: {
      js: 'const __rbMeta = { get url() { return require("url").pathToFileURL(__filename).href; } };',
    },
  };
}

/** esbuild options for `desktop-cli serve`'s MCP server, a bundle of its own next to the CLI's. */
export function mcpBuildOptions(outfile) {
  return { ...cliBuildOptions(outfile), entryPoints: [path.join(here, '..', 'src', 'cli', 'mcp.ts')] };
}

/** esbuild options for the YAML bundle (`--format yaml`, `do`, `fill` from stdin), next to the CLI's. */
export function yamlBuildOptions(outfile) {
  return { ...cliBuildOptions(outfile), entryPoints: [path.join(here, '..', 'src', 'cli', 'yaml.ts')] };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.join(here, 'bundle-cli.mjs')) {
  const out = process.argv[2] ?? path.join(here, '..', 'dist', 'desktop-cli.cjs');
  // No top-level await: the benchmarks bundle this module (through the test helpers) as CommonJS.
  void build(cliBuildOptions(out))
    .then(() => build(mcpBuildOptions(path.join(path.dirname(out), 'desktop-mcp.cjs'))))
    .then(() => build(yamlBuildOptions(path.join(path.dirname(out), 'desktop-yaml.cjs'))));
}
