/**
 * Workspace grants: the Linux translation of security-scoped bookmarks (docs/security-model.md).
 * The host creates them (only from a folder the user chose); the supervisor re-validates them at every
 * launch. Both hold the HMAC key; workers never see it in their environment.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  existsSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
  renameSync,
  unlinkSync,
  appendFileSync,
} from 'node:fs';
import path from 'node:path';
import { ErrorCodes, Grant } from '../protocol/index.ts';
import { ensurePrivateDir, type StatePaths } from './paths.ts';

const KEY_FILE = 'grant.key';
/** Grants revoked by the supervisor (one JSON object a line): refused at launch even if presented. */
const REVOKED_FILE = 'revoked.jsonl';

/** A grant the supervisor revoked at its start, and why (docs/security-model.md, "Permission asks"). */
export interface RevokedGrant {
  id: string;
  path: string;
  why: string;
  at: string;
}

export class GrantError extends Error {
  constructor(
    readonly code: number,
    readonly reason:
      'forged' | 'tampered' | 'stale' | 'outside' | 'malformed' | 'missing' | 'state-root' | 'protected',
    message: string,
  ) {
    super(message);
  }
}

/** The HMAC key, created (0600) on first use. */
export function grantKey(paths: StatePaths, create: boolean): Buffer | null {
  const file = path.join(paths.keysDir, KEY_FILE);
  if (existsSync(file)) return readFileSync(file);
  if (!create) return null;
  ensurePrivateDir(paths.keysDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, randomBytes(32), { mode: 0o600 });
  renameSync(tmp, file);
  return readFileSync(file);
}

function payload(g: Omit<Grant, 'sig'>): string {
  // A fixed field order: the signature must not depend on how an object was built.
  return JSON.stringify([g.v, g.id, g.path, g.dev, g.ino, g.createdAt]);
}

function sign(key: Buffer, g: Omit<Grant, 'sig'>): string {
  return createHmac('sha256', key).update(payload(g)).digest('hex');
}

const realOr = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/**
 * Why a run may not be given `real` (a realpath): it is, holds or lies inside Runboard's own state (the
 * grant key, provider keys, other runs' logs, the supervisor socket). The jail hides that state, but a
 * writable rule for a tree around it would override the hide, so such a folder is never granted.
 */
export function stateRootConflict(paths: StatePaths, real: string): string | null {
  for (const [what, dir] of [
    ['state root', paths.root],
    ['runtime dir', paths.runtimeDir],
  ] as const) {
    const own = realOr(dir);
    if (isInside(real, own))
      return `${real} contains Runboard's ${what} ${own} (keys, grants, other runs' logs): a run there could read them; grant a folder that does not contain it`;
    if (isInside(own, real)) return `${real} is inside Runboard's ${what} ${own}; grant a folder outside it`;
  }
  return null;
}

