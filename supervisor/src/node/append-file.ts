/**
 * An append-only file written in order, with the number of bytes already on disk (`committed`)
 * known at every moment. Readers (attached clients) read only up to `committed`, so what they see is
 * exactly what a restarted host would read back from disk.
 */
import { EventEmitter } from 'node:events';
import { closeSync, openSync, write } from 'node:fs';

export class AppendFile extends EventEmitter<{ grow: []; failed: [NodeJS.ErrnoException] }> {
  private fd: number;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private writing = false;
  private closed = false;
  private drainWaiters: (() => void)[] = [];
  committed = 0;
  /** Set once a write failed (e.g. ENOSPC): later data is dropped and counted. */
  error: NodeJS.ErrnoException | null = null;
  dropped = 0;

  constructor(readonly path: string) {
    super();
    this.fd = openSync(path, 'a', 0o600);
  }

  /** Queue bytes; returns false when the queue is long and the producer should pause. */
  append(data: Buffer): boolean {
    if (this.closed || this.error) {
      this.dropped += data.length;
      return true;
    }
    this.queue.push(data);
    this.queuedBytes += data.length;
    if (!this.writing) this.flush();
    return this.queuedBytes < 4 * 1024 * 1024;
  }

  /** Resolves when everything queued so far is on disk (or failed). */
  drained(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  get pendingBytes(): number {
    return this.queuedBytes;
  }

  async close(): Promise<void> {
    await this.drained();
    if (!this.closed) {
      this.closed = true;
      closeSync(this.fd);
    }
  }

  private flush(): void {
    if (this.queue.length === 0 || this.error) {
      this.writing = false;
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
      return;
    }
    this.writing = true;
    const data = this.queue.length === 1 ? this.queue[0]! : Buffer.concat(this.queue);
    this.queue = [];
    this.writeAll(data, 0);
  }

  private writeAll(data: Buffer, offset: number): void {
    write(this.fd, data, offset, data.length - offset, null, (err, n) => {
      if (err) {
        this.error = err;
        this.dropped += data.length - offset + this.queuedBytes - data.length;
        this.queuedBytes = 0;
        this.queue = [];
        this.emit('failed', err);
        this.flush();
        return;
      }
      this.committed += n;
      this.queuedBytes -= n;
      this.emit('grow');
      if (offset + n < data.length) this.writeAll(data, offset + n);
      else this.flush();
    });
  }
}
