// Proves the layer rules of eslint.config.js still hold: lints small probe files, placed (virtually)
// in each layer, and fails when a forbidden import is not reported or an allowed one is. Runs in
// the lint step of scripts/test.sh, so a rule that silently stops matching (a renamed folder, a
// plugin upgrade, a resolver that no longer resolves) fails CI instead of letting imports through.
// It also keeps the import graph of the workspaces' sources free of circles (see importCircles below).
import { ESLint } from 'eslint';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(import.meta.dirname, '..');

/** [file the probe pretends to be, its source]: each must be refused. */
const refused = [
  // The renderer is untrusted: no runtime values from the supervisor or native, no Node.
  ['host/src/renderer/probe.ts', "import { ErrorCodes } from '@runboard/supervisor/protocol';"],
  ['host/src/renderer/probe.ts', "import { ErrorCodes } from '@runboard/supervisor/protocol/data';"],
  [
    'host/src/renderer/probe.ts',
    "import type { RunEvent } from '@runboard/supervisor/protocol'; export type { RunEvent };",
  ],
  ['host/src/renderer/probe.ts', "import { statePaths } from '@runboard/supervisor/paths';"],
  ['host/src/renderer/probe.ts', "import { validateGrant } from '@runboard/supervisor/grants';"],
  ['host/src/renderer/probe.ts', "import { Desktop } from '@runboard/native';"],
  ['host/src/renderer/probe.ts', "import net from 'net';"],
  ['host/src/renderer/probe.ts', "import os from 'node:os';"],
  ['host/src/renderer/probe.ts', "import { ipcRenderer } from 'electron';"],
  ['host/src/renderer/probe.ts', "import { loadProject } from '../core/project.ts';"],
  ['host/src/renderer/probe.ts', "export { loadProject } from '../core/project.ts';"],
  ['host/src/renderer/probe.ts', "const m = await import('../core/project.ts'); export { m };"],
  ['host/src/renderer/probe.ts', "const m = await import('node:fs'); export { m };"],
  ['host/src/shared/probe.ts', "import fs from 'node:fs'; export { fs };"],
  ['host/src/shared/probe.ts', "import { App } from '../renderer/App.tsx'; export { App };"],
  [
    'host/src/shared/probe.ts',
    "import { ErrorCodes } from '@runboard/supervisor/protocol/data'; export { ErrorCodes };",
  ],
  ['host/src/shared/probe.ts', "import { loadProject } from '../core/project.ts'; export { loadProject };"],
  // The protocol module depends on nothing but vscode-jsonrpc and zod.
  ['supervisor/src/protocol/probe.ts', "import fs from 'node:fs'; export { fs };"],
  ['supervisor/src/protocol/probe.ts', "import fs from 'fs'; export { fs };"],
  ['supervisor/src/protocol/probe.ts', "import { execa } from 'execa'; export { execa };"],
  [
    'supervisor/src/protocol/probe.ts',
    "import { statePaths } from '../common/paths.ts'; export { statePaths };",
  ],
  // supervisor/src/common is shared with the host: no supervisor process code.
  ['supervisor/src/common/probe.ts', "import { Registry } from '../node/registry.ts'; export { Registry };"],
  ['supervisor/src/common/probe.ts', "const m = await import('../node/registry.ts'); export { m };"],
  // Nobody imports native internals; native imports nothing of ours.
  [
    'worker/src/probe.ts',
    "import { compact } from '../../native/src/desktop/compact.ts'; export { compact };",
  ],
  [
    'host/src/core/probe.ts',
    "import { loadBinding } from '../../../native/src/binding.ts'; export { loadBinding };",
  ],
  [
    'native/src/probe.ts',
    "import { ErrorCodes } from '@runboard/supervisor/protocol'; export { ErrorCodes };",
  ],
  // The project model (packages/project) is pure: of ours only the protocol's data and native's
  // regular-file reader; native and the worker import only its recording format; the protocol none of it.
  [
    'packages/project/src/probe.ts',
    "import { Registry } from '../../../supervisor/src/node/registry.ts'; export { Registry };",
  ],
  [
    'packages/project/src/probe.ts',
    "import { statePaths } from '@runboard/supervisor/paths'; export { statePaths };",
  ],
  [
    'packages/project/src/probe.ts',
    "import { connect } from '@runboard/supervisor/protocol'; export { connect };",
  ],
  ['packages/project/src/probe.ts', "import { Desktop } from '@runboard/native'; export { Desktop };"],
  [
    'packages/project/src/probe.ts',
    "import { loadProject } from '../../../host/src/core/project.ts'; export { loadProject };",
  ],
  ['packages/project/src/probe.ts', "const m = await import('../../../worker/src/main.ts'); export { m };"],
  ['packages/project/src/probe.ts', "import { execa } from 'execa'; export { execa };"],
  ['native/src/probe.ts', "import { parseCard } from '@runboard/project/project'; export { parseCard };"],
  ['worker/src/probe.ts', "import { parseCard } from '@runboard/project/project'; export { parseCard };"],
  [
    'supervisor/src/protocol/probe.ts',
    "import { parseCard } from '@runboard/project/project'; export { parseCard };",
  ],
  [
    'host/src/renderer/probe.ts',
    "import { parseCard } from '@runboard/project/project'; export { parseCard };",
  ],
  // The worker sees the supervisor only through its protocol; the host never sees the worker.
  ['worker/src/probe.ts', "import { statePaths } from '@runboard/supervisor/paths'; export { statePaths };"],
  [
    'worker/src/probe.ts',
    "import { Registry } from '../../supervisor/src/node/registry.ts'; export { Registry };",
  ],
  [
    'host/src/core/probe.ts',
    "import { runWorker } from '../../../worker/src/main.ts'; export { runWorker };",
  ],
  [
    'host/src/core/probe.ts',
    "import { Registry } from '../../../supervisor/src/node/registry.ts'; export { Registry };",
  ],
  // host core never imports the renderer, a shell or electron.
  ['host/src/core/probe.ts', "import { App } from '../renderer/App.tsx'; export { App };"],
  ['host/src/core/probe.ts', "import { serve } from '../cli/serve.ts'; export { serve };"],
  ['host/src/core/probe.ts', "import { app } from 'electron'; export { app };"],
  ['host/src/core/probe.ts', "const e = await import('electron'); export { e };"],
  // require and createRequire load like import.
  ['host/src/core/probe.ts', "const m = require('../renderer/App.tsx'); export { m };"],
  [
    'host/src/core/probe.ts',
    "import { createRequire } from 'node:module'; const m = createRequire(import.meta.url)('../renderer/App.tsx'); export { m };",
  ],
  [
    'host/src/core/probe.ts',
    "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); export const m = require('electron');",
  ],
  [
    'worker/src/probe.ts',
    "import { createRequire } from 'node:module'; const load = createRequire(import.meta.url); export const m = load('../../host/src/core/project.ts');",
  ],
  // The worker's rooms: a runner imports no other runner's room; the model stack no desktop, no runner;
  // nothing but a runner imports a runner room. The worker's own rules hold in every room.
  ['worker/src/runners/replay/probe.ts', "import { Loop } from '../computer-use/loop.ts'; export { Loop };"],
  ['worker/src/runners/reflect/probe.ts', "import { Replay } from '../replay/replay.ts'; export { Replay };"],
  ['worker/src/models/probe.ts', "import { Screen } from '../desktop/screen.ts'; export { Screen };"],
  ['worker/src/models/probe.ts', "import { desktop } from '@runboard/native'; export { desktop };"],
  ['worker/src/models/probe.ts', "import { Loop } from '../runners/computer-use/loop.ts'; export { Loop };"],
  [
    'worker/src/desktop/probe.ts',
    "import { loadPlan } from '../runners/replay/plan.ts'; export { loadPlan };",
  ],
  ['worker/src/runners/probe.ts', "import { loadPlan } from './replay/plan.ts'; export { loadPlan };"],
  [
    'worker/src/desktop/probe.ts',
    "import { statePaths } from '@runboard/supervisor/paths'; export { statePaths };",
  ],
  ['worker/src/models/probe.ts', "import { App } from '../../../host/src/renderer/App.tsx'; export { App };"],
  [
    'host/src/core/probe.ts',
    "import { ModelClient } from '../../../worker/src/models/client.ts'; export { ModelClient };",
  ],
];

