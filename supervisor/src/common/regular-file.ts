/**
 * Reading files a person can put anything in (cards/, config.yaml): only regular files, and never
 * blocking. A plain read of a FIFO waits for a writer for ever (an async read in the thread pool, so a
 * few of them stall every other file read of the process); a directory fails with an EISDIR that names
 * no file. Opening with O_NONBLOCK returns at once whatever the entry is, and fstat on that
 * descriptor says what it is (no race between a check and the read).
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, type Stats } from 'node:fs';

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
