/**
 * A run's output and events for one viewer (an inspector), over a supervisor connection of its own
 * (attachments are per connection), with backpressure: see `streamRun`.
 */
import type { Offsets, OutputStream, RunEvent, RunResult } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { RunStreamMessage } from '../shared/board-types.ts';
import { SupervisorClient, type AttachHandlers } from './supervisor-client.ts';

/** How much of each output stream an inspector is sent when it opens a run (the rest: "export run"). */
export const STREAM_TAIL_BYTES = 2 * 1024 * 1024;
/** Bytes a viewer may have not yet taken before the host pauses its run stream (see streamRun). */
export const STREAM_HIGH_WATER = 4 * 1024 * 1024;

/** One viewer of a run stream (an SSE response, an Electron window). */
export interface RunViewer {
  send(m: RunStreamMessage): void;
  /** Bytes sent but not yet taken by the viewer; without it the stream is never paused. */
  backlog?(): number;
  /** Resolves when the viewer has taken what was sent (or is gone). */
  drained?(): Promise<void>;
}

function errorEvent(err: unknown): RunEvent {
  return { seq: -1, ts: new Date().toISOString(), type: 'error', message: String(err) };
}

/**
 * Streams a run to one viewer over its own supervisor connection (attachments are per connection):
 * the last STREAM_TAIL_BYTES of each output first, then live, as whole lines in batches.
 *
 * Backpressure: when `viewer.backlog()` (bytes the viewer has not taken yet, e.g. an SSE socket's
 * write buffer) passes STREAM_HIGH_WATER, the host detaches from the supervisor and re-attaches from
 * the exact offsets it had reached once `viewer.drained()` resolves. So a slow page never makes the
 * host buffer a growing log: host memory stays bounded whatever the log's size, and no line is lost.
 */
export function streamRun(
  paths: StatePaths,
  runId: string,
  viewer: RunViewer,
  /** The run as last seen, when known: its sizes say where the tail starts. */
  known?: RunResult,
): () => void {
  let stopped = false;
  let client: SupervisorClient | undefined;
  const partial = { stdout: '', stderr: '' };
  // Lines not yet sent, as runs of one stream in the order they were completed (stdout and stderr
  // interleaved as the supervisor recorded them).
  let pending: { stream: OutputStream; lines: string[] }[] = [];
  let pendingLines = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  let paused = false;
  const flush = (): void => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    for (const { stream, lines } of pending) viewer.send({ type: 'lines', stream, lines });
    pending = [];
    pendingLines = 0;
    if (!paused && !stopped && (viewer.backlog?.() ?? 0) > STREAM_HIGH_WATER && viewer.drained) void pause();
  };
  const push = (stream: OutputStream, lines: string[]): void => {
    if (!lines.length) return;
    const last = pending[pending.length - 1];
    if (last?.stream === stream) for (const l of lines) last.lines.push(l);
    else pending.push({ stream, lines });
    pendingLines += lines.length;
  };
  let from: Partial<Offsets> = {
    events: 0,
    stdout: Math.max(0, (known?.stdoutBytes ?? 0) - STREAM_TAIL_BYTES),
    stderr: Math.max(0, (known?.stderrBytes ?? 0) - STREAM_TAIL_BYTES),
  };
  const skipped = from.stdout! + from.stderr!;
  const skipFirstPartial = { stdout: from.stdout! > 0, stderr: from.stderr! > 0 };
  const handlers: AttachHandlers = {
    onOutput: (stream, data) => {
      const text = partial[stream] + data;
      const lines = text.split('\n');
      partial[stream] = lines.pop()!;
      if (skipFirstPartial[stream] && lines.length) {
        lines.shift(); // the tail started mid-line
        skipFirstPartial[stream] = false;
      }
      push(stream, lines);
      // a big backlog goes out at once (and may pause the stream); a trickle waits up to 50 ms
      if (pendingLines >= 20_000) flush();
      else flushTimer ??= setTimeout(flush, 50);
    },
    onEvent: (event) => {
      flush();
      viewer.send({ type: 'event', event });
    },
    onLost: (err) => viewer.send({ type: 'event', event: errorEvent(err) }),
    onEnd: (result) => {
      for (const s of ['stdout', 'stderr'] as const) {
        if (partial[s]) push(s, [partial[s]]);
        partial[s] = '';
      }
      flush();
      viewer.send({ type: 'end', result });
    },
  };
  const pause = async (): Promise<void> => {
    if (!client) return;
    paused = true;
    try {
      from = (await client.detach(runId)) ?? from;
      await viewer.drained!();
      if (stopped) return;
      paused = false;
      await client.attach(runId, handlers, from);
    } catch (err) {
      if (!stopped) viewer.send({ type: 'event', event: errorEvent(err) });
    }
  };
  void (async () => {
    try {
      // reconnect: a supervisor that dies mid-run is replaced, and the viewer still gets the run's end
      client = await SupervisorClient.connect(paths, { reconnect: true });
      if (stopped) return client.close();
      const run = await client.attach(runId, handlers, from);
      viewer.send({ type: 'start', run, skippedBytes: skipped });
    } catch (err) {
      viewer.send({ type: 'event', event: errorEvent(err) });
    }
  })();
  return () => {
    stopped = true;
    clearTimeout(flushTimer);
    client?.close();
  };
}
