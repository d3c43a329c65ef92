/**
 * How a run's stdout and stderr interleave, and a reader that puts them back in that order.
 *
 * A run records its output byte for byte in `stdout.log` and `stderr.log`; `output.order` holds one
 * text line per switch from one stream to the other: `o END` (stdout's bytes up to END came before
 * what follows) or `e END` (the same for stderr). Whatever follows the last record belongs to the other
 * stream. The order is the order in which the supervisor read the two pipes: output written within the
 * same instant to both can arrive in either order (the kernel keeps no order between two pipes), while
 * anything written a moment apart keeps its place.
 *
 * The supervisor writes the three files through one queue and a switch record reaches the disk before
 * any byte that came after it; so the files, read up to the sizes they have at one moment, are always
 * consistent, for a run that is going on, an ended one, and one recorded before a supervisor restart.
 * A run recorded without `output.order` (an older version) reads as its stdout, then its stderr.
 */
import type { EventEmitter } from 'node:events';
import { open, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

export type OutputStream = 'stdout' | 'stderr';
export const ORDER_FILE = 'output.order';

/** The record written when the output switches away from `stream`, whose bytes so far end at `end`. */
export function orderRecord(stream: OutputStream, end: number): string {
  return `${stream === 'stdout' ? 'o' : 'e'} ${end}\n`;
}

/** Sizes on disk, read at one moment. */
export interface OutputSizes {
  stdout: number;
  stderr: number;
  order: number;
}

/** The next stretch of output: bytes [start, end) of `stream`. */
export interface Segment {
  stream: OutputStream;
  start: number;
  end: number;
  /** The other stream's output follows right after `end` (a switch): no need to wait for a line end. */
  atSwitch: boolean;
}

const other = (s: OutputStream): OutputStream => (s === 'stdout' ? 'stderr' : 'stdout');
const READ_BYTES = 64 * 1024;
const RECORD = /^([oe]) (\d{1,15})$/;

/** Walks a run's output in order from given offsets, reading `output.order` as it grows. */
export class OutputOrder {
  /** Offsets of each stream sent (or given as already had) so far. */
  readonly pos: Record<OutputStream, number>;
  private records: [OutputStream, number][] = [];
  private at = 0;
  private lastStream: OutputStream | undefined;
  private readPos = 0;
  private carry = '';
  private fh: FileHandle | undefined;

  constructor(
    private readonly orderPath: string,
    from: Partial<Record<OutputStream, number>> = {},
  ) {
    this.pos = { stdout: from.stdout ?? 0, stderr: from.stderr ?? 0 };
  }

  /**
   * What to send next, given the sizes on disk now (all read at the same moment) and whether the run's
   * files are final: a segment (call `advance` for what was sent of it), 'wait' (nothing more until
   * the files grow) or 'done'.
   */
  async next(sizes: OutputSizes, final: boolean): Promise<Segment | 'wait' | 'done'> {
    for (;;) {
      const rec = this.records[this.at];
      if (rec) {
        const [s, end] = rec;
        const avail = Math.min(end, sizes[s]);
        if (this.pos[s] >= end || (final && avail <= this.pos[s])) {
          this.at++; // already had, or a file shorter than its record says (a crash): go on
          continue;
        }
        if (avail > this.pos[s])
          return { stream: s, start: this.pos[s], end: avail, atSwitch: avail === end };
        return 'wait';
      }
      if (this.readPos < sizes.order && (await this.readRecords(sizes.order))) continue;
      // After the last record only the other stream grows; with no record, only one stream has output.
      const cur = this.lastStream ? other(this.lastStream) : sizes.stdout > 0 ? 'stdout' : 'stderr';
      if (sizes[cur] > this.pos[cur])
        return { stream: cur, start: this.pos[cur], end: sizes[cur], atSwitch: false };
      const rest = other(cur);
      // More of the other stream with no record for it: its record is still being read, or (final) it
      // was lost in a crash or never written (an older run): then it comes last.
      if (sizes[rest] > this.pos[rest]) {
        if (!final) return 'wait';
        return { stream: rest, start: this.pos[rest], end: sizes[rest], atSwitch: false };
      }
      return final ? 'done' : 'wait';
    }
  }

  advance(stream: OutputStream, n: number): void {
    this.pos[stream] += n;
  }

  async close(): Promise<void> {
    await this.fh?.close();
    this.fh = undefined;
  }

  /** Reads more of output.order; true when it gave at least one new record. */
  private async readRecords(size: number): Promise<boolean> {
    if (this.at > 1024) {
      this.records = this.records.slice(this.at);
      this.at = 0;
    }
    this.fh ??= await open(this.orderPath, 'r');
    const buf = Buffer.allocUnsafe(Math.min(READ_BYTES, size - this.readPos));
    const { bytesRead } = await this.fh.read(buf, 0, buf.length, this.readPos);
    if (bytesRead === 0) return false;
    this.readPos += bytesRead;
    const lines = (this.carry + buf.toString('latin1', 0, bytesRead)).split('\n');
    this.carry = lines.pop()!;
    const before = this.records.length;
    for (const line of lines) {
      const m = RECORD.exec(line);
      if (!m) continue; // not a record (a damaged file): the streams' own order is kept
      const s: OutputStream = m[1] === 'o' ? 'stdout' : 'stderr';
      this.records.push([s, Number(m[2])]);
      this.lastStream = s;
    }
    return this.records.length > before || bytesRead === buf.length;
  }
}

/** Sizes of a run's output files as they are on disk now (0 for a missing file). */
export async function outputSizes(logDir: string): Promise<OutputSizes> {
  const size = async (name: string): Promise<number> => {
    try {
      return (await stat(path.join(logDir, name))).size;
    } catch {
      return 0;
    }
  };
  // output.order first, so the logs can only be ahead of it: a run still writing loses nothing to the
  // read; only what it wrote in between may come out of order at the end
  const order = await size(ORDER_FILE);
  const [stdout, stderr] = await Promise.all([size('stdout.log'), size('stderr.log')]);
  return { stdout, stderr, order };
}

/**
 * A run's whole output as it is on disk now, in order, in chunks of at most `chunkBytes`: for readers
 * of a log dir without a supervisor in between (`runboard logs`).
 */
export async function readOutputInOrder(
  logDir: string,
  onChunk: (stream: OutputStream, data: Buffer) => void | Promise<void>,
  chunkBytes = 1024 * 1024,
): Promise<void> {
  const sizes = await outputSizes(logDir);
  const order = new OutputOrder(path.join(logDir, ORDER_FILE));
  const files: Partial<Record<OutputStream, FileHandle>> = {};
  try {
    for (;;) {
      const seg = await order.next(sizes, true);
      if (seg === 'wait' || seg === 'done') break;
      const fh = (files[seg.stream] ??= await open(path.join(logDir, `${seg.stream}.log`), 'r'));
      const buf = Buffer.allocUnsafe(Math.min(chunkBytes, seg.end - seg.start));
      const { bytesRead } = await fh.read(buf, 0, buf.length, seg.start);
      if (bytesRead === 0) break;
      order.advance(seg.stream, bytesRead);
      await onChunk(seg.stream, buf.subarray(0, bytesRead));
    }
  } finally {
    await order.close();
    await Promise.all(Object.values(files).map((f) => f.close()));
  }
}

/** A run's output as a reader sees it: its files, their sizes now, and signals when they change. */
export interface OutputSource {
  /** The run's log dir (stdout.log, stderr.log, output.order). */
  dir: string;
  /** Sizes of the output files on disk, read at one moment. */
  outputSizes(): OutputSizes;
  /** True once nothing more will ever be appended to the output. */
  isFinal(): boolean;
  /** Fires 'grow' when the files may have grown and 'final' when they are complete. */
  signals: EventEmitter;
  /**
   * Wait a moment for more when little output is new (default): fewer, larger messages for a reader
   * that sends them on. A reader that hands the bytes over in-process (a client reading the files)
   * gains nothing by waiting.
   */
  coalesce?: boolean;
  /**
   * The sender is done with a chunk's bytes when `send` returns (it copies them, e.g. into strings):
   * one read buffer serves every chunk, instead of a fresh megabyte each (which V8 counts as external
   * memory and collects for).
   */
  reuseBuffer?: boolean;
}

const MAX_CHUNK = 1024 * 1024;
const SEND_WINDOW = 3;
const PARTIAL_LINE_WAIT_MS = 150;
/** Below this much new output a live stream waits a moment for more: fewer, larger messages. */
const COALESCE_BYTES = 256 * 1024;
const COALESCE_MS = 8;

/** Largest n <= len such that buf[0..n) does not end inside a UTF-8 sequence. */
export function utf8Boundary(buf: Buffer, len: number): number {
  let i = len;
  for (let back = 0; back < 4 && i > 0; back++) {
    const b = buf[i - 1]!;
    if ((b & 0xc0) === 0x80) {
      i--; // continuation byte: keep walking back to the lead byte
      continue;
    }
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return len - (i - 1) >= need ? len : i - 1;
  }
  return len; // not valid UTF-8 anyway: cut anywhere
}

export function waitFor(signals: EventEmitter, abort: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signals.off('grow', done);
      signals.off('final', done);
      abort.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signals.on('grow', done);
    signals.on('final', done);
    abort.addEventListener('abort', done);
  });
}

