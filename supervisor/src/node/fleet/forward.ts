/**
 * Carries a run's records (events, and stdout/stderr in the order they came) from the host that runs
 * it to the Redis stream the submitting supervisor mirrors: the bytes of the run's own files, in
 * bounded pieces. The files stay the host's truth; the stream is the copy in flight.
 */
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { ORDER_FILE, OutputOrder, type OutputStream } from '@runboard/supervisor/run-output';
import type { AttachSource } from '../attach.ts';
import { ArtifactSender } from './artifacts.ts';
import { recordStream } from './job.ts';

const PIECE = 256 * 1024;
/** An abandoned stream (its submitter gone for good) does not stay in Redis forever. */
const STREAM_TTL_S = 7 * 24 * 3600;
/** How often the run's artifacts folder is looked at (the live frame of computer-use changes each second). */
const ARTIFACT_SWEEP_MS = 500;

/**
 * Adds records to a run's stream under ids of its own (0-1, 0-2, …): an XADD that ioredis sends again
 * after a reconnect (Redis had written it, its answer was lost in a Redis restart) is refused as not
 * newer than the last, so no record is in the stream twice.
 */
function streamWriter(redis: Redis, key: string): (...fields: (string | number | Buffer)[]) => Promise<void> {
  let n = 0;
  return async (...fields) => {
    const id = `0-${++n}`;
    try {
      await redis.xadd(key, id, ...fields);
    } catch (err) {
      if (!/equal or smaller/i.test((err as Error).message)) throw err;
      if ((await redis.xrange(key, id, id)).length === 0)
        throw new Error(`the run's record stream ${key} in Redis has records this host did not write`);
    }
  };
}

/** Sends the run's records, first `started` (who runs it), until the run's files are final. */
export async function forwardRecords(
  redis: Redis,
  runId: string,
  src: AttachSource,
  started: { host: string; runId: string },
): Promise<void> {
  const key = recordStream(runId);
  const add = streamWriter(redis, key);
  await add('k', 'started', 'd', JSON.stringify(started));
  const order = new OutputOrder(path.join(src.dir, ORDER_FILE));
  const handles: Partial<Record<OutputStream | 'events', FileHandle>> = {};
  const buf = Buffer.allocUnsafe(PIECE);
  let eventsPos = 0;
  let wake: (() => void) | undefined;
  const onSignal = (): void => wake?.();
  src.signals.on('grow', onSignal);
  src.signals.on('final', onSignal);
  const send = async (kind: string, fh: FileHandle, start: number, end: number): Promise<number> => {
    const { bytesRead } = await fh.read(buf, 0, Math.min(PIECE, end - start), start);
    if (bytesRead > 0) await add('k', kind, 'd', buf.subarray(0, bytesRead));
    return bytesRead;
  };
  const artifacts = new ArtifactSender(
    src.dir,
    {
      piece: async (p) => {
        await add('k', 'artifact', 'n', p.name, 'o', p.offset, 't', p.size, 'd', p.data);
      },
      gone: async (name) => {
        await add('k', 'artifact-gone', 'n', name);
      },
      note: async (n) => {
        await add('k', 'artifact-note', 'n', n.name, 'd', n.why);
      },
    },
    PIECE,
  );
  let swept = 0;
  try {
    for (;;) {
      const final = src.isFinal();
      if (final || Date.now() - swept >= ARTIFACT_SWEEP_MS) {
        swept = Date.now();
        await artifacts.sweep(); // at the end too, once the run's files are final
      }
      const sizes = src.outputSizes();
      const eventsEnd = src.events.committed();
      let sent = false;
      // Events up to whole lines (the mirror numbers them again).
      while (eventsPos < eventsEnd) {
        const fh = (handles.events ??= await open(src.events.path, 'r'));
        const n = await send('events', fh, eventsPos, eventsEnd);
        if (n === 0) break;
        eventsPos += n;
        sent = true;
      }
      for (;;) {
        const seg = await order.next(sizes, final);
        if (seg === 'wait' || seg === 'done') break;
        const fh = (handles[seg.stream] ??= await open(path.join(src.dir, `${seg.stream}.log`), 'r'));
        const n = await send(seg.stream, fh, seg.start, seg.end);
        if (n === 0) break;
        order.advance(seg.stream, n);
        sent = true;
      }
      if (sent) await redis.expire(key, STREAM_TTL_S);
      if (final && !sent) break;
      if (!sent)
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 250);
        });
    }
    await add('k', 'end');
  } finally {
    src.signals.off('grow', onSignal);
    src.signals.off('final', onSignal);
    await order.close();
    await Promise.all(Object.values(handles).map((h) => h.close()));
  }
}
