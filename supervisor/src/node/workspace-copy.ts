/**
 * A copy of the workspace per run (flow `copyWorkspace`, issue 33): each attempt of a card whose
 * workspace is not a git repository works in a copy the supervisor makes under its own folder in the
 * state root, which no run can read; only the run's own copy is bound into its jail, so an attempt
 * reaches neither the workspace nor another attempt's copy.
 *
 *   <supervisor>/copies/<run-id>/ws              the copy: the run's workspace
 *   <supervisor>/copies/<run-id>/manifest.json   what the workspace held when copied (per path: kind,
 *                                                mode, size, inode, mtime and ctime in ns), and the
 *                                                copy's own stat of each file
 *   keep    → the run's changes (paths added, changed, removed against the manifest) are applied to
 *             the workspace, unless the workspace changed one of them meanwhile: then nothing is
 *             applied and the error lists the paths (a conflict, shown to the person), copy kept
 *   discard → the copy goes
 *
 * The copy is bounded (`maxBytes`) and made by reflink where the filesystem has it (never a hard link:
 * the run would write the workspace's own file). Both trees are walked through open directories
 * (`/proc/self/fd/N/name`, each component opened O_NOFOLLOW), never by path: a symlink put in the
 * workspace while it is copied or written back (by another run working there) cannot lead the copy to
 * read, or the keep to write, outside it. Special files (sockets, FIFOs, devices) are not copied.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import {
  copyFile,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  rmdir,
  symlink,
  unlink,
  writeFile,
  chmod,
  type FileHandle,
} from 'node:fs/promises';
import path from 'node:path';
import type { WorkspaceCopy } from '../protocol/index.ts';

export class CopyError extends Error {}

/** Entries of a folder copied (or looked at) at once. */
const IN_FLIGHT = 8;

/** The most paths a copy may hold, whatever their size (a manifest entry each). */
const MAX_ENTRIES = 200_000;

type Kind = 'f' | 'd' | 'l';
/** One path's stat as the manifest keeps it (times and inode as strings: ns and 64-bit). */
interface Stat {
  k: Kind;
  mode: number;
  size: number;
  ino: string;
  mt: string;
  ct: string;
  /** A symlink's target. */
  to?: string;
}
interface Entry extends Stat {
  /** A file's stat in the copy, as it was made. */
  c?: Pick<Stat, 'ino' | 'mt' | 'ct' | 'size' | 'mode'>;
}
type Manifest = Record<string, Entry>;

const at = (fd: FileHandle, name: string): string => `/proc/self/fd/${fd.fd}/${name}`;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

async function statOf(p: string): Promise<Stat | null> {
  const s = await lstat(p, { bigint: true });
  const k: Kind | null = s.isFile() ? 'f' : s.isDirectory() ? 'd' : s.isSymbolicLink() ? 'l' : null;
  if (!k) return null;
  return {
    k,
    mode: Number(s.mode & 0o7777n),
    size: k === 'f' ? Number(s.size) : 0,
    ino: `${s.dev}:${s.ino}`,
    mt: String(s.mtimeNs),
    ct: String(s.ctimeNs),
    ...(k === 'l' ? { to: await readlink(p) } : {}),
  };
}

const same = (a: Stat | null | undefined, b: Stat | null | undefined): boolean =>
  !!a &&
  !!b &&
  a.k === b.k &&
  a.ino === b.ino &&
  a.size === b.size &&
  a.mt === b.mt &&
  a.ct === b.ct &&
  a.mode === b.mode &&
  a.to === b.to;

/**
 * Every path under `root` (relative, parents before children) with its stat, walked through open
 * directories; `skip`: folders (as `dev:ino`) not entered.
 */
