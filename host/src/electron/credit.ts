/**
 * Flow control for a run stream over Electron IPC, which has none of its own: `webContents.send` queues
 * without limit. The main process counts the bytes it sent, the renderer acknowledges the bytes it has
 * handled, and the difference is the stream's backlog (what the HTTP server gets from the socket's
 * writableLength). BoardService pauses the stream above its high-water mark until `drained()`.
 */
export class StreamCredit {
  private sent = 0;
  private acked = 0;
  private waiters: (() => void)[] = [];

  /** Counts a message about to be sent; returns its size, which the renderer acknowledges. */
  sending(message: unknown): number {
    const n = JSON.stringify(message)?.length ?? 0;
    this.sent += n;
    return n;
  }

  /** The renderer has handled `n` more bytes (acknowledgements may be batched). */
  ack(n: number): void {
    if (!Number.isFinite(n) || n <= 0) return;
    this.acked = Math.min(this.sent, this.acked + n);
    if (this.backlog() === 0) this.release();
  }

  backlog(): number {
    return this.sent - this.acked;
  }

  /** Resolves once everything sent has been acknowledged (or the stream was closed). */
  drained(): Promise<void> {
    if (this.backlog() === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The renderer went away or stopped the stream: nobody will acknowledge any more. */
  close(): void {
    this.acked = this.sent;
    this.release();
  }

  private release(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/**
 * The renderer side: acknowledges handled bytes in batches (one IPC call per `flushBytes`, or at the
 * next turn of the event loop), so a flood of small messages does not become a flood of acks.
 */
export class AckBatcher {
  private pending = 0;
  private scheduled = false;
  constructor(
    private readonly flush: (n: number) => void,
    private readonly flushBytes = 256 * 1024,
  ) {}

  handled(n: number): void {
    this.pending += n;
    if (this.pending >= this.flushBytes) return this.now();
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => this.now(), 0);
  }

  private now(): void {
    this.scheduled = false;
    if (this.pending === 0) return;
    const n = this.pending;
    this.pending = 0;
    this.flush(n);
  }
}
