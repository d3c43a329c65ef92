/**
 * Workspace grants: the Linux translation of security-scoped bookmarks (docs/security-model.md).
 * The host creates them (only from a folder the user chose); the supervisor re-validates them at every
 * launch. Both hold the HMAC key; workers never see it in their environment.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync, writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { ErrorCodes, Grant } from '../protocol/index.ts';
import { ensurePrivateDir, type StatePaths } from './paths.ts';

const KEY_FILE = 'grant.key';

export class GrantError extends Error {
  constructor(
    readonly code: number,
    readonly reason: 'forged' | 'tampered' | 'stale' | 'outside' | 'malformed' | 'missing',
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
}

/**
 * Supervisor side, at every launch: signature, same device+inode as when granted, and every path
 * resolving (after realpath) to the granted folder or inside it. Throws GrantError naming the reason.
 */
export function validateGrant(
  paths: StatePaths,
  raw: unknown,
  workspace: string,
  extra: string[] = [],
): ValidatedGrant {
  const parsed = Grant.safeParse(raw);
  if (!parsed.success)
    throw new GrantError(
      ErrorCodes.GrantMalformed,
      'malformed',
      'grant refused (malformed): not a Runboard workspace grant',
    );
  const g = parsed.data;
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
  const resolve = (p: string, what: string): string => {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      throw new GrantError(ErrorCodes.PathOutsideGrant, 'outside', `${what} ${p} does not exist`);
    }
    if (!isInside(g.path, real)) {
      throw new GrantError(
        ErrorCodes.PathOutsideGrant,
        'outside',
        `grant refused (escape): ${what} ${p} resolves to ${real}, outside the granted folder ${g.path}`,
      );
    }
    return real;
  };
  return {
    grant: g,
    workspace: resolve(workspace, 'workspace'),
    paths: extra.map((p) => resolve(p, 'path')),
  };
}
