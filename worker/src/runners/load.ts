/**
 * Runners with heavy dependencies (model SDKs, the desktop addon) are bundles of their own
 * (`dist/runners/<name>.cjs`, built by scripts/bundle.mjs), loaded only by the runs that need them: every
 * run's worker starts from the small start-up snapshot of the core, and a `command` run never pays for
 * what a computer-use run needs.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Runner } from './runner.ts';

/** The worker bundle's own file: import.meta.url in the ES module, __filename in the snapshot's script. */
function selfFile(): string {
  const url = (import.meta as { url?: string }).url;
  if (url) return fileURLToPath(url);
  return typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'worker.mjs');
}

/**
 * A file of dist/ (the folder of worker.mjs) found from this bundle: the worker's own folder, or its
 * parent for the runner bundles in dist/runners/. Null when it is not built.
 */
export function distFile(name: string): string | null {
  const dir = path.dirname(selfFile());
  return [path.join(dir, name), path.join(dir, '..', name)].find((f) => existsSync(f)) ?? null;
}

/** A CommonJS bundle of dist/, loaded on first use (see distFile). */
export function loadBundle<T>(name: string): T {
  const file = distFile(name);
  if (!file) throw new Error(`${name} is not built (dist/${name}); run scripts/setup.sh`);
  return createRequire(selfFile())(file) as T;
}

export function loadRunner(name: string, exportName: string): Runner {
  const file = path.join(path.dirname(selfFile()), 'runners', `${name}.cjs`);
  if (!existsSync(file)) throw new Error(`the ${name} runner is not built (${file}); run scripts/setup.sh`);
  const mod = createRequire(selfFile())(file) as Record<string, new () => Runner>;
  const Ctor = mod[exportName];
  if (!Ctor) throw new Error(`${file} does not export ${exportName}`);
  return new Ctor();
}