/** Host side: grant a folder the user chose. Stores it under grants/ and returns it. */
export function createGrant(paths: StatePaths, folder: string): Grant {
  let real: string;
  try {
    real = realpathSync(folder);
  } catch {
    throw new GrantError(ErrorCodes.GrantMalformed, 'missing', `cannot grant ${folder}: it does not exist`);
  }
  const st = statSync(real, { bigint: true });
  if (!st.isDirectory())
    throw new GrantError(ErrorCodes.GrantMalformed, 'malformed', `cannot grant ${real}: not a folder`);
  const conflict = stateRootConflict(paths, real);
  if (conflict)
    throw new GrantError(ErrorCodes.GrantCoversState, 'state-root', `cannot grant ${folder}: ${conflict}`);
  const key = grantKey(paths, true)!;
  const unsigned = {
    v: 1 as const,
    id: randomBytes(16).toString('hex'),
    path: real,
    dev: st.dev.toString(),
    ino: st.ino.toString(),
    createdAt: new Date().toISOString(),
  };
  const grant: Grant = { ...unsigned, sig: sign(key, unsigned) };
  ensurePrivateDir(paths.grantsDir);
  const file = path.join(paths.grantsDir, `${grant.id}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(grant, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return grant;
}

function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export interface ValidatedGrant {
  grant: Grant;
  /** The workspace and the other paths, after realpath. */
  workspace: string;
  paths: string[];
  /** The flow's extra writable trees, after realpath, each inside a grant. */
  writable: string[];
}

/** A grant's signature and its folder's device+inode, checked; throws GrantError naming the reason. */
function verifyGrant(paths: StatePaths, raw: unknown): Grant {
  const parsed = Grant.safeParse(raw);
  if (!parsed.success)
    throw new GrantError(
      ErrorCodes.GrantMalformed,
      'malformed',
      'grant refused (malformed): not a Runboard workspace grant',
    );
  const g = parsed.data;
  const revoked = revokedGrants(paths).find((r) => r.id === g.id);
  if (revoked)
    throw new GrantError(
      ErrorCodes.GrantStale,
      'protected',
      `grant refused (revoked): the grant of ${revoked.path} was revoked on ${revoked.at.slice(0, 10)} because ${revoked.why}; grant a folder that holds none of it with \`runboard grant <dir>\``,
    );
  const key = grantKey(paths, false);
  const expected = key ? Buffer.from(sign(key, g), 'hex') : null;
  const given = Buffer.from(g.sig, 'hex');
  if (!expected || expected.length !== given.length || !timingSafeEqual(expected, given)) {
    const issued = path.join(paths.grantsDir, `${g.id}.json`);
    if (existsSync(issued)) {
      throw new GrantError(
        ErrorCodes.GrantTampered,
        'tampered',
        `grant refused (tampered): grant ${g.id} was changed after it was signed; grant the folder again with \`runboard grant <dir>\``,
      );
    }
    throw new GrantError(
      ErrorCodes.GrantForged,
      'forged',
      'grant refused (forged): its signature is not from this Runboard; grant the folder with `runboard grant <dir>`',
    );
  }
  let st;
  try {
    st = statSync(g.path, { bigint: true });
  } catch {
    throw new GrantError(
      ErrorCodes.GrantStale,
      'stale',
      `grant refused (stale): the granted folder ${g.path} no longer exists; grant it again`,
    );
  }
  if (st.dev.toString() !== g.dev || st.ino.toString() !== g.ino) {
    throw new GrantError(
      ErrorCodes.GrantStale,
      'stale',
      `grant refused (stale): ${g.path} was replaced since it was granted (device/inode differ); grant it again with \`runboard grant ${g.path}\``,
    );
  }
  // Grants issued before this check existed, or state moved under a granted folder since.
  const conflict = stateRootConflict(paths, realOr(g.path));
  if (conflict)
    throw new GrantError(
      ErrorCodes.GrantCoversState,
      'state-root',
      `grant refused (state root): ${conflict}`,
    );
  return g;
}

/** Each grant file's contents under grants/ of the state root, as `keep` accepts them (else skipped). */
function grantFiles(paths: StatePaths, keep: (raw: unknown) => Grant): Grant[] {
  let files: string[];
  try {
    files = readdirSync(paths.grantsDir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const out: Grant[] = [];
  for (const f of files) {
    try {
      out.push(keep(JSON.parse(readFileSync(path.join(paths.grantsDir, f), 'utf8'))));
    } catch {
      // an unreadable, stale or refused grant covers nothing; the user can grant again
    }
  }
  return out;
}

/** The issued grants (grants/ of the state root) that still verify. */
function issuedGrants(paths: StatePaths): Grant[] {
  return grantFiles(paths, (raw) => verifyGrant(paths, raw));
}

/** An issued grant that covers `folder` (after realpath), or undefined: how a host of a fleet finds its own. */
export function grantCovering(paths: StatePaths, folder: string): Grant | undefined {
  let real: string;
  try {
    real = realpathSync(folder);
  } catch {
    return undefined;
  }
  return issuedGrants(paths).find((g) => isInside(g.path, real));
}

function resolveIn(grantPath: string, p: string, what: string): string {
  let real: string;
  try {
    real = realpathSync(p);
  } catch {
    throw new GrantError(ErrorCodes.PathOutsideGrant, 'outside', `${what} ${p} does not exist`);
  }
  if (!isInside(grantPath, real)) {
    throw new GrantError(
      ErrorCodes.PathOutsideGrant,
      'outside',
      `grant refused (escape): ${what} ${p} resolves to ${real}, outside the granted folder ${grantPath}`,
    );
  }
  return real;
}

/**
 * Supervisor side, at every launch: signature, same device+inode as when granted, no overlap with
 * Runboard's state, and every path resolving (after realpath) to the granted folder or inside it.
 * `writable` (the flow's extra writable trees) may instead lie inside another grant the user made
 * (a shared package cache, granted once). Throws GrantError naming the reason.
 */
export function validateGrant(
  paths: StatePaths,
  raw: unknown,
  workspace: string,
  extra: string[] = [],
  writable: string[] = [],
): ValidatedGrant {
  const g = verifyGrant(paths, raw);
  let others: Grant[] | undefined;
  const resolveWritable = (p: string): string => {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      throw new GrantError(
        ErrorCodes.PathOutsideGrant,
        'outside',
        `the flow's sandbox.writable path ${p} does not exist; create it (inside a granted folder) or remove it from the flow`,
      );
    }
    if (isInside(g.path, real)) return real;
    others ??= issuedGrants(paths);
    if (others.some((o) => isInside(o.path, real))) return real;
    throw new GrantError(
      ErrorCodes.PathOutsideGrant,
      'outside',
      `the flow's sandbox.writable path ${p} (${real}) is covered by no grant: a run may write only inside granted folders; grant it with \`runboard grant ${real}\` or remove it from the flow`,
    );
  };
  return {
    grant: g,
    workspace: resolveIn(g.path, workspace, 'workspace'),
    paths: extra.map((p) => resolveIn(g.path, p, 'path')),
    writable: writable.map(resolveWritable),
  };
}

/**
 * The flow's `sandbox.read` trees, after realpath: each must exist and stay clear of Runboard's state
 * (a tree around the state root would show keys and other runs). Reading needs no grant: the flow is
 * the person's config, and reading changes nothing. Throws GrantError naming the path and what to do.
 */
export function validateReadable(paths: StatePaths, read: string[] = []): string[] {
  return read.map((p) => {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      throw new GrantError(
        ErrorCodes.PathOutsideGrant,
        'outside',
        `the flow's sandbox.read path ${p} does not exist; create it or remove it from the flow`,
      );
    }
    const conflict = stateRootConflict(paths, real);
    if (conflict)
      throw new GrantError(
        ErrorCodes.PathOutsideGrant,
        'outside',
        `the flow's sandbox.read path ${p} is refused: ${conflict.replace(/; grant .*$/, '')}; name a folder that does not hold Runboard's state`,
      );
    return real;
  });
}