/** Imports the rules must keep allowing (so that they are not simply refusing everything). */
const allowed = [
  [
    'host/src/renderer/probe.ts',
    "import type { RunEvent } from '@runboard/supervisor/protocol/data'; export type { RunEvent };",
  ],
  [
    'host/src/renderer/probe.ts',
    "import type { StatePaths } from '@runboard/supervisor/paths'; export type { StatePaths };",
  ],
  ['host/src/renderer/probe.ts', "import { useState } from 'react'; export { useState };"],
  [
    'host/src/core/probe.ts',
    "import { ErrorCodes } from '@runboard/supervisor/protocol'; export { ErrorCodes };",
  ],
  [
    'host/src/core/probe.ts',
    "import { statePaths } from '@runboard/supervisor/paths'; export { statePaths };",
  ],
  [
    'worker/src/probe.ts',
    "import { ErrorCodes } from '@runboard/supervisor/protocol'; export { ErrorCodes };",
  ],
  ['worker/src/probe.ts', "import { Desktop } from '@runboard/native'; export { Desktop };"],
  ['worker/src/runners/replay/probe.ts', "import { loadPlan } from './plan.ts'; export { loadPlan };"],
  [
    'worker/src/runners/replay/probe.ts',
    "import { onDesktop } from '../../desktop/session.ts'; export { onDesktop };",
  ],
  [
    'worker/src/runners/replay/probe.ts',
    "import { ModelClient } from '../../models/client.ts'; export { ModelClient };",
  ],
  [
    'worker/src/runners/replay/probe.ts',
    "import type { Runner } from '../runner.ts'; export type { Runner };",
  ],
  ['worker/src/desktop/probe.ts', "import { fill } from '../models/prompt.ts'; export { fill };"],
  ['worker/src/desktop/probe.ts', "import { Desktop } from '@runboard/native'; export { Desktop };"],
  ['supervisor/src/protocol/probe.ts', "import * as z from 'zod/mini'; export { z };"],
  ['supervisor/src/node/probe.ts', "import { statePaths } from '../common/paths.ts'; export { statePaths };"],
  // The project model is imported by the host and the supervisor; native and the worker see its recording format.
  ['host/src/core/probe.ts', "import { parseCard } from '@runboard/project/project'; export { parseCard };"],
  [
    'supervisor/src/node/probe.ts',
    "import { loadCard } from '@runboard/project/project'; export { loadCard };",
  ],
  [
    'host/src/renderer/probe.ts',
    "import type { Card } from '@runboard/project/project'; export type { Card };",
  ],
  [
    'packages/project/src/probe.ts',
    "import type { FlowSpec } from '@runboard/supervisor/protocol/data'; export type { FlowSpec };",
  ],
  [
    'packages/project/src/probe.ts',
    "import { readRegularFileSync } from '@runboard/native/regular-file'; export { readRegularFileSync };",
  ],
  [
    'native/src/probe.ts',
    "import { listRecordings } from '@runboard/project/recording'; export { listRecordings };",
  ],
  [
    'worker/src/probe.ts',
    "import type { ManifestStep } from '@runboard/project/recording'; export type { ManifestStep };",
  ],
];

