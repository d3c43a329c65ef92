/**
 * Streaming a run to an attached client: replay from an offset, then follow live, then `didEnd`.
 * Every stream is read back from the run's files up to what is committed on disk, so a client that
 * re-attaches with the offsets it has gets every line exactly once, in order (stdout and stderr
 * interleaved as recorded in output.order), whether the run is live, ended, or from before a
 * supervisor restart. A client that asks for bytes gets the output as it is on disk, in bytes frames.
 */
import { EventEmitter } from 'node:events';
import { open, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import { ORDER_FILE, OutputOrder, outputSizes, type OutputSizes } from '@runboard/supervisor/run-output';
import {
  DidEnd,
  DidEvent,
  DidOutput,
  DidOutputBytes,
  notify,
  RunEvent,
  type Offsets,
  type OutputStream,
  type RunResult,
} from '../protocol/index.ts';

/** A view of one growing file. */
export interface FileView {
  path: string;
  committed(): number;
  /** True once nothing more will ever be appended. */
  isFinal(): boolean;
}

/** What can be attached to: an active run or an ended run on disk. */
export interface AttachSource {
  runId: string;
  /** The run's log dir (stdout.log, stderr.log, output.order). */
  dir: string;
  events: FileView;
  /** Sizes of the output files on disk, read at one moment. */
  outputSizes(): OutputSizes;
  /** True once nothing more will ever be appended to the output. */
  isFinal(): boolean;
  /** Byte offset of each event seq in events.jsonl, when known (active runs). */
  eventOffset(seq: number): number | undefined;
  /**
   * The event that starts at this offset of events.jsonl, while it is still in memory (active runs):
   * sent as it is once committed, instead of being read back from the file.
   */
  recentEvent(offset: number): { event: RunEvent; end: number } | undefined;
  /** Fires 'grow' on any append and 'final' when the run has ended and its files are closed. */
  signals: EventEmitter;
  result(): Promise<RunResult>;
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

function waitFor(signals: EventEmitter, abort: AbortSignal, ms: number): Promise<void> {
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
async function pumpOutput(
  src: AttachSource,
  from: Offsets,
  send: (stream: OutputStream, offset: number, data: Buffer) => Promise<void>,
  abort: AbortSignal,
): Promise<void> {
  const order = new OutputOrder(path.join(src.dir, ORDER_FILE), from);
  const files: Partial<Record<OutputStream, FileHandle>> = {};
  let partialSince = 0;
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
      if (!final && !seg.atSwitch && seg.end - seg.start < COALESCE_BYTES && !partialSince) {
        await new Promise((r) => setTimeout(r, COALESCE_MS)); // once: then send what there is
        const again = await order.next(src.outputSizes(), src.isFinal());
        if (typeof again !== 'object') continue;
        seg = again;
      }
      const want = Math.min(seg.end - seg.start, MAX_CHUNK);
      const fh = (files[seg.stream] ??= await open(path.join(src.dir, `${seg.stream}.log`), 'r'));
      // a buffer per chunk: the socket may still hold the last ones when this one is read
      const buf = Buffer.allocUnsafeSlow(want);
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

async function pumpEvents(
  src: AttachSource,
  fromSeq: number,
  send: (e: RunEvent) => Promise<void>,
  abort: AbortSignal,
): Promise<void> {
  let pos = src.eventOffset(fromSeq) ?? 0;
  let fh: FileHandle | undefined;
  let carry = '';
  const buf = Buffer.allocUnsafe(256 * 1024);
  try {
    while (!abort.aborted) {
      const final = src.events.isFinal();
      const end = src.events.committed();
      if (pos < end) {
        const mem = carry === '' ? src.recentEvent(pos) : undefined;
        if (mem && mem.end <= end) {
          pos = mem.end;
          if (mem.event.seq >= fromSeq) await send(mem.event);
          continue;
        }
        fh ??= await open(src.events.path, 'r');
        const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, end - pos), pos);
        if (bytesRead === 0) break;
        pos += bytesRead;
        const text = carry + buf.toString('utf8', 0, bytesRead);
        const lines = text.split('\n');
        carry = lines.pop() ?? '';
        for (const line of lines) {
          if (!line.trim()) continue;
          let parsed;
          try {
            parsed = RunEvent.safeParse(JSON.parse(line));
          } catch {
            continue; // a torn last line after a crash: skipped, the rest stays readable
          }
          if (parsed.success && parsed.data.seq >= fromSeq) await send(parsed.data);
        }
        continue;
      }
      if (final) break;
      await waitFor(src.signals, abort, 1000);
    }
  } finally {
    await fh?.close();
  }
}

/**
 * Streams `src` to `conn` from `from`; resolves when didEnd was sent or the attachment was aborted.
 * `bytes`: output as bytes frames (run/didOutputBytes) instead of JSON strings (run/didOutput).
 */
export async function streamRun(
  conn: MessageConnection,
  src: AttachSource,
  from: Offsets,
  abort: AbortSignal,
  bytes = false,
): Promise<void> {
  const runId = src.runId;
  await Promise.all([
    pumpEvents(src, from.events, (event) => notify(conn, DidEvent, { runId, event }), abort),
    pumpOutput(
      src,
      from,
      bytes
        ? (stream, offset, data) => notify(conn, DidOutputBytes, { runId, stream, offset, bytes: data })
        : (stream, offset, data) =>
            notify(conn, DidOutput, {
              runId,
              stream,
              offset,
              length: data.length,
              data: data.toString('utf8'),
            }),
      abort,
    ),
  ]);
  if (!abort.aborted) await notify(conn, DidEnd, { runId, result: await src.result() });
}

/** An ended run, from its directory on disk. */
export async function diskSource(logDir: string, runId: string, result: RunResult): Promise<AttachSource> {
  const sizes = await outputSizes(logDir);
  let events = 0;
  try {
    events = (await stat(path.join(logDir, 'events.jsonl'))).size;
  } catch {
    // no events recorded
  }
  return {
    runId,
    dir: logDir,
    events: { path: path.join(logDir, 'events.jsonl'), committed: () => events, isFinal: () => true },
    outputSizes: () => sizes,
    isFinal: () => true,
    eventOffset: () => undefined,
    recentEvent: () => undefined,
    signals: new EventEmitter(),
    result: async () => result,
  };
}
