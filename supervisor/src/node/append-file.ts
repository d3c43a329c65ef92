/**
 * Append-only files written in order, with the number of bytes already on disk (`committed`) known at
 * every moment. Readers (attached clients) read only up to `committed`, so what they see is exactly
 * what a restarted host would read back from disk.
 *
 * `AppendFiles` writes several files through one queue, one write at a time, in the order the appends
 * came: a reader that samples the `committed` sizes in one go sees every file as of the same moment
 * (what output-files.ts needs to keep stdout, stderr and their order consistent).
 */
import { EventEmitter } from 'node:events';
import { closeSync, fstatSync, openSync, write } from 'node:fs';

/** Above this much queued, producers are told to pause (append returns false). */
const HIGH_WATER = 4 * 1024 * 1024;

export class AppendFiles<F extends string> extends EventEmitter<{
  grow: [];
  failed: [string, NodeJS.ErrnoException];
}> {
  /** Bytes of each file on disk. */
  readonly committed: Record<F, number>;
  private readonly fds: Record<F, number>;
  private queue: { file: F; bufs: Buffer[] }[] = [];
  private queuedBytes = 0;
  private writing = false;
  private closed = false;
  private drainWaiters: (() => void)[] = [];
  /** Set once a write failed (e.g. ENOSPC): later data is dropped and counted. */
  error: NodeJS.ErrnoException | null = null;
  dropped = 0;

  /** Creates (or opens for append) each file; throws, leaving none open, when one cannot be opened. */
  constructor(readonly paths: Record<F, string>) {
    super();
    const fds = {} as Record<F, number>;
    const committed = {} as Record<F, number>;
    try {
      for (const f of Object.keys(paths) as F[]) {
        fds[f] = openSync(paths[f], 'a', 0o600);
        committed[f] = fstatSync(fds[f]).size; // a file that exists is continued
      }
    } catch (err) {
      for (const fd of Object.values<number>(fds)) closeSync(fd);
      throw err;
    }
    this.fds = fds;
    this.committed = committed;
  }

  /** Queues bytes for `file`; returns false when the queue is long and the producer should pause. */
  append(file: F, data: Buffer): boolean {
    if (this.closed || this.error) {
      this.dropped += data.length;
      return true;
    }
    this.queuedBytes += data.length;
    const tail = this.queue[this.queue.length - 1];
    if (tail?.file === file) tail.bufs.push(data);
    else this.queue.push({ file, bufs: [data] });
    if (!this.writing) this.next();
    return this.queuedBytes < HIGH_WATER;
  }

  /** Resolves when everything queued so far is on disk (or failed). */
  drained(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  get pendingBytes(): number {
    return this.queuedBytes;
  }

  /** Waits for everything queued, then closes the files. */
  async close(): Promise<void> {
    await this.drained();
    if (this.closed) return;
    this.closed = true;
    for (const fd of Object.values<number>(this.fds)) closeSync(fd);
  }

  private next(): void {
    const item = this.queue.shift();
    if (!item || this.error) {
      this.writing = false;
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.writing = true;
    const data = item.bufs.length === 1 ? item.bufs[0]! : Buffer.concat(item.bufs);
    this.writeAll(item.file, data, 0);
  }

  private writeAll(file: F, data: Buffer, offset: number): void {
    write(this.fds[file], data, offset, data.length - offset, null, (err, n) => {
      if (err) {
        this.error = err;
        this.dropped += this.queuedBytes;
        this.queuedBytes = 0;
        this.queue = [];
        this.emit('failed', this.paths[file], err);
        this.next();
        return;
      }
      this.committed[file] += n;
      this.queuedBytes -= n;
      this.emit('grow');
      if (offset + n < data.length) this.writeAll(file, data, offset + n);
      else this.next();
    });
  }
}