const layerRules = new Set(['boundaries/dependencies', 'no-restricted-syntax']);
// The probes are not files of any tsconfig: lint them without type information (the layer rules need none).
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    files: ['**/*.{ts,tsx}'],
    languageOptions: { parserOptions: { project: null, projectService: false } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/no-misused-promises': 'off',
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/no-unnecessary-type-assertion': 'off',
    },
  },
});
const failures = [];
for (const [file, code, mustRefuse] of [
  ...refused.map(([f, c]) => [f, c, true]),
  ...allowed.map(([f, c]) => [f, c, false]),
]) {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  const hits = (result?.messages ?? []).filter((m) => m.ruleId && layerRules.has(m.ruleId));
  const fatal = (result?.messages ?? []).filter((m) => m.fatal);
  if (fatal.length) failures.push(`${file}: ${code}\n    does not parse: ${fatal[0].message}`);
  else if (mustRefuse && hits.length === 0) failures.push(`${file}: ${code}\n    was NOT refused`);
  else if (!mustRefuse && hits.length > 0)
    failures.push(`${file}: ${code}\n    was refused: ${hits[0].message}`);
}
/**
 * Import circles among the sources of the workspaces (a file that, through its imports, imports
 * itself), counting type-only imports, re-exports and import() too: each circle as its files, found as
 * the strongly connected components of the graph (Tarjan). Imports are read by the TypeScript
 * compiler's own scanner (ts.preProcessFile); relative specifiers and @runboard/* entry points (each
 * package's `exports`) are followed, other packages are not ours.
 */
function importCircles(workspaces = ['supervisor', 'worker', 'host', 'native', 'packages/project']) {
  const entries = new Map();
  for (const w of workspaces) {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, w, 'package.json'), 'utf8'));
    for (const [sub, target] of Object.entries(pkg.exports ?? {}))
      entries.set(pkg.name + sub.slice(1), path.join(root, w, target));
  }
  const files = workspaces.flatMap((w) =>
    fs
      .readdirSync(path.join(root, w, 'src'), { recursive: true })
      .filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts'))
      .map((f) => path.join(root, w, 'src', f)),
  );
  const known = new Set(files);
  const graph = new Map();
  for (const f of files) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true);
    const to = importedFiles.map(({ fileName: s }) =>
      s.startsWith('.') ? path.resolve(path.dirname(f), s) : entries.get(s),
    );
    graph.set(f, [...new Set(to.filter((t) => known.has(t)))]);
  }
  const index = new Map();
  const low = new Map();
  const stack = [];
  const circles = [];
  const visit = (v) => {
    index.set(v, index.size);
    low.set(v, index.get(v));
    stack.push(v);
    for (const w of graph.get(v)) {
      if (!index.has(w)) visit(w);
      if (stack.includes(w)) low.set(v, Math.min(low.get(v), low.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const component = stack.splice(stack.indexOf(v));
    if (component.length > 1 || graph.get(v).includes(v))
      circles.push(component.map((f) => path.relative(root, f)));
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return { files: files.length, circles };
}

const { files: scanned, circles } = importCircles();
for (const c of circles)
  failures.push(
    `import circle: ${c.join(' -> ')}\n    move what they share into a module of its own that both import (docs/decisions.md)`,
  );

if (failures.length) {
  console.error(
    `check-boundaries: the layer rules of eslint.config.js or the import graph do not hold:\n  ${failures.join('\n  ')}`,
  );
  process.exit(1);
}
console.log(
  `check-boundaries: ${refused.length} forbidden imports refused, ${allowed.length} allowed ones accepted, ${scanned} source files with no import circle`,
);
