/**
 * A run's output: `stdout.log` and `stderr.log` byte for byte, and `output.order`, which says how the
 * two interleave (see @runboard/supervisor/run-output for the format and its reader). Two writers:
 *
 * - `JailOutput`: a local run's jail moves the output from the run's pipes into the files itself
 *   (native/src/linux/output_pump.h, with splice(2): the bytes never pass through the supervisor) and
 *   reports the three sizes of one moment on its status channel; the supervisor only hands the files
 *   over and keeps the sizes.
 * - `OutputFiles`: output the supervisor receives itself (a fleet host's run mirrored on the board's
 *   machine), written through one queue (AppendFiles).
 *
 * Either way a switch record is on disk before any byte that follows it, so the files read up to the
 * `committed` sizes of one moment are always consistent. That lets a reader (an attached client,
 * `runboard logs`, a host after a restart) put the two streams back in the order they were received,
 * from the files alone.
 */
import { EventEmitter } from 'node:events';
import { closeSync, constants, open } from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { orderRecord, ORDER_FILE, type OutputStream } from '@runboard/supervisor/run-output';
import { AppendFiles } from './append-file.ts';

type OutputFile = OutputStream | 'order';

const openFd = promisify(open);

/** What a run's records need of its output, whoever writes it. */
export interface RunOutput extends EventEmitter<{ grow: []; failed: [string, NodeJS.ErrnoException] }> {
  /** Bytes of each file on disk (read up to these, the three are consistent). */
  readonly committed: Readonly<Record<OutputFile, number>>;
  /** Bytes lost after a failed write. */
  readonly dropped: number;
  /**
   * Settles once the files exist (true) or never will (false: they could not be made, or the run
   * ended first): a client that reads them itself waits for it before it looks for them.
   */
  readonly made: Promise<boolean>;
  close(): Promise<void>;
}

const outputPaths = (dir: string): Record<OutputFile, string> => ({
  stdout: path.join(dir, 'stdout.log'),
  stderr: path.join(dir, 'stderr.log'),
  order: path.join(dir, ORDER_FILE),
});

export class OutputFiles extends AppendFiles<OutputFile> implements RunOutput {
  /** Bytes of each stream taken (on disk or queued). */
  private readonly taken: Record<OutputStream, number> = { stdout: 0, stderr: 0 };
  private last: OutputStream | undefined;

  /** The constructor makes them or throws. */
  readonly made = Promise.resolve(true);

  /** Creates (or opens for append) the three files in `dir`; throws when one cannot be opened. */
  constructor(dir: string) {
    super(outputPaths(dir));
  }

  /** Queues output of `stream`; returns false when the queue is long and the producer should pause. */
  output(stream: OutputStream, data: Buffer): boolean {
    if (data.length === 0 || this.error) return this.append(stream, data);
    if (this.last !== undefined && this.last !== stream)
      this.append('order', Buffer.from(orderRecord(this.last, this.taken[this.last])));
    this.last = stream;
    this.taken[stream] += data.length;
    return this.append(stream, data);
  }
}

/** The sizes a jail reports (a status line `output`). */
export interface JailSizes {
  stdout: number;
  stderr: number;
  order: number;
  dropped?: number | undefined;
}

/** Output written by the run's jail: the supervisor opens the files, hands them over, keeps the sizes. */
export class JailOutput
  extends EventEmitter<{ grow: []; failed: [string, NodeJS.ErrnoException] }>
  implements RunOutput
{
  readonly committed: Record<OutputFile, number> = { stdout: 0, stderr: 0, order: 0 };
  dropped = 0;
  readonly paths: Record<OutputFile, string>;
  private fds: number[] | undefined;

  private opening: Promise<void> | undefined;
  private closed = false;
  readonly made: Promise<boolean>;
  private settleMade!: (made: boolean) => void;

  constructor(dir: string) {
    super();
    this.paths = outputPaths(dir);
    this.made = new Promise((resolve) => (this.settleMade = resolve));
  }

  /**
   * Creates the three files (empty), off the event loop: a create costs a millisecond or more on a
   * busy disk, and every launch and attached client would wait for it. Rejects, leaving none open,
   * when one cannot be made.
   */
  open(): Promise<void> {
    this.opening ??= (async () => {
      // Not O_APPEND: the jail writes at the end it finds.
      const made = await Promise.allSettled(
        Object.values(this.paths).map((p) => openFd(p, constants.O_WRONLY | constants.O_CREAT, 0o600)),
      );
      const fds = made.flatMap((m) => (m.status === 'fulfilled' ? [m.value] : []));
      const failed = made.find((m) => m.status === 'rejected');
      if (failed || this.closed) {
        for (const fd of fds) closeSync(fd);
        this.settleMade(false);
        if (failed) throw failed.reason;
        throw new Error('the run ended before its output files were made');
      }
      this.fds = fds;
      this.settleMade(true);
    })();
    return this.opening;
  }

  /** stdout.log, stderr.log and output.order, open for writing, for the jail (`--output-fds`). */
  get fileFds(): number[] {
    if (!this.fds) throw new Error('the output files are not open (or were handed over already)');
    return this.fds;
  }

  /** The jail has its own copies (or will never start): the supervisor's are closed. */
  handedOver(): void {
    for (const fd of this.fds ?? []) closeSync(fd);
    this.fds = undefined;
  }

  /** What the jail reported; sizes only grow. */
  sizes(s: JailSizes): void {
    let grew = false;
    for (const f of ['stdout', 'stderr', 'order'] as const)
      if (s[f] > this.committed[f]) {
        this.committed[f] = s[f];
        grew = true;
      }
    this.dropped = Math.max(this.dropped, s.dropped ?? 0);
    if (grew) this.emit('grow');
  }

  /** A write of the jail failed (`file`: the file's name in the log dir). */
  failed(file: string, code: string, message: string): void {
    const err: NodeJS.ErrnoException = Object.assign(new Error(message), { code });
    this.emit('failed', path.join(path.dirname(this.paths.stdout), file), err);
  }

  close(): Promise<void> {
    this.closed = true;
    this.settleMade(false); // no-op once they were made
    this.handedOver();
    return Promise.resolve();
  }
}