async function walk(
  root: string,
  visit: (rel: string, st: Stat, parent: FileHandle, name: string) => Promise<void>,
  skip: ReadonlySet<string> = new Set(),
): Promise<void> {
  const top = await open(root, DIR_FLAGS);
  const dir = async (fd: FileHandle, rel: string): Promise<void> => {
    const names = (await readdir(`/proc/self/fd/${fd.fd}`)).sort();
    // a folder's entries a few at a time (a file's copy is several system calls, each a wait), then
    // its folders in turn: a folder is visited before what it holds
    const folders: [string, string][] = [];
    for (let i = 0; i < names.length; i += IN_FLIGHT)
      await Promise.all(
        names.slice(i, i + IN_FLIGHT).map(async (name) => {
          const st = await statOf(at(fd, name)).catch(() => null); // gone meanwhile, or special
          if (!st || skip.has(st.ino)) return;
          const r = rel ? `${rel}/${name}` : name;
          await visit(r, st, fd, name);
          if (st.k === 'd') folders.push([name, r]);
        }),
      );
    folders.sort((a, b) => (a[0] < b[0] ? -1 : 1));
    for (const [name, r] of folders) {
      const child = await open(at(fd, name), DIR_FLAGS).catch(() => null); // a symlink now: not followed
      if (!child) continue;
      try {
        await dir(child, r);
      } finally {
        await child.close();
      }
    }
  };
  try {
    await dir(top, '');
  } finally {
    await top.close();
  }
}

