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
import {
  outputSizes,
  pumpOutput,
  waitFor,
  type OutputSizes,
  type OutputSource,
} from '@runboard/supervisor/run-output';
import {
  DidEnd,
  DidEvent,
  DidOutput,
  DidOutputBytes,
  DidOutputSizes,
  notify,
  RunEvent,
  type Offsets,
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
export interface AttachSource extends OutputSource {
  runId: string;
  events: FileView;
  /** Byte offset of each event seq in events.jsonl, when known (active runs). */
  eventOffset(seq: number): number | undefined;
  /**
   * The event that starts at this offset of events.jsonl, while it is still in memory (active runs):
   * sent as it is once committed, instead of being read back from the file.
   */
  recentEvent(offset: number): { event: RunEvent; end: number } | undefined;
  /**
   * Settles once the output files exist (true) or never will (false). A live run makes them after
   * its launch was answered, so a client attached at once would otherwise find none to point at.
   */
  outputMade(): Promise<boolean>;
  result(): Promise<RunResult>;
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
 * For a client that reads the output files itself: their sizes each time they grew (after the last
 * one sent was written to the socket, so a slow client gets fewer, not more), the last once they are
 * final. With the inode of stdout.log, so the client can tell it opened the same file.
 */
async function pumpSizes(
  src: AttachSource,
  send: (sizes: OutputSizes) => Promise<void>,
  abort: AbortSignal,
): Promise<void> {
  let sent: OutputSizes | undefined;
  while (!abort.aborted) {
    const final = src.isFinal();
    const s = src.outputSizes();
    if (!sent || s.stdout !== sent.stdout || s.stderr !== sent.stderr || s.order !== sent.order) {
      await send(s);
      sent = s;
    }
    if (final) break;
    await waitFor(src.signals, abort, 1000);
  }
}

/** How output reaches an attached client: JSON strings, bytes frames, or sizes only (`files`). */
export type OutputMode = 'json' | 'bytes' | 'files';

/**
 * Streams `src` to `conn` from `from`; resolves when didEnd was sent or the attachment was aborted.
 * `bytes`: output as bytes frames (run/didOutputBytes) instead of JSON strings (run/didOutput);
 * `files`: only the files' sizes (run/didOutputSizes), for a client that reads them itself (else as
 * `bytes` when the run has no stdout.log to point at).
 */
export async function streamRun(
  conn: MessageConnection,
  src: AttachSource,
  from: Offsets,
  abort: AbortSignal,
  mode: OutputMode = 'json',
): Promise<void> {
  const runId = src.runId;
  const id =
    mode === 'files' && (await src.outputMade())
      ? await stat(path.join(src.dir, 'stdout.log')).catch(() => null)
      : null;
  const bytes = mode !== 'json';
  await Promise.all([
    pumpEvents(src, from.events, (event) => notify(conn, DidEvent, { runId, event }), abort),
    id
      ? pumpSizes(
          src,
          (s) => notify(conn, DidOutputSizes, { runId, dir: src.dir, ...s, dev: id.dev, ino: id.ino }),
          abort,
        )
      : pumpOutput(
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
    outputMade: async () => true,
    signals: new EventEmitter(),
    result: async () => result,
  };
}
