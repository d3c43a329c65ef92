/**
 * The host's grant step refuses what no run may be given (issue 28): Runboard's install folder (its
 * bundles, native addon, launcher), the desktop's sockets, and every folder around them, whether the
 * person picks the folder or allows a run's ask "always".
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { desktopSocketDirs, installDirs } from '@runboard/supervisor/protected-dirs';
import { statePaths } from '@runboard/supervisor/paths';
import { createGrant, revokeRefusedGrants } from '@runboard/supervisor/grants';
import { GrantStore } from './grant-store.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-grant-store-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const install = path.join(root, 'opt', 'runboard');
const xdg = path.join(root, 'xdg');
for (const d of ['dist', 'native/build/Release', 'bin', 'node_modules', 'project/workspace'])
  mkdirSync(path.join(install, d), { recursive: true });
mkdirSync(xdg);
const store = new GrantStore(statePaths({ RUNBOARD_HOME: path.join(root, 'home') }), () => [
  ...installDirs(path.join(install, 'dist')),
  ...desktopSocketDirs({ XDG_RUNTIME_DIR: xdg }),
]);

describe('grant step', () => {
  it("refuses Runboard's install folder, a folder in it and the folders around it, saying why", () => {
    for (const f of ['dist', 'native', 'native/build/Release', 'bin', 'node_modules', '.', '..'])
      expect(() => store.grant(path.join(install, f)), f).toThrow(/Runboard's install folder/);
  });

  it("refuses the desktop's sockets ($XDG_RUNTIME_DIR) and what holds them", () => {
    mkdirSync(path.join(xdg, 'sub'));
    expect(() => store.grant(path.join(xdg, 'sub'))).toThrow(/desktop's sockets/);
    expect(() => store.grant(root)).toThrow(/cannot grant/);
  });

  it('grants a folder beside them (a project kept next to the install)', () => {
    expect(store.grant(path.join(install, 'project', 'workspace')).path).toBe(
      path.join(install, 'project', 'workspace'),
    );
  });

  it('a card folder under a grant the supervisor revoked at its start says so (the board shows why)', () => {
    const paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
    const old = createGrant(paths, install); // made before the install folder was refused
    revokeRefusedGrants(paths, (real) => (real === install ? "it holds Runboard's install folder" : null));
    const ws = path.join(install, 'project', 'other');
    mkdirSync(ws);
    expect(new GrantStore(paths, () => []).status(ws)).toEqual({
      state: 'none',
      revoked: { path: old.path, why: "it holds Runboard's install folder" },
    });
  });
});