const sizeText = (n: number): string =>
  n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(1)} GiB` : `${Math.ceil(n / 1024 ** 2)} MiB`;

/**
 * Copies `source` (a checked realpath) into `<dir>/ws` and writes the manifest. `skip`: trees never
 * copied (the state root, should the workspace hold it). A CopyError when it is over `maxBytes`.
 */
export async function createCopy(
  source: string,
  dir: string,
  maxBytes: number,
  skip: readonly string[] = [],
): Promise<WorkspaceCopy> {
  const ws = path.join(dir, 'ws');
  await mkdir(ws, { recursive: true, mode: 0o700 });
  const skipIds = new Set<string>();
  for (const s of skip) {
    const st = await statOf(s).catch(() => null);
    if (st) skipIds.add(st.ino);
  }
  const manifest: Manifest = {};
  let bytes = 0;
  let files = 0;
  let entries = 0;
  try {
    await walk(
      source,
      async (rel, st, parent, name) => {
        if (++entries > MAX_ENTRIES)
          throw new CopyError(`the workspace ${source} holds more than ${MAX_ENTRIES} files and folders`);
        const dest = path.join(ws, rel);
        const entry: Entry = { ...st };
        if (st.k === 'd') await mkdir(dest, { mode: 0o700 });
        else if (st.k === 'l') await symlink(st.to!, dest);
        else {
          bytes += st.size;
          if (bytes > maxBytes)
            throw new CopyError(
              `the workspace ${source} holds more than ${sizeText(maxBytes)} (limits.workspaceCopy): each attempt on a folder that is not a git repository works in a copy of it; make it a git repository (git init, then commit) so that attempts get worktrees, raise limits.workspaceCopy in config.yaml, or give the card a smaller workspace`,
            );
          // the file as opened (never a link put in its place), copied through its descriptor
          const fh = await open(
            at(parent, name),
            constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
          );
          try {
            const now = await fh.stat({ bigint: true });
            if (!now.isFile() || `${now.dev}:${now.ino}` !== st.ino) return; // replaced meanwhile
            await copyFile(`/proc/self/fd/${fh.fd}`, dest, constants.COPYFILE_FICLONE);
          } finally {
            await fh.close();
          }
          await chmod(dest, st.mode & 0o777);
          const c = await statOf(dest);
          if (c) entry.c = { ino: c.ino, mt: c.mt, ct: c.ct, size: c.size, mode: c.mode };
          files++;
        }
        manifest[rel] = entry;
      },
      skipIds,
    );
    // folders' own modes once their files are in (a read-only folder would have refused them)
    for (const [rel, e] of Object.entries(manifest))
      if (e.k === 'd') await chmod(path.join(ws, rel), e.mode & 0o777);
    await writeFile(path.join(dir, 'manifest.json'), JSON.stringify(manifest), { mode: 0o600 });
  } catch (err) {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    throw err;
  }
  return { source, path: ws, files, bytes, state: 'active' };
}

/** Whether two regular files hold the same bytes. */
async function sameBytes(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([
    open(a, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK),
    open(b, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK),
  ]).catch(() => [null, null]);
  if (!x || !y) {
    await x?.close();
    await y?.close();
    return false;
  }
  try {
    const [sx, sy] = await Promise.all([x.stat(), y.stat()]);
    if (!sx.isFile() || !sy.isFile() || sx.size !== sy.size) return false;
    const bx = Buffer.alloc(1 << 20);
    const by = Buffer.alloc(1 << 20);
    for (;;) {
      const [rx, ry] = await Promise.all([x.read(bx, 0, bx.length), y.read(by, 0, by.length)]);
      if (rx.bytesRead !== ry.bytesRead || !bx.subarray(0, rx.bytesRead).equals(by.subarray(0, ry.bytesRead)))
        return false;
      if (rx.bytesRead === 0) return true;
    }
  } finally {
    await x.close();
    await y.close();
  }
}

/** A change of the run's, to apply to the workspace. */
interface Change {
  rel: string;
  /** What the copy has there now (null: removed). */
  now: Stat | null;
  /** What the workspace had there when copied (null: nothing). */
  was: Entry | null;
}

/**
 * What the run changed in its copy against the manifest, in path order (so parents before children).
 * The walk meets a folder's entries in the order their stats come back from the thread pool, which
 * varies from run to run: without the sort a conflict's list of paths came out in a different order.
 */
async function changesOf(copy: string, manifest: Manifest): Promise<Change[]> {
  const seen = new Set<string>();
  const out: Change[] = [];
  await walk(copy, async (rel, st) => {
    seen.add(rel);
    const was = Object.hasOwn(manifest, rel) ? manifest[rel]! : null;
    if (was && was.k === st.k) {
      if (st.k === 'd') return;
      if (st.k === 'l' && st.to === was.to) return;
      if (st.k === 'f' && was.c && same({ ...st }, { ...was.c, k: 'f' })) return;
    }
    out.push({ rel, now: st, was });
  });
  for (const [rel, was] of Object.entries(manifest)) if (!seen.has(rel)) out.push({ rel, now: null, was });
  // code-point order: a path sorts before every path it is a prefix of
  return out.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
}

/**
 * The open folder of `rel`'s parent in the workspace, each component opened without following links;
 * null when a component is missing or not a folder (a link, a file) now.
 */
async function parentOf(root: FileHandle, rel: string): Promise<FileHandle | null> {
  const parts = rel.split('/').slice(0, -1);
  let fd = root;
  for (const p of parts) {
    const next = await open(at(fd, p), DIR_FLAGS).catch(() => null);
    if (fd !== root) await fd.close();
    if (!next) return null;
    fd = next;
  }
  // the root itself, again (its magic link followed: O_NOFOLLOW would refuse the link itself)
  return fd === root
    ? await open(`/proc/self/fd/${root.fd}`, constants.O_RDONLY | constants.O_DIRECTORY)
    : fd;
}

async function withParent<T>(
  root: FileHandle,
  rel: string,
  fn: (dir: FileHandle | null) => Promise<T>,
): Promise<T> {
  const dir = await parentOf(root, rel);
  try {
    return await fn(dir);
  } finally {
    await dir?.close();
  }
}

/**
 * Keep: applies the run's changes in its copy to the workspace. A path the workspace changed since the
 * copy was made (or a new path the workspace has now too) is a conflict unless it already holds what
 * the copy holds: then nothing is applied and the CopyError names the paths.
 */
export async function keepCopy(info: WorkspaceCopy): Promise<WorkspaceCopy> {
  if (info.state !== 'active') throw new CopyError(`the workspace copy was already ${info.state}`);
  const manifest = JSON.parse(
    await readFile(path.join(path.dirname(info.path), 'manifest.json'), 'utf8'),
  ) as Manifest;
  const changes = await changesOf(info.path, manifest);
  const root = await open(info.source, DIR_FLAGS);
  const todo: Change[] = [];
  const conflicts: string[] = [];
  try {
    // folders the run made (or made of a file): what it put in them is new in the workspace too
    const newDirs = new Set(
      changes.filter((c) => c.now?.k === 'd' && c.was?.k !== 'd').map((c) => `${c.rel}/`),
    );
    const inNewDir = (rel: string): boolean => [...newDirs].some((d) => rel.startsWith(d));
    for (const ch of changes) {
      const found = await withParent(root, ch.rel, async (dir) =>
        dir ? statOf(at(dir, path.basename(ch.rel))).catch(() => null) : undefined,
      );
      // no folder there yet, where the run made one: new in the workspace too
      const there = found === undefined && inNewDir(ch.rel) ? null : found;
      if (there === undefined) {
        conflicts.push(`${ch.rel} (a folder on its path is gone or no folder now)`);
        continue;
      }
      const unchanged = ch.was ? same(there, ch.was) : there === null;
      if (unchanged) {
        todo.push(ch);
        continue;
      }
      // already what the copy has (the person made the same change): nothing to do
      const copyPath = path.join(info.path, ch.rel);
      if (
        ch.now === null
          ? there === null
          : there &&
            there.k === ch.now.k &&
            (ch.now.k === 'd' ||
              (ch.now.k === 'l' && there.to === ch.now.to) ||
              (ch.now.k === 'f' &&
                there.mode === ch.now.mode &&
                (await sameBytes(copyPath, path.join(info.source, ch.rel)))))
      )
        continue;
      conflicts.push(ch.rel);
    }
    // a folder the run removed that holds something the workspace has new: a conflict too
    for (const ch of todo)
      if (ch.now === null && ch.was?.k === 'd') {
        const names = await withParent(root, ch.rel, async (dir) =>
          dir ? readdir(at(dir, path.basename(ch.rel))).catch(() => []) : [],
        );
        for (const n of names.sort())
          if (!Object.hasOwn(manifest, `${ch.rel}/${n}`)) conflicts.push(`${ch.rel}/${n}`);
      }
    if (conflicts.length)
      throw new CopyError(
        `the workspace changed meanwhile where the run changed it too, so nothing was applied: ${conflicts.slice(0, 20).join(', ')}${conflicts.length > 20 ? ` and ${conflicts.length - 20} more` : ''} (the run's copy is kept at ${info.path}: take what you want from it, then discard it)`,
      );
    const applied = await apply(root, info.path, todo);
    await rm(path.dirname(info.path), { recursive: true, force: true });
    return { ...info, state: 'kept', applied };
  } finally {
    await root.close();
  }
}

