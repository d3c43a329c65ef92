// Bundles each process entry point into one file under dist/ (fast start-up: one file to load, no
// module resolution at run time). The native addon stays a separate .node file, found at run time.
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { build } from 'esbuild';
import { cliBuildOptions, mcpBuildOptions, yamlBuildOptions } from '../native/scripts/bundle-cli.mjs';
import path from 'node:path';

// zod bundles every locale's error messages (~300 KB) behind one namespace export; Runboard speaks
// English only, and every run's worker pays the parse time at start-up. Keep `en`, drop the rest.
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}zod${path.sep}`)
        ? { path: 'zod-locales-en', namespace: 'rb-stub' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'rb-stub' }, () => ({
      contents: "export { default as en } from 'zod/v4/locales/en.js';",
      resolveDir: process.cwd(),
    }));
  },
};

/** One CommonJS bundle loaded on demand (a runner, a tool's MCP server): desktop-cli's options
 *  (minified CJS with an import.meta.url), plus English-only zod and the given externals. */
function cjsBundle(entry, outfile, external = []) {
  return {
    ...cliBuildOptions(outfile),
    entryPoints: [entry],
    keepNames: true,
    plugins: [zodEnglishOnly],
    external: ['*.node', ...external],
  };
}

const entries = {
  supervisor: 'supervisor/src/node/main.ts',
  worker: 'worker/src/main.ts',
  runboard: 'host/src/cli/main.ts',
};
const extra = process.argv.slice(2);
// Chunks of an earlier build (their names carry a hash) would pile up.
if (extra.length === 0 || extra.includes('supervisor'))
  rmSync('dist/supervisor-chunks', { recursive: true, force: true });
await Promise.all(
  Object.entries(entries)
    .filter(([name]) => extra.length === 0 || extra.includes(name))
    .map(([name, entry]) =>
      build({
        entryPoints: { [name]: entry },
        outdir: 'dist',
        outExtension: { '.js': '.mjs' },
        // The supervisor loads the fleet's code (BullMQ, ioredis) only in a fleet (fleet/backend.ts):
        // split into chunks, a supervisor in local mode does not parse it at start.
        ...(name === 'supervisor' ? { splitting: true, chunkNames: 'supervisor-chunks/[name]-[hash]' } : {}),
        bundle: true,
        platform: 'node',
        format: 'esm',
        target: 'node20',
        sourcemap: 'linked',
        minify: true, // less to parse at every worker start
        keepNames: true,
        plugins: [zodEnglishOnly],
        logLevel: 'warning',
        external: ['*.node'],
        // Some CommonJS dependencies call require(); give the ESM bundle one.
        banner: {
          js: "import { createRequire as __rbCreateRequire } from 'node:module'; const require = __rbCreateRequire(import.meta.url);",
        },
      }),
    ),
);

// desktop-cli: minified CommonJS (an agent's shell pays Node's start-up at every call).
if (extra.length === 0 || extra.includes('desktop-cli')) {
  await build(cliBuildOptions('dist/desktop-cli.cjs'));
  await build(mcpBuildOptions('dist/desktop-mcp.cjs')); // `desktop-cli serve`, loaded only when serving
  await build(yamlBuildOptions('dist/desktop-yaml.cjs')); // --format yaml, do, fill from stdin
}

// Runners with heavy dependencies, one CommonJS bundle each, loaded on demand by the worker
// (worker/src/runners/load.ts) so that the worker's start-up snapshot stays small.
if (extra.length === 0 || extra.includes('worker')) {
  const runners = {
    codex: 'worker/src/runners/codex.ts',
    claude: 'worker/src/runners/claude.ts',
    'computer-use': 'worker/src/runners/computer-use/index.ts',
    extract: 'worker/src/runners/extract.ts',
    judge: 'worker/src/runners/judge.ts',
    replay: 'worker/src/runners/replay/index.ts',
    reflect: 'worker/src/runners/reflect/index.ts',
  };
  await Promise.all(
    Object.entries(runners).map(([name, entry]) => build(cjsBundle(entry, `dist/runners/${name}.cjs`))),
  );
}

// The document tools' MCP server (read_document, export_document), started by an agent CLI inside
// the run's jail: one CommonJS file like desktop-mcp.cjs. playwright-core stays external (it finds
// its own files at run time); the worker package provides it.
if (extra.length === 0 || extra.includes('worker') || extra.includes('documents')) {
  await build(cjsBundle('worker/src/tools/documents/bin.ts', 'dist/documents-mcp.cjs', ['playwright-core']));
  // The same tools for the computer-use loop, loaded at a run's first document tool call.
  await build(
    cjsBundle('worker/src/tools/documents/call.ts', 'dist/documents-tools.cjs', ['playwright-core']),
  );
}

// The agent CLIs' permission hook (claude's and codex's PreToolUse), run by the CLI inside the jail
// before each file or shell tool call: small, it starts at every such call.
if (extra.length === 0 || extra.includes('worker')) {
  await build(cjsBundle('worker/src/runners/agent-hook.ts', 'dist/agent-hook.cjs'));
}

// The worker again, as a V8 start-up snapshot: every run starts a worker, and with the snapshot its
// code is already loaded and initialised when Node starts (docs/decisions.md). The snapshot belongs
// to this exact Node binary; the supervisor probes it at start and falls back to dist/worker.mjs.
if (extra.length === 0 || extra.includes('worker')) {
  await build({
    entryPoints: [entries.worker],
    outfile: 'dist/worker.snapshot.cjs',
    logOverride: { 'empty-import-meta': 'silent' }, // agent-cli.ts falls back to __filename there
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    plugins: [zodEnglishOnly],
    logLevel: 'warning',
    // import.meta is empty in CommonJS; code that makes a require from its URL (the native addon's
    // loader) gets the snapshot script's own file URL.
    define: { 'import.meta.url': '__rbImportMetaUrl' },
    banner: { js: "var __rbImportMetaUrl = require('url').pathToFileURL(__filename).href;" },
  });
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(
    process.execPath,
    ['--snapshot-blob', 'dist/worker.blob', '--build-snapshot', 'dist/worker.snapshot.cjs'],
    {
      encoding: 'utf8',
    },
  );
  if (r.status !== 0) {
    console.warn(
      `bundle: no worker start-up snapshot (runs start a little slower): ${r.stderr.trim().split('\n').pop()}`,
    );
  }
}

// The board's renderer: one browser bundle + its page and styles, served by `runboard serve` and
// loaded by the Electron shell.
if (extra.length === 0 || extra.includes('renderer')) {
  mkdirSync('dist/renderer', { recursive: true });
  await build({
    entryPoints: ['host/src/renderer/main.tsx'],
    outfile: 'dist/renderer/app.js',
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'chrome120',
    jsx: 'automatic',
    minify: true,
    sourcemap: 'linked',
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  for (const f of ['index.html', 'app.css', 'favicon.svg'])
    copyFileSync(`host/src/renderer/${f}`, `dist/renderer/${f}`);
}

// The Electron shell (only run where an Electron binary exists): ESM main, sandboxed CJS preload.
if (extra.length === 0 || extra.includes('electron')) {
  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    external: ['electron', '*.node'],
  };
  await build({
    ...common,
    entryPoints: ['host/src/electron/main.ts'],
    outfile: 'dist/electron-main.mjs',
    format: 'esm',
    banner: {
      js: "import { createRequire as __rbCreateRequire } from 'node:module'; const require = __rbCreateRequire(import.meta.url);",
    },
  });
  await build({
    ...common,
    entryPoints: ['host/src/electron/preload.ts'],
    outfile: 'dist/electron-preload.cjs',
    format: 'cjs',
  });
}
