/**
 * A run's files outside its records: the active-run marker (what a supervisor started after a crash
 * finds), the scan of stderr.log for sandbox denials, and the scratch dir's removal at the end.
 */
import { renameSync, rmSync } from 'node:fs';
import { appendFile, open, rm } from 'node:fs/promises';
import path from 'node:path';
import type { DenialScanner } from './denials.ts';
import type { JailOutput } from './output-files.ts';

/**
 * The active-run marker (`<supervisor>/active/<runId>`: the run's processes and folders), written off
 * the event loop; the writes of one run are chained, in order, and its removal comes after the last.
 */
export class ActiveMarker {
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly onError: (err: Error) => void,
  ) {}

  write(marker: Record<string, unknown>): Promise<unknown> {
    const line = JSON.stringify(marker);
    // Each version is a line appended (one write): a supervisor killed in the middle of one leaves the
    // lines before it whole, and the reader takes the last whole line (registry.ts). Not a new file
    // renamed over the old, which made and freed a file per version (what a launch waits on, on ext4).
    this.writes = this.writes
      .then(() => appendFile(this.file, `${line}\n`, { mode: 0o600 }))
      .catch((err: unknown) => this.onError(err as Error));
    return this.writes;
  }

  /** Removes it after its last write (they are chained), so that none comes back once it is gone. */
  remove(): Promise<unknown> {
    this.writes = this.writes.then(() => rm(this.file, { force: true }));
    return this.writes;
  }
}

/** Most denials a run's stderr is scanned for (the rest of it is not read). */
const MAX_DENIALS = 20;

/**
 * Reads what stderr.log gained since the last scan for sandbox denials (one read at a time; the
 * supervisor never holds the run's output otherwise). `denials`: the run's scanner now (a worktree
 * gives the run a new one).
 */
export class StderrScan {
  /** How far stderr.log was read, and the read going on. */
  private scanned = 0;
  private going: Promise<void> = Promise.resolve();

  constructor(
    private readonly output: JailOutput,
    private readonly denials: () => DenialScanner,
  ) {}

  /** Resolves when the scan reached the size known now. */
  more(): Promise<void> {
    this.going = this.going.then(async () => {
      const end = this.output.committed.stderr;
      if (this.scanned >= end || this.denials().found.length >= MAX_DENIALS) return;
      const fh = await open(this.output.paths.stderr, 'r');
      try {
        const buf = Buffer.allocUnsafe(Math.min(256 * 1024, end - this.scanned));
        while (this.scanned < end && this.denials().found.length < MAX_DENIALS) {
          const want = Math.min(buf.length, end - this.scanned);
          const { bytesRead } = await fh.read(buf, 0, want, this.scanned);
          if (bytesRead === 0) break;
          this.scanned += bytesRead;
          this.denials().scan(buf.subarray(0, bytesRead));
        }
      } finally {
        await fh.close();
      }
    });
    this.going = this.going.catch(() => undefined); // a log dir gone: nothing to scan
    return this.going;
  }
}

/** Scratch dirs of ended runs that are still being removed (after a crash: by the next supervisor). */
export const GONE_SCRATCH_PREFIX = '.gone-';

/** Moves a run's scratch dir out of its name (one rename); returns where it went, to be removed. */
export function goneScratch(dir: string): string {
  const gone = path.join(path.dirname(dir), GONE_SCRATCH_PREFIX + path.basename(dir));
  try {
    renameSync(dir, gone);
    return gone;
  } catch {
    return dir; // not there (a run that never started), or not movable: removed where it is
  }
}

/** Synchronous scratch cleanup for a run from a dead supervisor. */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
