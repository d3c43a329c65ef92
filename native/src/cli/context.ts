// What `read` leaves for `click --id`: each shown element's signature (its platform role and whether it
// is editable, from which its short role is made when it is looked up; title; bounds relative to the
// window; the addon writes them, element_json.h), per window, in a 0600 file of its own per display under the state root, with
// a small index (the windows' read times and the last one read). A read writes its window's file and the
// index, and never parses the other windows' (one shared file was read, parsed and rewritten by every
// read: ~20 ms of a 6,000-node page's read; docs/bench-desktop.md, session 17).
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { shortRole } from '../desktop/compact.ts';
import type { Signature } from '../desktop/match.ts';
import type { Rect } from '../desktop/types.ts';

/** A signature as a read leaves it (the addon's `p`/`e`), or as reads before session 18 did (`r`). */
export type StoredSignature = Signature | { p: string; e?: 1; t: string; b: Rect };

/** The signature a stored one stands for: its short role made from the platform role when needed. */
export function signatureOf(s: StoredSignature): Signature {
  return 'r' in s ? s : { r: shortRole(s.p, s.e === 1), t: s.t, b: s.b };
}

export interface WindowContext {
  windowId: number;
  title: string;
  app: string;
  ts: number;
  elements: Record<string, StoredSignature>;
}

interface ContextIndex {
  last?: number;
  windows: Record<string, number>; // window id -> ts of its last read
}

const KEEP_WINDOWS = 16;

/** os.tmpdir() on Linux, without loading node:os (~0.3 ms of every desktop-cli command's start-up). */
function tmpdir(): string {
  return process.env.TMPDIR || process.env.TMP || process.env.TEMP || '/tmp';
}

/**
 * Where desktop-cli keeps its state: `$RUNBOARD_HOME`, else the runtime folder when desktop-cli can keep
 * its folder there, else `<tmp>/runboard-<uid>`. A run on the person's display sees their runtime folder
 * read-only, with only the buses in it (decision 122): its reads keep their context in its own tmp.
 */
function stateRoot(env: NodeJS.ProcessEnv): string {
  if (env.RUNBOARD_HOME) return env.RUNBOARD_HOME;
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && path.isAbsolute(runtime) && canKeep(path.join(runtime, 'desktop-cli'))) return runtime;
  return path.join(tmpdir(), `runboard-${uid}`);
}

const keeps = new Map<string, boolean>();
/** Whether a folder is there or can be made, and takes new entries: made and removed once per process
 *  (a read-only mount says EROFS; Landlock, which does not answer access(2), says EACCES then). */
function canKeep(dir: string): boolean {
  let ok = keeps.get(dir);
  if (ok === undefined) {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      rmdirSync(mkdtempSync(path.join(dir, '.probe-')));
      ok = true;
    } catch {
      ok = false; // read-only or absent here: the tmp folder
    }
    keeps.set(dir, ok);
  }
  return ok;
}

/** The folder of a display's read contexts: `index.json` and a `<window id>.json` per window. */
export function contextPath(env: NodeJS.ProcessEnv = process.env): string {
  const display = (env.DISPLAY ?? 'none').replace(/[^A-Za-z0-9.]/g, '_');
  return path.join(stateRoot(env), 'desktop-cli', `read-context-${display}`);
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function loadIndex(dir: string): ContextIndex {
  const parsed = readJson(path.join(dir, 'index.json')) as ContextIndex | undefined;
  return parsed && typeof parsed.windows === 'object' && parsed.windows ? parsed : { windows: {} };
}

function loadWindow(dir: string, id: number): WindowContext | undefined {
  const ctx = readJson(path.join(dir, `${id}.json`)) as WindowContext | undefined;
  return ctx && ctx.windowId === id && typeof ctx.elements === 'object' ? ctx : undefined;
}

function writeAtomic(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  renameSync(tmp, file);
}

/** Writes a window's context. `elementsJson`, when given, is the JSON of `elements` made by the caller
 *  (a read writes it as it walks the tree, without an object per element). */
export function saveContext(
  ctx: Omit<WindowContext, 'elements'> & ({ elements: WindowContext['elements'] } | { elementsJson: string }),
  dir = contextPath(),
): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { windowId, title, app, ts } = ctx;
  const json =
    'elementsJson' in ctx
      ? `${JSON.stringify({ windowId, title, app, ts }).slice(0, -1)},"elements":${ctx.elementsJson}}`
      : JSON.stringify(ctx);
  writeAtomic(path.join(dir, `${ctx.windowId}.json`), json);
  const index = loadIndex(dir);
  index.windows[String(ctx.windowId)] = ctx.ts;
  index.last = ctx.windowId;
  const old = Object.entries(index.windows)
    .sort((a, b) => b[1] - a[1])
    .slice(KEEP_WINDOWS)
    .map(([id]) => id);
  for (const id of old) {
    delete index.windows[id];
    rmSync(path.join(dir, `${id}.json`), { force: true });
  }
  writeAtomic(path.join(dir, 'index.json'), JSON.stringify(index));
}

/** The context of a window, or of the last window read when windowId is undefined. */
export function loadContext(windowId: number | undefined, dir = contextPath()): WindowContext | undefined {
  const id = windowId ?? loadIndex(dir).last;
  return id === undefined ? undefined : loadWindow(dir, id);
}

/** The most recently read window among the given ids. */
export function latestContext(windowIds: number[], dir = contextPath()): WindowContext | undefined {
  const index = loadIndex(dir);
  const latest = windowIds
    .filter((id) => index.windows[String(id)] !== undefined)
    .sort((a, b) => index.windows[String(b)]! - index.windows[String(a)]!)[0];
  return latest === undefined ? undefined : loadWindow(dir, latest);
}

// ---- --since: the flat elements of recent reads, one file per read, kept 60 s ----
// One file per (window, ts): a read writes its own and never parses the others (a 6,000-node page
// makes a snapshot of ~1 MB; one shared file was read, parsed and rewritten by every read).

const SNAPSHOT_TTL_S = 60;

function snapshotDir(env: NodeJS.ProcessEnv = process.env): string {
  const display = (env.DISPLAY ?? 'none').replace(/[^A-Za-z0-9.]/g, '_');
  return path.join(path.dirname(contextPath(env)), `snapshot-trees-${display}`); // trees since session 17
}

/** Keeps a read's compact tree (or its JSON, already made) under its ts (seconds); files older than
 *  60 s are removed. */
export function saveSnapshot(
  windowId: number,
  ts: number,
  elements: unknown[] | string,
  dir = snapshotDir(),
): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const now = Math.floor(Date.now() / 1000);
  for (const f of readdirSync(dir)) {
    const m = /^\d+-(\d+)\.json$/.exec(f);
    if (m && now - Number(m[1]) > SNAPSHOT_TTL_S) rmSync(path.join(dir, f), { force: true });
  }
  const file = path.join(dir, `${windowId}-${ts}.json`);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, typeof elements === 'string' ? elements : JSON.stringify(elements), { mode: 0o600 });
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
