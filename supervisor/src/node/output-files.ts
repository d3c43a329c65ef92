/**
 * A run's output: `stdout.log` and `stderr.log` byte for byte, and `output.order`, which says how the
 * two interleave (see @runboard/supervisor/run-output for the format and its reader).
 *
 * The three files share one write queue (AppendFiles), and a switch record is queued before the bytes
 * that follow it, so it is on disk before any of them: the files read up to the `committed` sizes of
 * one moment are always consistent. That lets a reader (an attached client, `runboard logs`, a host
 * after a restart) put the two streams back in the order the supervisor received them, from the files
 * alone.
 */
import path from 'node:path';
import { orderRecord, ORDER_FILE, type OutputStream } from '@runboard/supervisor/run-output';
import { AppendFiles } from './append-file.ts';

export class OutputFiles extends AppendFiles<OutputStream | 'order'> {
  /** Bytes of each stream taken (on disk or queued). */
  private readonly taken: Record<OutputStream, number> = { stdout: 0, stderr: 0 };
  private last: OutputStream | undefined;

  /** Creates (or opens for append) the three files in `dir`; throws when one cannot be opened. */
  constructor(dir: string) {
    super({
      stdout: path.join(dir, 'stdout.log'),
      stderr: path.join(dir, 'stderr.log'),
      order: path.join(dir, ORDER_FILE),
    });
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
