// Integration tests run the real bundles; build them first so a test never runs stale code. Once per
// vitest run: the integration and desktop projects both name this setup, and both run in one process
// (the loaded pass bundles before its CPU hogs start and sets RUNBOARD_BUNDLED too).
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export default function setup(): void {
  if (process.env.RUNBOARD_BUNDLED === '1') return;
  const root = path.resolve(import.meta.dirname, '..', '..');
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: root, stdio: 'inherit' });
  process.env.RUNBOARD_BUNDLED = '1';
}