/**
 * Sends both output streams in the order they were recorded (output.order), from `from`, each chunk
 * read back from disk up to what is committed. A chunk ends at a line end when it can (a live stream
 * waits a moment for the rest of a line), at a switch to the other stream, or at MAX_CHUNK.
 */
export async function pumpOutput(
  src: OutputSource,
  from: Partial<Record<OutputStream, number>>,
  send: (stream: OutputStream, offset: number, data: Buffer) => Promise<void>,
  abort: AbortSignal,
): Promise<void> {
  const order = new OutputOrder(path.join(src.dir, ORDER_FILE), from);
  const files: Partial<Record<OutputStream, FileHandle>> = {};
  let partialSince = 0;
  let shared: Buffer | undefined;
  // A few messages in flight, so reading the next chunk overlaps with the client taking the last one.
  const inflight: Promise<void>[] = [];
  try {
    while (!abort.aborted) {
      const final = src.isFinal();
      let seg = await order.next(src.outputSizes(), final);
      if (seg === 'done') break;
      if (seg === 'wait') {
        await waitFor(src.signals, abort, 1000);
        continue;
      }
      if (
        src.coalesce !== false &&
        !final &&
        !seg.atSwitch &&
        seg.end - seg.start < COALESCE_BYTES &&
        !partialSince
      ) {
        await new Promise((r) => setTimeout(r, COALESCE_MS)); // once: then send what there is
        const again = await order.next(src.outputSizes(), src.isFinal());
        if (typeof again !== 'object') continue;
        seg = again;
      }
      const want = Math.min(seg.end - seg.start, MAX_CHUNK);
      const fh = (files[seg.stream] ??= await open(path.join(src.dir, `${seg.stream}.log`), 'r'));
      // a buffer per chunk unless the sender copies: the socket may still hold the last ones
      const buf = src.reuseBuffer
        ? (shared ??= Buffer.allocUnsafeSlow(MAX_CHUNK))
        : Buffer.allocUnsafeSlow(want);
      const { bytesRead } = await fh.read(buf, 0, want, seg.start);
      if (bytesRead === 0) break;
      let cut = bytesRead;
      if (!(seg.atSwitch && bytesRead === seg.end - seg.start)) {
        cut = buf.lastIndexOf(10, bytesRead - 1) + 1;
        if (cut === 0) {
          const waited = partialSince && Date.now() - partialSince >= PARTIAL_LINE_WAIT_MS;
          if (bytesRead === MAX_CHUNK || final || waited) cut = utf8Boundary(buf, bytesRead) || bytesRead;
          else {
            partialSince ||= Date.now();
            await waitFor(src.signals, abort, PARTIAL_LINE_WAIT_MS);
            continue;
          }
        }
      }
      partialSince = 0;
      order.advance(seg.stream, cut);
      inflight.push(send(seg.stream, seg.start, buf.subarray(0, cut)));
      if (inflight.length >= SEND_WINDOW) await inflight.shift();
    }
    await Promise.all(inflight);
  } finally {
    await order.close();
    await Promise.all(Object.values(files).map((f) => f.close()));
  }
}
