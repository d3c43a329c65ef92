// What `read` leaves for `click --id`: each shown element's signature (short role, title, bounds
// relative to the window), per window, in one small 0600 file per display under the state root.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Signature } from '../desktop/match.ts';

export interface WindowContext {
  windowId: number;
  title: string;
  app: string;
  ts: number;
  elements: Record<string, Signature>;
}

interface ContextFile {
  last?: number;
  windows: Record<string, WindowContext>;
}

const KEEP_WINDOWS = 16;

/** os.tmpdir() on Linux, without loading node:os (~0.3 ms of every desktop-cli command's start-up). */
function tmpdir(): string {
  return process.env.TMPDIR || process.env.TMP || process.env.TEMP || '/tmp';
}

export function contextPath(env: NodeJS.ProcessEnv = process.env): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const root = env.RUNBOARD_HOME ?? env.XDG_RUNTIME_DIR ?? path.join(tmpdir(), `runboard-${uid}`);
  const display = (env.DISPLAY ?? 'none').replace(/[^A-Za-z0-9.]/g, '_');
  return path.join(root, 'desktop-cli', `read-context-${display}.json`);
}

function load(file: string): ContextFile {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as ContextFile;
    return parsed && typeof parsed.windows === 'object' ? parsed : { windows: {} };
  } catch {
    return { windows: {} };
  }
}

export function saveContext(ctx: WindowContext, file = contextPath()): void {
  const all = load(file);
  all.windows[String(ctx.windowId)] = ctx;
  all.last = ctx.windowId;
  const ids = Object.values(all.windows)
    .sort((a, b) => b.ts - a.ts)
    .slice(KEEP_WINDOWS)
    .map((w) => String(w.windowId));
  for (const id of ids) delete all.windows[id];
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(all), { mode: 0o600 });
  renameSync(tmp, file);
}

/** The context of a window, or of the last window read when windowId is undefined. */
export function loadContext(windowId: number | undefined, file = contextPath()): WindowContext | undefined {
  const all = load(file);
  const id = windowId ?? all.last;
  return id === undefined ? undefined : all.windows[String(id)];
}

/** The most recently read window among the given ids. */
export function latestContext(windowIds: number[], file = contextPath()): WindowContext | undefined {
  const all = load(file);
  return windowIds
    .map((id) => all.windows[String(id)])
    .filter((c): c is WindowContext => c !== undefined)
    .sort((a, b) => b.ts - a.ts)[0];
}

// ---- --since: the flat elements of recent reads, one file per read, kept 60 s ----
// One file per (window, ts): a read writes its own and never parses the others (a 6,000-node page
// makes a snapshot of ~1 MB; one shared file was read, parsed and rewritten by every read).

const SNAPSHOT_TTL_S = 60;

function snapshotDir(env: NodeJS.ProcessEnv = process.env): string {
  const display = (env.DISPLAY ?? 'none').replace(/[^A-Za-z0-9.]/g, '_');
  return path.join(path.dirname(contextPath(env)), `snapshots-${display}`);
}

/** Keeps a read's flat elements under its ts (seconds); files older than 60 s are removed. */
export function saveSnapshot(windowId: number, ts: number, elements: unknown[], dir = snapshotDir()): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const now = Math.floor(Date.now() / 1000);
  for (const f of readdirSync(dir)) {
    const m = /^\d+-(\d+)\.json$/.exec(f);
    if (m && now - Number(m[1]) > SNAPSHOT_TTL_S) rmSync(path.join(dir, f), { force: true });
  }
  const file = path.join(dir, `${windowId}-${ts}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(elements), { mode: 0o600 });
  renameSync(tmp, file);
}

export function loadSnapshot<T>(windowId: number, ts: number, dir = snapshotDir()): T[] | undefined {
  if (Math.floor(Date.now() / 1000) - ts > SNAPSHOT_TTL_S) return undefined;
  try {
    const els = JSON.parse(readFileSync(path.join(dir, `${windowId}-${ts}.json`), 'utf8')) as unknown;
    return Array.isArray(els) ? (els as T[]) : undefined;
  } catch {
    return undefined;
  }
}
