/**
 * Folders no run is ever given write access to, by an ask or a grant (docs/security-model.md,
 * "Permission asks"), besides Runboard's state (grants.ts, stateRootConflict):
 *
 * - Runboard's install folder: the bundles (dist/), the native addon and the jail (native/build), the
 *   launcher (bin/) and node_modules: code the supervisor and the host run outside any jail, and every
 *   run's worker. A run that could write there would rewrite the supervisor.
 * - The desktop's sockets: the X11 socket folder (and ICE, XIM, font server), `$XDG_RUNTIME_DIR`
 *   (Wayland, the session bus, the keyring, PulseAudio). A run that could write there could replace
 *   or add a socket every desktop program connects to.
 *
 * Each is refused with every folder around it (allowing /tmp would allow /tmp/.X11-unix).
 */
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';

export interface ProtectedDir {
  dir: string;
  /** Why, in words: "Runboard's install folder (…)". */
  what: string;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

const INSTALL = "Runboard's install folder (code the supervisor and host run outside the jail)";
const DESKTOP = "the desktop's sockets (X11, Wayland, the session bus): a run could replace them";

/**
 * Runboard's install folders from where its bundles are (`dist`, e.g. distDir()) and, when elsewhere,
 * its native build (`nativeDir`): dist/, native/build, bin/ and node_modules of the folder above dist/.
 */
export function installDirs(dist: string, nativeDir?: string): ProtectedDir[] {
  const dirs = [dist];
  if (path.basename(dist) === 'dist') {
    const root = path.dirname(dist);
    for (const d of [['native', 'build'], ['bin'], ['node_modules']]) dirs.push(path.join(root, ...d));
  }
  if (nativeDir) dirs.push(nativeDir);
  return [...new Set(dirs.filter((d) => existsSync(d)).map(real))].map((dir) => ({ dir, what: INSTALL }));
}

/** The desktop's socket folders (those that exist) for this environment. */
export function desktopSocketDirs(env: NodeJS.ProcessEnv): ProtectedDir[] {
  const dirs = ['/tmp/.X11-unix', '/tmp/.ICE-unix', '/tmp/.XIM-unix', '/tmp/.font-unix'];
  if (env.XDG_RUNTIME_DIR && path.isAbsolute(env.XDG_RUNTIME_DIR)) dirs.push(env.XDG_RUNTIME_DIR);
  return [...new Set(dirs.filter((d) => existsSync(d)).map(real))].map((dir) => ({ dir, what: DESKTOP }));
}

const within = (p: string, tree: string): boolean =>
  p === tree || p.startsWith(tree.endsWith('/') ? tree : tree + '/');

/** Why `folder` (a realpath) is or holds or lies in a protected folder, or null. */
export function protectedConflict(folder: string, dirs: readonly ProtectedDir[]): string | null {
  for (const { dir, what } of dirs) {
    if (within(folder, dir)) return `${folder} is inside ${what}: ${dir}`;
    if (within(dir, folder)) return `${folder} holds ${what}: ${dir}`;
  }
  return null;
}
