/**
 * What a run may read (docs/security-model.md, "What a run can read"): an allow-list, handed to the jail
 * as `--read` trees. The system's read-only trees and Runboard's own install are the same for every run
 * and found once, when the supervisor starts; the run's own trees (workspace, card, prompt, the flow's
 * `sandbox.read`) are added per run (run.ts).
 */
import { lstatSync, readdirSync, realpathSync, type Dirent } from 'node:fs';
import path from 'node:path';

/**
 * The machine's trees every program needs to run: binaries, libraries, configuration, the kernel's
 * views of the run itself (/proc is the run's own where it has a PID namespace; /sys describes the
 * hardware). Not /home, /root, /mnt, /media, /srv, /run, /var, /tmp: the person's and the services'
 * data. Of /var only caches that tools read to start (fonts) and the machine id D-Bus clients read.
 */
export const SYSTEM_READ_TREES = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/etc',
  '/opt',
  '/proc',
  '/sys',
  '/var/cache/fontconfig',
  '/var/lib/dbus/machine-id',
] as const;

function realOrNull(p: string): string | null {
  try {
    return realpathSync.native(p);
  } catch {
    return null;
  }
}

const inside = (tree: string, p: string): boolean => p === tree || tree === '/' || p.startsWith(tree + '/');

/** Whether `p` (absolute, real) lies in one of `trees`. */
export function insideAny(p: string, trees: readonly string[]): boolean {
  return trees.some((t) => inside(t, p));
}

/**
 * The trees of `trees` that lie in no other of them, each once, in their order: the jail's allow-list
 * takes a tree with all below it, so /usr/bin beside /usr (a link /bin resolved) is one more Landlock
 * rule and path lookup per launch for nothing.
 */
export function outermost(trees: readonly string[]): string[] {
  const unique = [...new Set(trees)];
  return unique.filter((t) => !unique.some((o) => o !== t && inside(o, t)));
}

/**
 * The system trees as they are on this machine: links resolved (/bin -> /usr/bin), missing ones left
 * out, and the targets of /etc's links that lead elsewhere (resolv.conf -> /run/systemd/resolve/...,
 * localtime -> /usr/share/zoneinfo/...).
 */
export function systemReadTrees(): string[] {
  const out = new Set<string>();
  for (const t of SYSTEM_READ_TREES) {
    const real = realOrNull(t);
    if (real) out.add(real);
  }
  for (const name of ['resolv.conf', 'hosts', 'localtime', 'mtab', 'os-release', 'ssl/certs']) {
    const real = realOrNull(path.join('/etc', name));
    if (real && !insideAny(real, [...out])) out.add(real);
  }
  return [...out];
}

/**
 * The entries below `dir` (default /etc) that only their owner or group may read (no read bit for
 * others): password hashes (`shadow`, `gshadow`), SSH host keys, TLS private keys. A run of a supervisor
 * started as root is root in its user namespace, and /etc is readable as a whole: these are covered in
 * its mount namespace (the jail's `--blank`), so it reads what any other user's run reads there. A
 * folder counts once (not what is below it); links are not followed (their targets are governed).
 * `listing` is called with each folder right before it is listed (root-only.ts watches it).
 */
export function rootOnlyEntries(
  dir = '/etc',
  limit = 1000,
  listing: (folder: string) => void = () => undefined,
): string[] {
  const out: string[] = [];
  const walk = (d: string, depth: number): void => {
    listing(d);
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= limit) return;
      const p = path.join(d, name);
      let st;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (!st.isFile() && !st.isDirectory()) continue;
      if ((st.mode & 0o004) === 0) out.push(p);
      else if (st.isDirectory() && depth < 8) walk(p, depth + 1);
    }
  };
  walk(dir, 0);
  return out;
}

/**
 * Runboard's own install that a worker reads: the install root (dist/ bundles, the native addon and
 * jail, node_modules with the agent CLIs), the folders its node_modules entries link to (a worktree's
 * links lead to the main checkout's), and Node's own install when it is not a system one (nvm).
 */
export function installReadTrees(installRoot: string, nodeBinary: string): string[] {
  const out = new Set<string>();
  const root = realOrNull(installRoot);
  if (root) out.add(root);
  const modules = path.join(installRoot, 'node_modules');
  const modulesReal = realOrNull(modules);
  if (modulesReal && !insideAny(modulesReal, [...out])) out.add(modulesReal);
  let entries: Dirent[] = [];
  try {
    // the entries' types come with the listing (d_type): no lstat per package (~500 of them)
    entries = readdirSync(modules, { withFileTypes: true });
  } catch {
    // no node_modules of its own (a bundled install)
  }
  for (const e of entries) {
    if (!e.isSymbolicLink()) continue;
    const real = realOrNull(path.join(modules, e.name));
    if (real && !insideAny(real, [...out])) out.add(path.dirname(real));
  }
  const node = realOrNull(nodeBinary);
  // .../bin/node: the version's folder (its lib/ holds npm and the headers)
  if (node) out.add(path.dirname(path.dirname(node)));
  return [...out];
}

/**
 * The PATH a run gets: the supervisor's, without the folders the run cannot read (a ~/.pyenv/shims
 * first in PATH would make `python3` fail with EACCES instead of finding /usr/bin/python3).
 */
export function readablePath(pathVar: string | undefined, readable: readonly string[]): string {
  const dirs = (pathVar || '/usr/local/bin:/usr/bin:/bin').split(':');
  const kept = dirs.filter((d) => {
    if (!path.isAbsolute(d)) return false;
    const real = realOrNull(d);
    return real !== null && insideAny(real, readable);
  });
  return [...new Set(kept)].join(':') || '/usr/bin:/bin';
}
