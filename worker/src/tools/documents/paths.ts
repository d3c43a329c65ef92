// The document tools read and write only inside the run's workspace. A path is resolved against the
// workspace and, where it exists, through its symlinks (a link inside pointing outside is outside).
import { constants, existsSync, realpathSync } from 'node:fs';
import { open, readlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

export class DocumentError extends Error {
  override name = 'DocumentError';
}

function real(p: string): string {
  // The deepest existing ancestor decides: a file about to be written does not exist yet.
  let dir = p;
  const rest: string[] = [];
  while (!existsSync(dir)) {
    const parent = path.dirname(dir);
    if (parent === dir) break;
    rest.unshift(path.basename(dir));
    dir = parent;
  }
  return path.join(realpathSync(dir), ...rest);
}

/**
 * The absolute path of `p` (relative to the workspace or absolute), refused when it leaves the workspace
 * and every folder of `also` (the flow's granted writable trees, which the jail gives the run too).
 */
export function insideWorkspace(workspace: string, p: string, also: readonly string[] = []): string {
  if (typeof p !== 'string' || p.trim() === '')
    throw new DocumentError('path is empty: give a file path inside the workspace');
  const root = realpathSync(workspace);
  const abs = real(path.resolve(root, p));
  for (const dir of [root, ...also.map((d) => real(d))]) {
    const rel = path.relative(dir, abs);
    if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) return abs;
  }
  throw new DocumentError(
    `${p} ${OUTSIDE} (${root}); the document tools read and write only files inside it${also.length ? " and the flow's sandbox.writable folders" : ''}: copy the file into the workspace, or, to allow it, grant its folder (\`runboard grant DIR\`) and add it to the flow's sandbox.writable in config.yaml`,
  );
}

const OUTSIDE = 'is outside the workspace';

/**
 * A document tool's refusal of a path outside the run's workspace, from its error text: a permission
 * the person may give (the card asks), never something the agent may work around. What to ask, with
 * how to allow it; null when the text is not such a refusal.
 */
export function outsideRefusal(text: string): string | null {
  const i = text.indexOf(` ${OUTSIDE} (`);
  if (i <= 0) return null;
  const p = text.slice(0, i).split('\n').pop()!;
  return `${p} ${OUTSIDE}; to allow it, grant its folder (runboard grant DIR) and add it to the flow's sandbox.writable`;
}

/** A path as the tools report it: relative to the workspace, or absolute in an allowed folder outside it. */
export function relativeOrAbsolute(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  return rel.startsWith('..') || path.isAbsolute(rel) ? abs : rel;
}

/** The folders a document tool may use: the workspace and the flow's granted writable trees, real paths. */
function roots(workspace: string, also: readonly string[]): string[] {
  return [realpathSync(workspace), ...also.map((d) => real(d))];
}

/** What an open descriptor is, read back from the kernel (no check-then-use race), inside `dirs`? */
async function opened(handle: FileHandle, dirs: string[], shown: string): Promise<void> {
  const at = await readlink(`/proc/self/fd/${handle.fd}`);
  if (!dirs.some((d) => at === d || at.startsWith(d + path.sep))) {
    await handle.close();
    throw new DocumentError(
      `${shown} ${OUTSIDE} (${dirs[0]}): it was moved or linked outside while it was opened`,
    );
  }
}

/**
 * Reads `abs` (insideWorkspace()'s answer) as the tools may: a regular file, not through a link as
 * its last name (O_NOFOLLOW), and what was opened still inside the workspace or `also` (a folder on the
 * way swapped for a link between the check and the open is caught here). At most `maxBytes`.
 */
export async function readInside(
  workspace: string,
  abs: string,
  also: readonly string[],
  shown: string,
  maxBytes: number,
): Promise<Buffer> {
  let handle: FileHandle;
  try {
    handle = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new DocumentError(
      code === 'ELOOP'
        ? `${shown} is a symbolic link: the document tools read only regular files (copy the file here)`
        : `${shown}: no such file in the workspace`,
    );
  }
  await opened(handle, roots(workspace, also), shown);
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new DocumentError(`${shown} is not a regular file`);
    if (st.size > maxBytes)
      throw new DocumentError(
        `${shown}: ${st.size} bytes, more than the ${maxBytes >> 20} MiB the document tools read`,
      );
    const buf = Buffer.alloc(st.size);
    let got = 0;
    while (got < buf.length) {
      const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return buf.subarray(0, got);
  } finally {
    await handle.close();
  }
}

/**
 * Writes `data` to `abs` (insideWorkspace()'s answer) without following any link: its folder is opened
 * and checked as opened (inside the workspace or `also`), and the file is made in that very folder
 * (through /proc/self/fd/N/NAME, Linux's openat from Node) with O_NOFOLLOW, so a link in its place,
 * dangling or not, is refused, and a folder swapped after the check is not written through.
 */
export async function writeInside(
  workspace: string,
  abs: string,
  also: readonly string[],
  shown: string,
  data: Uint8Array,
): Promise<void> {
  const dir = await open(path.dirname(abs), constants.O_RDONLY | constants.O_DIRECTORY).catch(() => {
    throw new DocumentError(`${shown}: its folder cannot be opened`);
  });
  try {
    await opened(dir, roots(workspace, also), shown);
    let file: FileHandle;
    try {
      file = await open(
        `/proc/self/fd/${dir.fd}/${path.basename(abs)}`,
        constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
        0o644,
      );
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new DocumentError(
        code === 'ELOOP'
          ? `${shown} is a symbolic link: the document tools never write through one (remove it, or name another file)`
          : `${shown} cannot be written: ${(err as Error).message}`,
      );
    }
    try {
      const st = await file.stat();
      if (!st.isFile()) throw new DocumentError(`${shown} is not a regular file: not overwritten`);
      if (st.nlink > 1)
        throw new DocumentError(`${shown} has other names (hard links): not overwritten, name another file`);
      await file.truncate(0);
      await file.writeFile(data);
    } finally {
      await file.close();
    }
  } finally {
    await dir.close().catch(() => {});
  }
}
