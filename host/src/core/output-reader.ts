/**
 * A run's output read by the client itself from the run's log files (attached with `files`): the
 * supervisor sends only the files' sizes (run/didOutputSizes) and the bytes never cross its process or
 * the socket. The same reader as the supervisor's (`pumpOutput`): both streams in the recorded order,
 * chunks cut at line ends. It first checks that the stdout.log it can open is the supervisor's (same
 * device and inode): a client in another mount namespace, or one that cannot read the files, fails
 * here and attaches again with bytes frames.
 */
import { EventEmitter } from 'node:events';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pumpOutput, type OutputSizes } from '@runboard/supervisor/run-output';
import type { OutputStream } from '@runboard/supervisor/protocol';

export class FileOutputReader {
  private sizes: OutputSizes = { stdout: 0, stderr: 0, order: 0 };
  private final = false;
  private readonly signals = new EventEmitter();
  private readonly abort = new AbortController();
  /** Resolves when everything up to the final sizes was delivered (or the reader was stopped). */
  readonly done: Promise<void>;

  constructor(
    readonly dir: string,
    id: { dev: number; ino: number },
    from: Record<OutputStream, number>,
    deliver: (stream: OutputStream, offset: number, data: Buffer) => void,
    /** `deliver` is done with the bytes when it returns (it decodes them): one read buffer is reused. */
    copies = false,
  ) {
    this.signals.setMaxListeners(0);
    this.done = (async () => {
      const st = await stat(path.join(dir, 'stdout.log'));
      if (st.dev !== id.dev || st.ino !== id.ino)
        throw new Error(`${dir}/stdout.log here is not the supervisor's (another mount namespace?)`);
      await pumpOutput(
        {
          dir,
          outputSizes: () => this.sizes,
          isFinal: () => this.final,
          signals: this.signals,
          coalesce: false, // the sizes come at most every 5 ms already; waiting more only delays
          reuseBuffer: copies,
        },
        from,
        (stream, offset, data) => {
          if (!this.abort.signal.aborted) deliver(stream, offset, data);
          return Promise.resolve();
        },
        this.abort.signal,
      );
    })();
    this.done.catch(() => undefined); // the caller looks at it when it matters
  }

  update(sizes: OutputSizes): void {
    this.sizes = { stdout: sizes.stdout, stderr: sizes.stderr, order: sizes.order };
    this.signals.emit('grow');
  }

  /** The sizes last given are final: deliver the rest, then `done` resolves. */
  end(): void {
    this.final = true;
    this.signals.emit('final');
  }

  /** Nothing more is delivered (detached, closed). */
  stop(): void {
    this.abort.abort();
  }
}
