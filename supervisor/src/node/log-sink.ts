/**
 * Where the supervisor's log lines go (its stderr: `<state>/supervisor/supervisor.log` when a client
 * started it). pino's own file destination (SonicBoom) keeps every line it cannot write and tries the
 * failed chunk again at each new line; on a full disk its error became an uncaught exception whose log
 * line failed too, so the supervisor's memory grew by megabytes a second (soak 3: 295 → 1330 MiB in 6
 * min), and at exit it flushed synchronously, sleeping and retrying for ever, so no stop ended it.
 *
 * This sink writes off the event loop, one chunk at a time, and holds at most `maxBytes` of lines not
 * yet written: past that a line is dropped and counted (the count is written once the disk has room,
 * and `supervisor/status` reports it). A failed write is tried again with the next line or after
 * `retryMs`, never in a loop. At exit it makes one synchronous attempt and gives up at the first error.
 */
import { write, writeSync } from 'node:fs';

export interface LogSinkState {
  /** Bytes of lines held, not yet written. */
  buffered: number;
  /** Lines dropped because `maxBytes` were held already. */
  dropped: number;
  /** The last write's error code while writes fail (e.g. ENOSPC); undefined once one succeeds. */
  failing: string | undefined;
}

export interface LogSink {
  /** What pino writes to (a DestinationStream). */
  write(line: string): void;
  state(): LogSinkState;
  /** One synchronous attempt to write what is held (at exit); never waits, never retries. */
  flushOnce(): void;
}

const CHUNK_BYTES = 64 * 1024;

export function logSink(fd: number, o: { maxBytes?: number; retryMs?: number } = {}): LogSink {
  const maxBytes = o.maxBytes ?? 4 * 1024 * 1024;
  const retryMs = o.retryMs ?? 1000;
  const held: Buffer[] = [];
  let buffered = 0;
  let dropped = 0;
  /** Dropped lines not yet said in the log itself. */
  let unsaid = 0;
  let failing: string | undefined;
  let writing = false;
  let retry: NodeJS.Timeout | undefined;

  const hold = (b: Buffer): void => {
    held.push(b);
    buffered += b.length;
  };
  const take = (): Buffer => {
    const parts: Buffer[] = [];
    let n = 0;
    while (held.length && (n === 0 || n + held[0]!.length <= CHUNK_BYTES)) {
      const b = held.shift()!;
      parts.push(b);
      n += b.length;
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
  };
  const kick = (): void => {
    if (writing || held.length === 0) return;
    clearTimeout(retry);
    retry = undefined;
    writing = true;
    const chunk = take();
    write(fd, chunk, 0, chunk.length, null, (err, n) => {
      writing = false;
      if (err) {
        failing = err.code ?? err.message;
        held.unshift(chunk); // kept (it counts in `buffered` still), tried again later
        retry ??= setTimeout(kick, retryMs).unref();
        return;
      }
      failing = undefined;
      buffered -= n;
      if (n < chunk.length) {
        held.unshift(chunk.subarray(n));
      } else if (unsaid > 0) {
        const note = `${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, dropped: unsaid, msg: `${unsaid} log lines were dropped: the log could not be written` })}\n`;
        unsaid = 0;
        hold(Buffer.from(note));
      }
      kick();
    });
  };

  return {
    write(line: string): void {
      const b = Buffer.from(line);
      if (buffered + b.length > maxBytes) {
        dropped++;
        unsaid++;
        return;
      }
      hold(b);
      kick();
    },
    state: () => ({ buffered, dropped, failing }),
    flushOnce(): void {
      if (writing) return; // the chunk in flight is the kernel's now; the rest waits behind it
      try {
        while (held.length) {
          const chunk = take();
          const n = writeSync(fd, chunk);
          buffered -= n;
          if (n < chunk.length) return;
        }
      } catch {
        // the disk is still full: what is held is lost with the process
      }
    },
  };
}
