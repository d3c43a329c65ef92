/**
 * A project's confirmed ledger (issue 27, docs/security-model.md "Projects"): for each card file and for
 * config.yaml, the digest of the text a person confirmed, or the board wrote on top of a confirmed
 * text. A card or config text that is not in the ledger was written by someone else (an editor, a
 * script, a run whose workspace holds the project): it does not run, schedule or widen a sandbox until
 * a person confirms it on the board.
 *
 * The ledger lives in the state root, which no run can read or write: a run cannot forge an entry.
 * It is an append-only log of JSON lines (`{"f":"cards/x.md","d":"<sha256>"}`, the last line of a file
 * wins, `"d":null` forgets it), so a write costs one append and several processes (two boards, the
 * supervisor reading it) need no lock; it is rewritten compactly when it has grown. Beside it, the
 * confirmed config.yaml's text, which the board keeps launching with while a changed one waits.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';

/** The digest of a file's text as the ledger keeps it. */
export const digestOf = (text: string): string => createHash('sha256').update(text).digest('base64url');

/** config.yaml's key in the ledger (cards are `cards/<name>.md`). */
export const CONFIG_KEY = 'config.yaml';

export class Ledger {
  private readonly entries = new Map<string, string>();
  /** How far this process has read the log (its size in bytes then). */
  private offset = 0;
  private lines = 0;
  private ino = -1;
  /** There was no ledger for the project: the board is opening it for the first time. */
  readonly fresh: boolean;

  private constructor(
    readonly file: string,
    readonly projectDir: string,
  ) {
    this.fresh = !this.read();
  }

  /** The ledger of `projectDir` in the state root `stateRoot` (read now; none yet: `fresh`). */
  static open(stateRoot: string, projectDir: string): Ledger {
    const dir = path.resolve(projectDir);
    const key = createHash('sha256').update(dir).digest('hex').slice(0, 24);
    return new Ledger(path.join(stateRoot, 'ledger', `${key}.log`), dir);
  }

  /** The ledger's key of a file of the project (its path relative to the project folder). */
  keyOf(file: string): string {
    return path.relative(this.projectDir, path.resolve(file));
  }

  /** Was this text of `file` confirmed (the last entry of the file has this digest)? */
  confirmed(file: string, digest: string): boolean {
    this.refresh(); // another board of the project may have confirmed (or forgotten) it meanwhile
    return this.entries.get(this.keyOf(file)) === digest;
  }

  /** The digest confirmed for `file` now (undefined: none). */
  entry(file: string): string | undefined {
    this.refresh();
    return this.entries.get(this.keyOf(file));
  }

  /** Records `digest` (null: none) as the confirmed text of each file. */
  record(items: { file: string; digest: string | null }[]): void {
    if (items.length === 0) return;
    this.refresh();
    let out = '';
    for (const { file, digest } of items) {
      const f = this.keyOf(file);
      if (digest === null ? !this.entries.has(f) : this.entries.get(f) === digest) continue;
      out += JSON.stringify({ f, d: digest }) + '\n';
    }
    if (!out) return;
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    this.append(out);
    this.read(); // takes in our lines (and any another process appended just before)
    if (this.lines > 2 * this.entries.size + 512) this.compact();
  }

  /**
   * Appends whole lines or nothing. A full disk cuts a write short where the log's last page ends
   * (tmpfs, ext4 alike): the cut line had no end, the next append's line was glued to it, and that
   * line then confirmed nothing (the soak's c0178: a card written queued without its entry, waiting
   * for a Confirm for ever). What a failed append wrote is cut off again; a log that does not end a
   * line (an older build's cut) gets one first.
   */
  private append(out: string): void {
    const fd = openSync(this.file, 'a+', 0o600);
    try {
      const size = fstatSync(fd).size;
      const last = Buffer.alloc(1);
      if (size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a) out = '\n' + out;
      const buf = Buffer.from(out);
      let done = 0;
      try {
        while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done);
      } catch (err) {
        // ours are the last `done` bytes (O_APPEND): take them back, the log ends where it did
        if (done > 0) ftruncateSync(fd, Math.max(size, fstatSync(fd).size - done));
        throw err;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** The confirmed config.yaml's text (kept beside the log), or undefined when there is none. */
  confirmedConfig(): string | undefined {
    try {
      const text = readFileSync(this.configFile, 'utf8');
      return this.confirmed(path.join(this.projectDir, CONFIG_KEY), digestOf(text)) ? text : undefined;
    } catch {
      return undefined;
    }
  }

  /** Confirms config.yaml's `text`: its digest in the log, its copy beside it. */
  recordConfig(text: string): void {
    mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = `${this.configFile}.${process.pid}.tmp`;
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, this.configFile);
    this.record([{ file: path.join(this.projectDir, CONFIG_KEY), digest: digestOf(text) }]);
  }

  private get configFile(): string {
    return this.file.replace(/\.log$/, '.config.yaml');
  }

  /** Reads what was appended since this process last read (false: there is no ledger file). */
  private read(): boolean {
    let fd: number;
    try {
      fd = openSync(this.file, 'r');
    } catch {
      return false;
    }
    try {
      const st = fstatSync(fd);
      if (st.ino !== this.ino || st.size < this.offset) {
        // new, or compacted by another process: read it whole again
        this.entries.clear();
        this.offset = 0;
        this.lines = 0;
        this.ino = st.ino;
      }
      if (st.size === this.offset) return true;
      const buf = Buffer.alloc(st.size - this.offset);
      const n = readSync(fd, buf, 0, buf.length, this.offset);
      const end = buf.subarray(0, n).lastIndexOf(0x0a) + 1; // a line still being written: next time
      for (const line of buf.subarray(0, end).toString('utf8').split('\n')) {
        if (!line) continue;
        this.lines++;
        // A torn line (a crash, or an older build's append the full disk cut short) confirms
        // nothing, but a whole entry appended after it on the same line still counts.
        if (!this.take(line)) {
          const tail = line.lastIndexOf('{"f":');
          if (tail > 0) this.take(line.slice(tail));
        }
      }
      this.offset += end;
      return true;
    } finally {
      closeSync(fd);
    }
  }

  /** Takes in one line of the log; false when it is no entry. */
  private take(line: string): boolean {
    try {
      const { f, d } = JSON.parse(line) as { f?: unknown; d?: unknown };
      if (typeof f !== 'string') return false;
      if (typeof d === 'string') this.entries.set(f, d);
      else this.entries.delete(f);
      return true;
    } catch {
      return false;
    }
  }

  /** Reads the log again when it changed (one stat when it did not). */
  private refresh(): void {
    try {
      const st = statSync(this.file);
      if (st.ino === this.ino && st.size === this.offset) return;
    } catch {
      return; // none (yet)
    }
    this.read();
  }

  /** Rewrites the log as one line per file (temp file, then rename). */
  /**
   * Rewrites the log with one line per entry. It only saves space, so it never fails the record that
   * called it: on a full disk (the soak) a throw here came after the lines were appended, the board
   * took the write as not done, and the card's file then no longer matched its confirmed digest (a
   * queued card waiting for a Confirm for ever). The next record tries again.
   */
  private compact(): void {
    let out = '';
    for (const [f, d] of this.entries) out += JSON.stringify({ f, d }) + '\n';
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, out, { mode: 0o600 });
      renameSync(tmp, this.file);
    } catch {
      rmSync(tmp, { force: true });
      return;
    }
    this.ino = -1; // read again from the new file
    this.read();
  }
}