/** Writes the changes into the workspace: removals deepest first, then what is new, parents first. */
async function apply(root: FileHandle, copy: string, todo: Change[]): Promise<string[]> {
  const applied: string[] = [];
  const removals = todo.filter((c) => c.was && (c.now === null || c.now.k !== c.was.k));
  removals.sort((a, b) => b.rel.split('/').length - a.rel.split('/').length);
  for (const c of removals)
    await withParent(root, c.rel, async (dir) => {
      if (!dir) return;
      const name = at(dir, path.basename(c.rel));
      await (c.was!.k === 'd' ? rmdir(name) : unlink(name));
      applied.push(c.rel);
    });
  for (const c of todo.filter((x) => x.now)) {
    const now = c.now!;
    await withParent(root, c.rel, async (dir) => {
      if (!dir)
        throw new CopyError(
          `${c.rel}: its folder is not there in the workspace any more; nothing more was applied`,
        );
      const base = path.basename(c.rel);
      if (now.k === 'd') {
        await mkdir(at(dir, base), { mode: now.mode & 0o777 }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      } else {
        // a new file or link beside the old, then renamed over it: the workspace never holds half a file
        const tmp = at(dir, `.runboard-keep-${randomBytes(6).toString('hex')}`);
        if (now.k === 'l') await symlink(now.to!, tmp);
        else {
          const src = await open(
            path.join(copy, c.rel),
            constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
          );
          try {
            if (!(await src.stat()).isFile())
              throw new CopyError(`${c.rel} in the run's copy is no file now`);
            await copyFile(
              `/proc/self/fd/${src.fd}`,
              tmp,
              constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE,
            );
          } finally {
            await src.close();
          }
          await chmod(tmp, now.mode & 0o777);
        }
        await rename(tmp, at(dir, base));
      }
      if (!applied.includes(c.rel)) applied.push(c.rel);
    });
  }
  return applied;
}

/** Discard: the copy goes. */
export async function discardCopy(info: WorkspaceCopy): Promise<WorkspaceCopy> {
  if (info.state !== 'active') throw new CopyError(`the workspace copy was already ${info.state}`);
  await rm(path.dirname(info.path), { recursive: true, force: true });
  return { ...info, state: 'discarded' };
}

/** Keep or discard (the run's keep/discard, registry.ts). */
export const settleCopy = (info: WorkspaceCopy, how: 'keep' | 'discard'): Promise<WorkspaceCopy> =>
  how === 'keep' ? keepCopy(info) : discardCopy(info);
