/**
 * Permission asks: from what the sandbox refused a run to what the person may allow. A run's own output
 * is the only trace of a refusal (denials.ts), so a hostile run can print any "Permission denied" it
 * likes. What it gets for that is decided here, from the supervisor's own knowledge only:
 *
 * - the ask names a folder (the deepest existing folder around the refused path, after realpath) or a
 *   TCP port, never the run's text; the text is kept as evidence, shown as the run's words;
 * - folders a person must never be asked to open to a run are not asked at all: Runboard's state and
 *   runtime dir (keys, grants, the supervisor's socket) and every folder around them, the project's
 *   config.yaml and cards/ and the folders around them, `/` and the system trees, the home folder
 *   itself and its hidden folders (ssh and gpg keys, shell start-up files, tool settings), Runboard's
 *   install folder and the desktop's sockets and the folders around them (protected-dirs.ts), and a
 *   folder around a granted one (allowing it would open every folder beside the grant);
 * - a port the supervisor serves itself (the model proxy's) is not asked;
 * - the same checks run again when a later launch carries the person's "allow" (registry.ts), against
 *   the supervisor's record of the ask, not anything the host or the card says.
 */
import { realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { protectedConflict, type ProtectedDir } from '../common/protected-dirs.ts';
import type { PermissionAsk } from '../protocol/index.ts';
import type { Denial } from './denials.ts';

/** At most this many asks per run: a run cannot flood the person with questions. */
export const MAX_ASKS = 4;

/** Trees of the system a run is never offered (binaries, libraries, configuration, kernel files). */
const SYSTEM_TREES = [
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/sys',
  '/usr',
  '/var',
];

/**
 * A refusal that reads as a write: a read-only mount's EROFS (the run's mount namespace), a tool's
 * "cannot create/touch/…", an open or mkdir (Node's EACCES). A refusal of a path the run's read
 * allow-list hides that does not read so is a read (`read` ask); elsewhere "cat: x: Permission
 * denied" is the file's own permissions and asks nothing.
 */
const WRITE_HINT =
  /read-only file system|EROFS|cannot (?:create|touch|overwrite|make|move|copy)|permission denied, (?:open|mkdir|copyfile|symlink)\b|\b(?:mkdir|write)\b/i;
/** An agent's edit tool, or a command of codex's (which may read or write: a write unless hidden). */
const AGENT_WRITE_HINT = /^(?:Write|Edit|MultiEdit|NotebookEdit|apply_patch|command)\b/;
/** In a command's text (codex's `command …: <error>`): a tool that writes the paths it is given. */
const WRITING_TOOL = /^command\b.*\b(?:tee|touch|mkdir|cp|mv|install|rsync|ln|dd|truncate)\s/;
/** A shell redirect's target (`> f`, `>> 'f'`; not `2>&1`). */
const REDIRECT = /(?:^|[^0-9&>])>>?\s*['"]?([^\s'"&|;)]+)/g;

/** Whether the line shows `p` written: a redirect into it, or a writing tool in a codex command. */
function writesTo(line: string, p: string): boolean {
  if (WRITING_TOOL.test(line)) return true;
  for (const m of line.matchAll(REDIRECT)) {
    const target = m[1]!;
    if (target === p || (target.startsWith('/') && p.startsWith(target)) || p.endsWith(`/${target}`))
      return true;
  }
  return false;
}

export interface AskContext {
  /** Trees the run may write already (a refusal there is not the sandbox's). */
  writable: readonly string[];
  /** Trees no run may read: the state root and the runtime dir (realpaths). */
  hidden: readonly string[];
  /** The project's config.yaml and cards/ (projectReadOnly()). */
  readOnly: readonly string[];
  /** Ports the supervisor serves itself (the run's model proxy). */
  ownPorts: readonly number[];
  /** Ports the run may connect to already. */
  tcpPorts: readonly number[];
  /** The run's workspace (a delete ask names a folder inside it). */
  workspace: string;
  /** The user's home folder (default: os.homedir()). */
  home?: string;
  /** Runboard's install folders and the desktop's sockets (protected-dirs.ts). */
  protected?: readonly ProtectedDir[];
  /** Granted folders (the run's workspace, every grant): a folder around one is not asked. */
  granted?: readonly string[];
  /**
   * The trees the run may read (writable ones included) when reads are an allow-list: a refusal of a
   * path outside them that does not read as a write is asked as a read. Unset: reads are not confined.
   */
  readable?: readonly string[];
}

export type Derived = { ask: Omit<PermissionAsk, 'id' | 'evidence' | 'source'> } | { refused: string };

const within = (p: string, tree: string): boolean =>
  p === tree || p.startsWith(tree.endsWith('/') ? tree : tree + '/');

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The deepest existing folder at or around `p`, after realpath; null when none (cannot be). */
function existingFolder(p: string): string | null {
  let dir = path.resolve(p);
  for (;;) {
    try {
      if (statSync(dir).isDirectory()) return realpathSync(dir);
    } catch {
      // not there (or not reachable): its parent
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/**
 * Why `folder` (a realpath) may not be offered to a run, or null when it may. Used for asks and again
 * for every allowed ask at launch.
 */
export function folderRefusal(folder: string, ctx: AskContext): string | null {
  const home = real(ctx.home ?? os.homedir());
  if (folder === '/') return 'it is the whole file system';
  const conflict = protectedConflict(folder, ctx.protected ?? []);
  if (conflict) return conflict;
  for (const g of (ctx.granted ?? []).map(real))
    if (g !== folder && within(g, folder))
      return `it holds a granted folder (${g}): allowing it would open every folder beside that one`;
  for (const h of ctx.hidden.map(real))
    if (within(folder, h) || within(h, folder))
      return "it holds or lies in Runboard's own state (keys, grants, the supervisor's socket)";
  for (const r of ctx.readOnly.map(real))
    if (within(folder, r) || within(r, folder))
      return "it holds the project's config.yaml or cards (a run that could write them would widen its own sandbox)";
  if (within(home, folder)) return 'it is your whole home folder';
  if (within(folder, home) && path.relative(home, folder).startsWith('.'))
    return 'it is a hidden folder of your home (keys, shell start-up files, tool settings)';
  for (const t of SYSTEM_TREES) if (within(folder, t) && !within(home, t)) return 'it is a system folder';
  return null;
}

/** What one denial may become: an ask (not yet numbered), or why it is not asked. */
export function deriveAsk(d: Denial, ctx: AskContext): Derived {
  if (d.path === null) {
    if (d.port === undefined) return { refused: 'the refusal names no path or port' };
    if (ctx.ownPorts.includes(d.port)) return { refused: `port ${d.port} is Runboard's own model proxy` };
    if (ctx.tcpPorts.includes(d.port)) return { refused: `port ${d.port} is allowed already` };
    return { ask: { kind: 'connect', port: d.port } };
  }
  if (d.remove) {
    // A delete inside the workspace: the folder it happened in, which must still be inside the workspace.
    const folder = existingFolder(path.dirname(d.path));
    const ws = real(ctx.workspace);
    if (!folder || !within(folder, ws)) return { refused: `${d.path} is not inside the workspace` };
    const why = folderRefusal(folder, ctx);
    return why
      ? { refused: `deletes in ${folder} are not asked: ${why}` }
      : { ask: { kind: 'delete', path: folder } };
  }
  if (!WRITE_HINT.test(d.line) && !writesTo(d.line, d.path)) {
    if (
      ctx.readable &&
      !ctx.readable.map(real).some((r) => within(real(d.path!), r) || within(r, real(d.path!)))
    )
      return readAsk(d.path, ctx);
    if (!AGENT_WRITE_HINT.test(d.line))
      return {
        refused: `the refusal of ${d.path} does not read as a write, and the run may read there (the file's own permissions)`,
      };
  }
  const folder = existingFolder(path.dirname(d.path));
  if (!folder) return { refused: `no folder of ${d.path} exists` };
  if (ctx.writable.map(real).some((w) => within(folder, w)))
    return { refused: `${folder} is writable already (the refusal was not the sandbox's)` };
  const why = folderRefusal(folder, ctx);
  return why
    ? { refused: `writing to ${folder} is not asked: ${why}` }
    : { ask: { kind: 'write', path: folder } };
}

/**
 * A read of `p`, hidden from the run: the folder it names (or the folder of the file it names), after
 * realpath, checked as every offered folder is. A read ask is never writable (`sandbox.read`).
 */
function readAsk(p: string, ctx: AskContext): Derived {
  let folder: string | null;
  try {
    folder = statSync(p).isDirectory() ? realpathSync(p) : existingFolder(path.dirname(p));
  } catch {
    folder = existingFolder(path.dirname(p));
  }
  if (!folder) return { refused: `no folder of ${p} exists` };
  const why = folderRefusal(folder, ctx);
  return why
    ? { refused: `reading ${folder} is not asked: ${why}` }
    : { ask: { kind: 'read', path: folder } };
}

/**
 * What a tool's ask before the act (worker/ask: a path it is about to write or read) may become: the
 * same folder and the same never-asked checks as a refusal after the act. `{allowed}`: the run may do
 * it already (a write in its writable trees, a read in what it reads).
 */
export function liveAsk(kind: 'write' | 'read', p: string, ctx: AskContext): Derived | { allowed: string } {
  if (!path.isAbsolute(p)) return { refused: `${p} is not an absolute path` };
  const target = real(p);
  if (ctx.writable.map(real).some((w) => within(target, w)))
    return { allowed: `${target} is writable already` };
  if (kind === 'read') {
    if (ctx.readable?.map(real).some((r) => within(target, r)))
      return { allowed: `${target} is readable already` };
    return readAsk(p, ctx);
  }
  const folder = existingFolder(path.dirname(p));
  if (!folder) return { refused: `no folder of ${p} exists` };
  const why = folderRefusal(folder, ctx);
  return why
    ? { refused: `writing to ${folder} is not asked: ${why}` }
    : { ask: { kind: 'write', path: folder } };
}

/**
 * The asks of a run from its denials, numbered a1, a2, …, one per folder or port, at most MAX_ASKS;
 * `refused` says which denials were not asked and why (recorded as events).
 */
export function deriveAsks(
  denials: readonly Denial[],
  ctx: AskContext,
): { asks: PermissionAsk[]; refused: { denial: Denial; why: string }[] } {
  const asks: PermissionAsk[] = [];
  const refused: { denial: Denial; why: string }[] = [];
  for (const d of denials) {
    const r = deriveAsk(d, ctx);
    if ('refused' in r) {
      refused.push({ denial: d, why: r.refused });
      continue;
    }
    if (asks.some((a) => a.kind === r.ask.kind && a.path === r.ask.path && a.port === r.ask.port)) continue;
    if (asks.length >= MAX_ASKS) {
      refused.push({ denial: d, why: `a run asks at most ${MAX_ASKS} permissions at a time` });
      continue;
    }
    asks.push({
      id: `a${asks.length + 1}`,
      ...r.ask,
      // the run's words, without control characters (they are shown to the person as text)
      evidence: d.line.replace(/\p{Cc}/gu, ' ').slice(0, 300),
      source: d.source === 'agent' ? 'agent' : 'sandbox',
    });
  }
  return { asks, refused };
}
