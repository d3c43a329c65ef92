/**
 * Cards kept at their last good version while their file does not read (decision 114). A card file
 * written in place (a shell's `>`, an editor that saves in place) is empty or half there between the
 * writer's truncation and its last write, and the watcher's sweep can read it then (board-watch.ts).
 * A card that read before is not shown broken for that moment: the board keeps its last good version,
 * marked with what is wrong, and makes no write of it (a rename over the file would cut off the rest
 * of the writer's text). It is shown broken only when it *stays* so: a later sweep brought by a
 * change made outside the board (another card, config.yaml; the board's own writes say nothing of a
 * writer still going), in which no event named the file, finds it as it was when it failed (same
 * inode, size, mtime and ctime). Its next change is an event of its own, which reads it again.
 */
import { statSync } from 'node:fs';
import path from 'node:path';

/** The file's identity now (undefined: it cannot be looked at). */
function identity(file: string): string | undefined {
  try {
    const s = statSync(file, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return undefined;
  }
}

export class UnreadableCards {
  private readonly kept = new Map<string, { error: string; seen: string | undefined }>();

  constructor(private readonly projectDir: string) {}

  /** The files kept now. */
  files(): string[] {
    return [...this.kept.keys()];
  }

  has(file: string): boolean {
    return this.kept.has(file);
  }

  /** The file failed to read or parse with `error`: kept as it is now (a read that failed before it). */
  keep(file: string, error: string): void {
    this.kept.set(file, { error, seen: identity(file) });
  }

  /** The card reads again, is gone or is broken: true when it was kept. */
  drop(file: string): boolean {
    return this.kept.delete(file);
  }

  /** The error it was kept with, when the file is as it was then (nothing written since). */
  stayed(file: string): string | undefined {
    const k = this.kept.get(file);
    return k && k.seen !== undefined && identity(file) === k.seen ? k.error : undefined;
  }

  /** What the board says of a kept card, and why it makes no write of it: undefined when not kept. */
  reason(file: string): string | undefined {
    const k = this.kept.get(file);
    return (
      k &&
      `${path.relative(this.projectDir, file)} does not read now (${k.error}): the board keeps its last good version until the file reads again (a write in progress ends, or you fix it)`
    );
  }
}
