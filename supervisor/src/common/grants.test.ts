import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createGrant,
  GrantError,
  listGrants,
  revokedGrants,
  revokeRefusedGrants,
  validateGrant,
} from './grants.ts';
import { statePaths } from './paths.ts';

let root: string;
let paths: ReturnType<typeof statePaths>;
let ws: string;
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-grant-'));
  paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
  ws = path.join(root, 'ws');
  mkdirSync(path.join(ws, 'sub'), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof GrantError) return err.reason;
    throw err;
  }
  return 'accepted';
}

describe('grants', () => {
  it('accepts the granted folder and folders inside it, returning real paths', () => {
    const g = createGrant(paths, ws);
    expect(validateGrant(paths, g, path.join(ws, 'sub', '..', 'sub')).workspace).toBe(path.join(ws, 'sub'));
    expect(validateGrant(paths, g, ws, [path.join(ws, 'sub')]).paths).toEqual([path.join(ws, 'sub')]);
  });

  it('names each refusal: tampered, forged, stale, outside, malformed', () => {
    const g = createGrant(paths, ws);
    expect(reason(() => validateGrant(paths, { ...g, path: root }, root))).toBe('tampered');
    expect(reason(() => validateGrant(paths, { ...g, id: 'f'.repeat(32) }, ws))).toBe('forged');
    expect(reason(() => validateGrant(paths, { ...g, sig: '0'.repeat(64) }, ws))).toBe('tampered');
    expect(reason(() => validateGrant(paths, g, path.join(ws, '..')))).toBe('outside');
    symlinkSync('/etc', path.join(ws, 'etc'));
    expect(reason(() => validateGrant(paths, g, path.join(ws, 'etc')))).toBe('outside');
    expect(reason(() => validateGrant(paths, g, ws, ['/tmp']))).toBe('outside');
    expect(reason(() => validateGrant(paths, { nope: 1 }, ws))).toBe('malformed');
    renameSync(ws, ws + '-moved');
    mkdirSync(ws);
    expect(reason(() => validateGrant(paths, g, ws))).toBe('stale');
  });

  it('a grant signed by another state root is forged here', () => {
    const other = statePaths({ RUNBOARD_HOME: path.join(root, 'other') });
    const g = createGrant(other, ws);
    expect(reason(() => validateGrant(paths, g, ws))).toBe('forged');
  });

  it('refuses to grant a file or a missing folder', () => {
    writeFileSync(path.join(root, 'f'), '');
    expect(() => createGrant(paths, path.join(root, 'f'))).toThrow(/not a folder/);
    expect(() => createGrant(paths, path.join(root, 'missing'))).toThrow(/does not exist/);
  });

  it('a grant made before its folder was refused is revoked at start: removed, and refused even when presented', () => {
    const old = createGrant(paths, ws);
    const kept = createGrant(paths, path.join(ws, 'sub'));
    const now = revokeRefusedGrants(paths, (real) => (real === ws ? 'it holds the install folder' : null));
    expect(now).toMatchObject([{ id: old.id, path: ws, why: 'it holds the install folder' }]);
    expect(listGrants(paths).map((g) => g.id)).toEqual([kept.id]);
    expect(revokedGrants(paths).map((r) => r.id)).toEqual([old.id]);
    // a host still holding the signed grant cannot use it
    expect(() => validateGrant(paths, old, ws)).toThrow(
      /grant refused \(revoked\).*holds the install folder/,
    );
    expect(reason(() => validateGrant(paths, old, ws))).toBe('protected');
    expect(validateGrant(paths, kept, path.join(ws, 'sub')).workspace).toBe(path.join(ws, 'sub'));
    // nothing more to revoke the next time
    expect(revokeRefusedGrants(paths, (real) => (real === ws ? 'x' : null))).toEqual([]);
  });
});
