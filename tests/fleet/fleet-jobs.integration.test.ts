// How the fleet gateway reads a run's job from Redis when it looks for itself (each lease, a takeover, a
// cancel) rather than from the queue's events. Two reads of Redis are not one: a job read while it ran,
// with its state read just after it ended, says `completed` without a return value, which the gateway
// took for a host's unreadable answer and ended the run as crashed (a CI failure). Real Redis, real BullMQ.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readJob } from '../../supervisor/src/node/fleet/gateway.ts';
import { RedisServer } from './redis.ts';

let dir: string;
let redis: RedisServer;
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-jobs-'));
  redis = await RedisServer.start(dir);
}, 30_000);
afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it('a job that ended is read with its return value, never as completed without one', async () => {
  const connection = { url: redis.url };
  const queue = new Queue('jobs-test', { connection });
  let finish!: (v: unknown) => void;
  const taken = new Promise<void>((took) => {
    const worker = new Worker(
      'jobs-test',
      () => {
        took();
        return new Promise((r) => (finish = r));
      },
      { connection },
    );
    afterAll(() => worker.close());
  });
  try {
    await queue.add('run', { x: 1 }, { jobId: 'run-1' });
    await taken;
    // the hazard, read the old way: the job while it runs, its state after it ended
    const early = (await queue.getJob('run-1'))!;
    finish({ result: 'the host record' });
    await expect.poll(() => early.getState(), { timeout: 10_000 }).toBe('completed');
    expect(early.returnvalue ?? null).toBeNull();
    // the gateway's read: the state first, then the job
    const now = await readJob(queue, 'run-1');
    expect(now.state).toBe('completed');
    expect(now.job?.returnvalue).toEqual({ result: 'the host record' });
    expect(await readJob(queue, 'no-such-run')).toEqual({ job: undefined, state: 'gone' });
  } finally {
    await queue.close();
  }
}, 30_000);
