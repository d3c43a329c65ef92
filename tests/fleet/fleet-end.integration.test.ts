/**
 * A job's lock gone at the moment its host moves it on (decision 103): what a Redis outage longer than
 * the lease leaves a move that was in flight when it began, resent by ioredis once Redis is back. The
 * host here has its lock dropped right before each first move (the test-only fault drop-lock.mjs,
 * loaded into the host's process with node's --import; the product has no knob for it), so the move
 * meets "Missing lock" every time, not by luck. The host must take the lock back and move the job again: a run that ran ends as it ended on the
 * host (not failed as stalled by the board, nor left active), a refusal ends failed saying why, and a job
 * sent back to its queue (no slot of the fleet's cap) runs later.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_JOB_VERSION, queueName, redisOptions } from '../../supervisor/src/node/fleet/job.ts';
import { waitUntil, type Harness } from '../helpers/harness.ts';
import { startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
let host: Harness;
let queue: Queue;

beforeAll(async () => {
  ({ board, redis } = await startGateway());
  host = await startHost(redis.url, 'dropper', ['shell'], 2, ['.'], {}, undefined, undefined, [
    '--import',
    path.join(import.meta.dirname, 'drop-lock.mjs'),
  ]);
  queue = new Queue(queueName('shell'), { connection: redisOptions(redis.url) });
}, 120_000);

afterAll(async () => {
  await queue?.close();
  await host?.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

/** The locks the fault dropped, of `kind`, for the job `id` (`end` / `delay`). */
function dropped(kind: string, id: string): number {
  const file = path.join(host.root, 'dropped-locks');
  const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n') : [];
  return lines.filter((l) => l.startsWith(`${kind} `) && l.includes(`:${id}:lock`)).length;
}

const newRunId = (): string => `20260101-000000-${randomBytes(3).toString('hex')}`;

/** A job as a board puts it on the flow's queue (written directly: its caps and sandbox are the test's). */
async function submit(command: string, extra: Record<string, unknown> = {}): Promise<string> {
  const runId = newRunId();
  await queue.add(
    'run',
    {
      v: FLEET_JOB_VERSION,
      runId,
      flow: { name: 'shell', runner: 'command' },
      workspace: '.',
      command,
      card: { title: 'lock dropped', text: '---\ntitle: lock dropped\n---\nhi\n' },
      submittedAt: new Date().toISOString(),
      ...extra,
    },
    { jobId: runId, attempts: 1 },
  );
  return runId;
}

/** The job's end state in Redis, once it has one; its failed reason and the run's status. */
async function ended(
  jobId: string,
): Promise<{ state: string; reason: string; status: string | undefined; stacks: number }> {
  let state = '';
  await waitUntil(
    `job ${jobId} to end`,
    async () => {
      state = (await (await queue.getJob(jobId))?.getState()) ?? 'gone';
      return state === 'completed' || state === 'failed';
    },
    60_000,
  );
  const job = (await queue.getJob(jobId))!;
  const returned = job.returnvalue as { result?: { status?: string } } | null;
  return {
    state,
    reason: job.failedReason ?? '',
    status: returned?.result?.status,
    stacks: job.stacktrace?.length ?? 0,
  };
}

describe("a job whose lock is gone when its host moves it on (a Redis outage's leftover)", () => {
  it('a run that succeeded on the host succeeds on the board (not failed as stalled)', async () => {
    const { runId } = await board.launch('echo done > end.txt');
    const { result } = await board.collect(runId);
    expect(result.status, JSON.stringify(result.termination)).toBe('succeeded');
    expect(existsSync(path.join(host.workspace, 'end.txt'))).toBe(true);
    expect(dropped('end', runId)).toBe(1); // the fault held: its end met "Missing lock" once
  }, 120_000);

  it('a job the host refuses ends failed saying why (not left active with no lock)', async () => {
    const marker = path.join(host.workspace, `ran-${randomBytes(3).toString('hex')}`);
    const id = await submit(`touch ${marker}`, {
      flow: { name: 'shell', runner: 'command', sandbox: { udp: true } },
    });
    const r = await ended(id);
    expect(r.state).toBe('failed');
    expect(r.reason).toMatch(/UDP sockets.*--udp/);
    expect(r.stacks).toBe(1); // its error's stack once, though it was moved twice
    expect(existsSync(marker)).toBe(false);
    expect(dropped('end', id)).toBe(1);
  }, 90_000);

  it("a job sent back to its queue (the fleet's cap taken) runs once the slot is free", async () => {
    // The first holds the cap of 1 until released; the second goes back to the queue, each time with its
    // lock dropped before the move, until the first ends.
    const first = await submit('touch first.txt; while [ ! -e release ]; do sleep 0.1; done', { cap: 1 });
    await waitUntil('the first run going', () => existsSync(path.join(host.workspace, 'first.txt')), 30_000);
    const second = await submit('echo second', { cap: 1 });
    // Taken again (each take counts): it was moved back to its queue at least once.
    await waitUntil(
      'the second job sent back to its queue and taken again',
      async () => ((await queue.getJob(second))?.attemptsStarted ?? 0) >= 2,
      30_000,
    );
    writeFileSync(path.join(host.workspace, 'release'), '');
    for (const id of [first, second]) {
      const r = await ended(id);
      expect(r.state, r.reason).toBe('completed');
      expect(r.status).toBe('succeeded');
      expect(dropped('end', id)).toBe(1);
    }
    expect(dropped('delay', second)).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