/**
 * The supervisor's start: every issued grant whose folder `refusal` names a reason for (one made before
 * that folder was refused: it holds or lies in Runboard's install folder or the desktop's sockets) is
 * revoked: its file removed, its id recorded so that a copy a host still holds is refused at launch.
 * Returns what it revoked now (the caller logs it; the board lists every revocation).
 */
export function revokeRefusedGrants(
  paths: StatePaths,
  refusal: (real: string) => string | null,
): RevokedGrant[] {
  const out: RevokedGrant[] = [];
  for (const g of listGrants(paths)) {
    const why = refusal(realOr(g.path));
    if (!why) continue;
    const r: RevokedGrant = { id: g.id, path: g.path, why, at: new Date().toISOString() };
    appendFileSync(path.join(paths.grantsDir, REVOKED_FILE), JSON.stringify(r) + '\n', { mode: 0o600 });
    try {
      unlinkSync(path.join(paths.grantsDir, `${g.id}.json`));
    } catch {
      // gone meanwhile: the record refuses it anyway
    }
    out.push(r);
  }
  return out;
}

/** The grants revoked so far (revokeRefusedGrants), oldest first; lines that do not parse are skipped. */
export function revokedGrants(paths: StatePaths): RevokedGrant[] {
  let text: string;
  try {
    text = readFileSync(path.join(paths.grantsDir, REVOKED_FILE), 'utf8');
  } catch {
    return [];
  }
  const out: RevokedGrant[] = [];
  for (const line of text.split('\n')) {
    try {
      const r = JSON.parse(line) as Partial<RevokedGrant>;
      if (typeof r.id === 'string' && typeof r.path === 'string' && typeof r.why === 'string')
        out.push({ id: r.id, path: r.path, why: r.why, at: String(r.at ?? '') });
    } catch {
      // an empty or cut line
    }
  }
  return out;
}

/** The grants issued under the state root, as stored (the supervisor validates the one it is given). */
export function listGrants(paths: StatePaths): Grant[] {
  return grantFiles(paths, (raw) => Grant.parse(raw));
}

/** The closest grant covering `workspace` (after realpath), or null. Newest wins among equals. */
export function findGrant(paths: StatePaths, workspace: string): Grant | null {
  const real = realOr(workspace);
  let best: Grant | null = null;
  for (const g of listGrants(paths)) {
    if (!isInside(g.path, real)) continue;
    if (
      !best ||
      g.path.length > best.path.length ||
      (g.path.length === best.path.length && g.createdAt > best.createdAt)
    )
      best = g;
  }
  return best;
}
