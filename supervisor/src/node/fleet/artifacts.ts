/**
 * A remote run's artifacts (`<logDir>/artifacts`: screenshots and the live frame of computer-use,
 * reflect's schema.json, extract's task.md, …) copied from the host that runs it to the run's folder
 * on the board's side, where the inspector reads them as it would a local run's.
 *
 * The run writes that folder, so everything in it is hostile input: its names, its sizes, its kinds.
 * - The host sends only regular files, opened without following a link (a link to a file of the host
 *   outside the run would otherwise be read by the supervisor, which is not jailed) and checked after
 *   the open to lie inside the run's folder (a directory swapped for a link meanwhile).
 * - The board's side takes only relative names of plain components (no `..`, no absolute path, no
 *   empty or dot component, a bounded depth and length), writes under the run's own artifacts folder
 *   through directories it made itself, never through a link, and into a new file renamed in place.
 * - Both sides keep a cap per file and per run (RUNBOARD_FLEET_ARTIFACT_MAX_BYTES, default 32 MiB; 8
 *   times that, at most, for all of a run's artifacts): what is over it is not copied, and the run
 *   says so in an event (the file stays on the host, in the host's run folder).
 */
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  realpathSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { ARTIFACTS_DIR } from '../../protocol/index.ts';

/** Bytes one artifact may have to be copied to the board's side. */
export const ARTIFACT_MAX_BYTES = Math.max(
  1024,
  Number(process.env.RUNBOARD_FLEET_ARTIFACT_MAX_BYTES) || 32 * 1024 * 1024,
);
/** Bytes all of a run's artifacts (as they are now) may have together. */
export const RUN_ARTIFACTS_MAX_BYTES = 8 * ARTIFACT_MAX_BYTES;
/** Files a run's artifacts folder may have. */
export const ARTIFACTS_MAX_FILES = 2000;
/** Folders below artifacts/ a file may be in. */
const MAX_DEPTH = 4;
const MAX_NAME = 1024;
/** New files on the board's side, before they are renamed in place (a run's names never start so). */
const INCOMING = '.rb-incoming-';

/** Why `name` is no artifact name the board's side writes, or null when it is one. */
export function badArtifactName(name: string): string | null {
  if (name.length === 0 || Buffer.byteLength(name) > MAX_NAME) return 'its length';
  if (name.includes('\0')) return 'a NUL byte';
  if (name.startsWith('/')) return 'an absolute path';
  const parts = name.split('/');
  if (parts.length > MAX_DEPTH + 1) return `more than ${MAX_DEPTH} folders`;
  for (const p of parts) {
    if (p === '' || p === '.' || p === '..') return `a "${p}" component`;
    if (Buffer.byteLength(p) > 255) return 'a component longer than 255 bytes';
  }
  if (parts[parts.length - 1]!.startsWith(INCOMING)) return 'a reserved name';
  return null;
}

/** One piece of an artifact as sent: bytes [offset, offset + data.length) of a file of `size`. */
export interface ArtifactPiece {
  name: string;
  offset: number;
  size: number;
  data: Buffer;
}

/** What the host side reports instead of a file it does not send. */
export interface ArtifactNote {
  name: string;
  why: string;
}

type Send = {
  piece: (p: ArtifactPiece) => Promise<void>;
  gone: (name: string) => Promise<void>;
  note: (n: ArtifactNote) => Promise<void>;
};

/**
 * The host's side: looks at a run's artifacts folder now and then and sends each new or changed
 * regular file whole (in pieces of `piece` bytes), and the names of files that went away.
 */
export class ArtifactSender {
  private readonly sent = new Map<string, { size: number; mtimeMs: number; ino: number }>();
  private readonly noted = new Set<string>();
  private readonly dir: string;
  private realDir: string | undefined;

  constructor(
    runDir: string,
    private readonly send: Send,
    private readonly piece: number,
  ) {
    this.dir = path.join(runDir, ARTIFACTS_DIR);
  }

