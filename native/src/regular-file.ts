/**
 * Reading files a person or a run can put anything in (cards/, config.yaml, a run's artifacts, a
 * recording's recording.json, manifest and screenshots): only regular files, and never blocking. The
 * one helper for that in every process (here, the lowest layer all of them import). A plain read of a FIFO waits for a writer for ever (an async read in the thread pool, so a
 * few of them stall every other file read of the process); a directory fails with an EISDIR that names
 * no file. Opening with O_NONBLOCK returns at once whatever the entry is, and fstat on that
 * descriptor says what it is (no race between a check and the read).
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  readFileSync,
  writeSync,
  type Stats,
} from 'node:fs';
import { open, readlink, realpath, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/** The entry exists but is no regular file (a directory, a FIFO, a socket, a device). */
export class NotRegularFile extends Error {}

/** O_NONBLOCK is POSIX; elsewhere there are no FIFOs to block on. */
const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function refuse(st: Stats): NotRegularFile {
  return new NotRegularFile(`${kindOf(st)}, not a regular file: only regular files are read`);
}

/** A socket's open fails (ENXIO), a symbolic link's with O_NOFOLLOW (ELOOP): say what it is. */
function explain(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENXIO')
    return new NotRegularFile('a socket, not a regular file: only regular files are read');
  if (code === 'ELOOP')
    return new NotRegularFile(
      'a symbolic link, not a regular file: such files are read only when they are regular files (copy the file here instead of linking it)',
    );
  return err;
}

/**
 * `file` opened when it is a regular file (the caller closes `fd`); NotRegularFile when it is something
 * else. With `noFollow`, a symbolic link is refused too: a card a run wrote as a link to a file outside
 * its grant would otherwise be read (and written back) by the host. With `maxBytes`, a larger file is
 * refused before it is read.
 */
export function openRegularFileSync(
  file: string,
  opts: { noFollow?: boolean; maxBytes?: number } = {},
): { fd: number; st: Stats } {
  let fd: number;
  try {
    fd = openSync(file, opts.noFollow ? FLAGS | (constants.O_NOFOLLOW ?? 0) : FLAGS);
  } catch (err) {
    throw explain(err);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw refuse(st);
    if (opts.maxBytes !== undefined && st.size > opts.maxBytes)
      throw new NotRegularFile(
        `${st.size} bytes, more than the ${opts.maxBytes} read here: not read (is it the file you meant?)`,
      );
    return { fd, st };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** The bytes of `file` when it is a regular file (openRegularFileSync's checks). */
export function readRegularFileBytesSync(
  file: string,
  opts: { noFollow?: boolean; maxBytes?: number } = {},
): Buffer {
  const { fd } = openRegularFileSync(file, opts);
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The text of `file` when it is a regular file (openRegularFileSync's checks). */
export function readRegularFileSync(
  file: string,
  opts: { noFollow?: boolean; maxBytes?: number } = {},
): string {
  return readRegularFileBytesSync(file, opts).toString('utf8');
}

export interface RegularFileOptions {
  /** Refuse a symbolic link (O_NOFOLLOW): for anything a run may have written. */
  noFollow?: boolean;
  /** Refuse a larger file before reading it; never read more than this either (a file that grows). */
  maxBytes?: number;
  /**
   * The file must be inside this folder as opened: O_NOFOLLOW covers only the last name, and a run
   * could make a folder on the way a link (`screenshots -> ~/Pictures`). What was opened is read back
   * from /proc/self/fd, so no rename between a check and the open can fool it.
   */
  within?: string;
}

/**
 * `file` opened off the calling thread (fs.promises) when it is a regular file: the checks of
 * openRegularFileSync. The caller closes `handle`.
 */
export async function openRegularFile(
  file: string,
  opts: RegularFileOptions = {},
): Promise<{ handle: FileHandle; st: Stats }> {
  let handle: FileHandle;
  try {
    handle = await open(file, opts.noFollow ? FLAGS | (constants.O_NOFOLLOW ?? 0) : FLAGS);
  } catch (err) {
    throw explain(err);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw refuse(st);
    if (opts.within !== undefined) {
      const opened = await readlink(`/proc/self/fd/${handle.fd}`);
      const root = await realpath(opts.within);
      if (!opened.startsWith(root + path.sep))
        throw new NotRegularFile(
          `it leads outside ${opts.within} (a link on its way): only files inside it are read`,
        );
    }
    if (opts.maxBytes !== undefined && st.size > opts.maxBytes)
      throw new NotRegularFile(
        `${st.size} bytes, more than the ${opts.maxBytes} read here: not read (is it the file you meant?)`,
      );
    return { handle, st };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * The bytes of `file` when it is a regular file, read off the calling thread, at most `maxBytes` of
 * them (default 64 MiB): a run's file that grows while it is read is cut there, not followed.
 */
export async function readRegularFile(file: string, opts: RegularFileOptions = {}): Promise<Buffer> {
  const maxBytes = opts.maxBytes ?? 64 << 20;
  const { handle, st } = await openRegularFile(file, { ...opts, maxBytes });
  try {
    const buf = Buffer.alloc(Math.min(st.size, maxBytes));
    let at = 0;
    while (at < buf.length) {
      const { bytesRead } = await handle.read(buf, at, buf.length - at, at);
      if (bytesRead === 0) break; // it shrank meanwhile
      at += bytesRead;
    }
    return at === buf.length ? buf : buf.subarray(0, at);
  } finally {
    await handle.close();
  }
}

/** The text of `file` (readRegularFile's checks and bound). */
export async function readRegularFileText(file: string, opts: RegularFileOptions = {}): Promise<string> {
  return (await readRegularFile(file, opts)).toString('utf8');
}

/**
 * Replaces the text of `file` in place (the same inode) when it is a regular file with one link;
 * undefined, writing nothing, when it is not (missing, a link, a hard-linked file): the caller then
 * writes it as it would otherwise (a temp file renamed over it). For files that runs have bound
 * read-only into their mount namespaces (a project's config.yaml, docs/security-model.md "Write"):
 * a rename over such a file detaches the runs' read-only mounts on it (the kernel drops the mounts on
 * a name it unlinks) and a run could then write the new file; rewritten in place it keeps them.
 * The price: not atomic as a rename is. A reader may see the file half written (it reads it again at
 * the next change), and a crash between the write and the truncate leaves the old text's tail after
 * the new (the confirm ledger holds the whole confirmed text: ledger.ts). With `unchangedFrom`, false
 * (nothing written) when the file does not hold that text.
 */
export function rewriteInPlaceSync(file: string, text: string, unchangedFrom?: string): boolean | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDWR | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENXIO') return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.nlink !== 1) return undefined;
    if (unchangedFrom !== undefined && readFileSync(fd).toString('utf8') !== unchangedFrom) return false;
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at, at);
    ftruncateSync(fd, bytes.length);
    return true;
  } finally {
    closeSync(fd);
  }
}
