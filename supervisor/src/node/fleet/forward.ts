/**
 * Carries a run's records (events, stdout, stderr) from the host that runs it to the Redis stream the
 * submitting supervisor mirrors: the bytes of the run's own files, in order, in bounded pieces. The
 * files stay the host's truth; the stream is the copy in flight.
 */
import { open, type FileHandle } from 'node:fs/promises';
import type { Redis } from 'ioredis';
import type { AttachSource } from '../attach.ts';
import { recordStream } from './job.ts';

const PIECE = 256 * 1024;
/** An abandoned stream (its submitter gone for good) does not stay in Redis forever. */
const STREAM_TTL_S = 7 * 24 * 3600;

export async function forwardRecords(redis: Redis, runId: string, src: AttachSource): Promise<void> {
  const key = recordStream(runId);
  const views = { events: src.events, stdout: src.stdout, stderr: src.stderr } as const;
  const pos = { events: 0, stdout: 0, stderr: 0 };
  const handles: Partial<Record<keyof typeof views, FileHandle>> = {};
  const buf = Buffer.allocUnsafe(PIECE);
  let wake: (() => void) | undefined;
  const onSignal = (): void => wake?.();
  src.signals.on('grow', onSignal);
  src.signals.on('final', onSignal);
  try {
    for (;;) {
      const final = src.events.isFinal();
      let sent = false;
      for (const kind of ['events', 'stdout', 'stderr'] as const) {
        const end = views[kind].committed();
        while (pos[kind] < end) {
          handles[kind] ??= await open(views[kind].path, 'r');
          const { bytesRead } = await handles[kind].read(buf, 0, Math.min(PIECE, end - pos[kind]), pos[kind]);
          if (bytesRead === 0) break;
          await redis.xadd(key, '*', 'k', kind, 'o', String(pos[kind]), 'd', buf.subarray(0, bytesRead));
          pos[kind] += bytesRead;
          sent = true;
        }
      }
      if (sent) await redis.expire(key, STREAM_TTL_S);
      if (final && !sent) break;
      if (!sent)
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 250);
        });
    }
    await redis.xadd(key, '*', 'k', 'end');
  } finally {
    src.signals.off('grow', onSignal);
    src.signals.off('final', onSignal);
    await Promise.all(Object.values(handles).map((h) => h?.close()));
  }
}