  /** One look: sends what changed since the last. */
  async sweep(): Promise<void> {
    if (this.realDir === undefined) {
      try {
        const st = lstatSync(this.dir);
        if (!st.isDirectory()) return; // none (yet), or a link: nothing to copy
        this.realDir = realpathSync(this.dir);
      } catch {
        return;
      }
    }
    const found = new Map<string, { size: number; mtimeMs: number; ino: number }>();
    const skipped: ArtifactNote[] = [];
    await this.walk('', 0, found, skipped);
    let total = 0;
    for (const [name, st] of [...found].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const prev = this.sent.get(name);
      if (st.size > ARTIFACT_MAX_BYTES) {
        skipped.push({ name, why: tooBig(st.size) });
        continue;
      }
      if (total + st.size > RUN_ARTIFACTS_MAX_BYTES || this.sent.size >= ARTIFACTS_MAX_FILES) {
        if (!prev) skipped.push({ name, why: runFull() });
        continue;
      }
      total += st.size;
      if (prev && prev.size === st.size && prev.mtimeMs === st.mtimeMs && prev.ino === st.ino) continue;
      if (await this.sendFile(name)) this.sent.set(name, st);
    }
    for (const name of [...this.sent.keys()])
      if (!found.has(name)) {
        this.sent.delete(name);
        await this.send.gone(name);
      }
    for (const n of skipped) {
      const key = `${n.name}\0${n.why}`;
      if (this.noted.has(key)) continue;
      this.noted.add(key);
      await this.send.note(n);
    }
  }

  private async walk(
    rel: string,
    depth: number,
    found: Map<string, { size: number; mtimeMs: number; ino: number }>,
    skipped: ArtifactNote[],
  ): Promise<void> {
    let entries;
    try {
      entries = await readdir(path.join(this.dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const name = rel ? `${rel}/${e.name}` : e.name;
      if (e.isSymbolicLink())
        skipped.push({ name, why: 'it is a symbolic link: only regular files are copied' });
      else if (e.isDirectory()) {
        if (depth < MAX_DEPTH) await this.walk(name, depth + 1, found, skipped);
        else skipped.push({ name, why: `it is more than ${MAX_DEPTH} folders deep` });
      } else if (e.isFile()) {
        const bad = badArtifactName(name);
        if (bad) {
          skipped.push({ name, why: `its name has ${bad}` });
          continue;
        }
        try {
          const st = lstatSync(path.join(this.dir, name));
          if (st.isFile()) found.set(name, { size: st.size, mtimeMs: st.mtimeMs, ino: st.ino });
        } catch {
          // gone meanwhile
        }
      }
    }
  }

  /** Sends one file as it is at the open; false when it is no regular file of the run's folder. */
  private async sendFile(name: string): Promise<boolean> {
    let fd: number;
    try {
      fd = openSync(
        path.join(this.dir, name),
        constants.O_RDONLY | constants.O_NOFOLLOW | (constants.O_NONBLOCK ?? 0),
      );
    } catch {
      return false; // a link now, or gone
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) return false;
      // A folder on the way swapped for a link since the walk: the open went outside the run's folder.
      let real: string;
      try {
        real = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return false;
      }
      if (!real.startsWith(this.realDir + path.sep)) return false;
      const size = Math.min(st.size, ARTIFACT_MAX_BYTES);
      const buf = Buffer.allocUnsafe(Math.min(this.piece, Math.max(size, 1)));
      let offset = 0;
      do {
        const n = size === 0 ? 0 : readSync(fd, buf, 0, Math.min(buf.length, size - offset), offset);
        if (n === 0 && offset < size) break; // truncated meanwhile: the next look sends it again
        await this.send.piece({ name, offset, size, data: Buffer.from(buf.subarray(0, n)) });
        offset += n;
      } while (offset < size);
      return offset === size;
    } finally {
      closeSync(fd);
    }
  }
}

const tooBig = (size: number): string =>
  `it is ${size} bytes, over the fleet's cap of ${ARTIFACT_MAX_BYTES} bytes for one artifact (RUNBOARD_FLEET_ARTIFACT_MAX_BYTES)`;
const runFull = (): string =>
  `the run's artifacts are over the fleet's cap of ${RUN_ARTIFACTS_MAX_BYTES} bytes or ${ARTIFACTS_MAX_FILES} files together`;

/**
 * The board's side: writes the pieces a host sends into the run's artifacts folder, checking every
 * name and size again (whoever can write the fleet's Redis could send any record). `refuse` says why
 * a record was not written (the run records it as an event).
 */
export class ArtifactMirror {
  readonly dir: string;
  private incoming: { name: string; size: number; got: number; fd: number; tmp: string } | undefined;
  private readonly sizes = new Map<string, number>();
  private readonly refused = new Set<string>();
  private readonly refuse: (name: string, why: string) => void;

  constructor(runDir: string, refuse: (name: string, why: string) => void) {
    this.dir = path.join(runDir, ARTIFACTS_DIR);
    // Once per name and reason: a refused file's every piece would say it again.
    this.refuse = (name, why) => {
      const key = `${name}\0${why}`;
      if (this.refused.has(key) || this.refused.size > 1000) return;
      this.refused.add(key);
      refuse(name, why);
    };
  }

  piece(p: ArtifactPiece): void {
    const bad = badArtifactName(p.name);
    if (bad) return this.refuse(p.name, `its name has ${bad}`);
    if (!Number.isSafeInteger(p.size) || p.size < 0 || !Number.isSafeInteger(p.offset))
      return this.refuse(p.name, 'its record is malformed');
    if (p.size > ARTIFACT_MAX_BYTES) return this.refuse(p.name, tooBig(p.size));
    let others = 0;
    for (const [n, s] of this.sizes) if (n !== p.name) others += s;
    if (
      others + p.size > RUN_ARTIFACTS_MAX_BYTES ||
      (!this.sizes.has(p.name) && this.sizes.size >= ARTIFACTS_MAX_FILES)
    )
      return this.refuse(p.name, runFull());
    let cur = this.incoming;
    if (p.offset === 0) {
      this.abandon();
      try {
        cur = this.incoming = { name: p.name, size: p.size, got: 0, ...this.create(p.name) };
      } catch (err) {
        return this.refuse(p.name, `it could not be written here: ${(err as Error).message}`);
      }
    }
    // A piece of no file begun here (e.g. the start was mirrored by a supervisor before a restart):
    // the host sends the whole file again when it changes; until then the last whole copy stays.
    if (!cur || cur.name !== p.name || cur.size !== p.size || cur.got !== p.offset) return;
    if (cur.got + p.data.length > cur.size) {
      this.abandon();
      return this.refuse(p.name, 'it came with more bytes than announced');
    }
    try {
      writeSync(cur.fd, p.data);
    } catch (err) {
      this.abandon();
      return this.refuse(p.name, `it could not be written here: ${(err as Error).message}`);
    }
    cur.got += p.data.length;
    if (cur.got < cur.size) return;
    closeSync(cur.fd);
    this.incoming = undefined;
    try {
      renameSync(cur.tmp, path.join(this.dir, cur.name));
      this.sizes.set(cur.name, cur.size);
    } catch (err) {
      rmSync(cur.tmp, { force: true });
      this.refuse(cur.name, `it could not be written here: ${(err as Error).message}`);
    }
  }

  gone(name: string): void {
    if (badArtifactName(name)) return;
    this.sizes.delete(name);
    try {
      const full = path.join(this.dir, name);
      if (this.parentIsOurs(name) && lstatSync(full).isFile()) rmSync(full);
    } catch {
      // gone already
    }
  }

  /** Drops a file begun and not finished. */
  abandon(): void {
    const cur = this.incoming;
    if (!cur) return;
    this.incoming = undefined;
    closeSync(cur.fd);
    rmSync(cur.tmp, { force: true });
  }

  /** A new file next to where `name` goes, in folders made here (never through a link). */
  private create(name: string): { fd: number; tmp: string } {
    const parts = name.split('/');
    let dir = this.dir;
    for (const p of ['', ...parts.slice(0, -1)]) {
      if (p) dir = path.join(dir, p);
      try {
        mkdirSync(dir, { mode: 0o700 });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      if (!lstatSync(dir).isDirectory())
        throw new Error(`${path.relative(this.dir, dir) || '.'} is no folder`);
    }
    const tmp = path.join(dir, `${INCOMING}${process.pid}`);
    rmSync(tmp, { force: true });
    const fd = openSync(
      tmp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    return { fd, tmp };
  }

  private parentIsOurs(name: string): boolean {
    let dir = this.dir;
    for (const p of ['', ...name.split('/').slice(0, -1)]) {
      if (p) dir = path.join(dir, p);
      try {
        if (!lstatSync(dir).isDirectory()) return false;
      } catch {
        return false;
      }
    }
    return true;
  }
}
