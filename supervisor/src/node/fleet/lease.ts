/**
 * A job's lease, kept by Runboard rather than BullMQ's lock renewal and stalled check (decision 103).
 *
 * BullMQ's lock is a key with a time to live: a Redis restart longer than what was left of it (or a
 * host held up that long) loses it for good, its renewal then fails and its stalled check fails the job,
 * though the host is alive and runs it. Here:
 * - the host holds each job it took (`holdJob`, every fifth of a lease): it renews its lock, or takes
 *   it again if the lock is gone while the job is still active from this host's own take of it and
 *   nobody declared it stalled (one Lua script, so a verdict and a re-take never both win);
 * - the board's supervisor declares a job stalled (`StallJudge`) only when it saw the job active and
 *   its lock absent, look after look, for `VERDICT_MS` while Redis answered it: a restart's outage
 *   does not count, and the host's re-take once Redis is back ends the count;
 * - fencing: a host that could not hold a job for `FENCE_MS` (= lease + verdict: the earliest a
 *   verdict can come) stops its run, and the board waits one more lease before ending the run, so a
 *   retry never overlaps it.
 */
import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { LEASE_MS } from './job.ts';

/** How long a job's lock must be seen missing (Redis answering) before the job is declared stalled. */
export const VERDICT_MS = 2 * LEASE_MS;
/** A host that could not hold a job this long stops its run: no verdict can have come before. */
export const FENCE_MS = LEASE_MS + VERDICT_MS;
/** How often hosts hold their jobs and boards look at the jobs' locks. */
export const LOOK_MS = LEASE_MS / 5;

/**
 * KEYS: the job's lock, the queue's active list, the job's hash. ARGV: the host's token, the lease
 * (ms), the job id, the job's start count (`ats`) as the host took it. 1: renewed, 2: taken again,
 * 0: lost (someone else's lock or a verdict's, or the job is no longer active from this take).
 */
const HOLD = `
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if cur then return 0 end
if redis.call('HGET', KEYS[3], 'ats') ~= ARGV[4] then return 0 end
if redis.call('HEXISTS', KEYS[3], 'finishedOn') == 1 then return 0 end
if not redis.call('LPOS', KEYS[2], ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 2
`;

/** KEYS: the job's lock, the queue's active list. ARGV: the verdict's token, ms, the job id. 1: claimed. */
const CLAIM = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if not redis.call('LPOS', KEYS[2], ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

type WithLease = Redis & {
  fleetHold(
    lock: string,
    active: string,
    job: string,
    token: string,
    ms: number,
    id: string,
    ats: string,
  ): Promise<number>;
  fleetClaim(lock: string, active: string, token: string, ms: number, id: string): Promise<number>;
};

function withLease(redis: Redis): WithLease {
  const r = redis as WithLease;
  if (typeof r.fleetHold !== 'function') {
    redis.defineCommand('fleetHold', { numberOfKeys: 3, lua: HOLD });
    redis.defineCommand('fleetClaim', { numberOfKeys: 2, lua: CLAIM });
  }
  return r;
}

/** A job a host took, as its lease needs it. */
export interface HeldJob {
  /** The job's key in Redis (`bull:<queue>:<id>`). */
  key: string;
  /** The queue's active list. */
  active: string;
  id: string;
  token: string;
  /** Its start count when this host took it (each take by any host adds one). */
  ats: number;
}

/** Renews the job's lock, or takes it again (see HOLD); whether the job is still this host's. */
export async function holdJob(redis: Redis, job: HeldJob): Promise<boolean> {
  const r = await withLease(redis).fleetHold(
    `${job.key}:lock`,
    job.active,
    job.key,
    job.token,
    LEASE_MS,
    job.id,
    String(job.ats),
  );
  return r !== 0;
}

/**
 * The board's side of the lease: looks at the active jobs of its queues and fails, as stalled, one
 * whose lock it saw missing at every look for `VERDICT_MS` (looks at most a lease apart, each answered).
 */
export class StallJudge {
  /** job key → when its lock was first seen missing (this run of looks). */
  private readonly missing = new Map<string, number>();
  private lastLook = 0;

  constructor(private readonly redis: Redis) {}

  /** One look at `queues`; the ids of the jobs it declared stalled. */
  async look(queues: Queue[], now = Date.now()): Promise<string[]> {
    // A look that came late (this process held up) did not see what happened in between.
    if (now - this.lastLook > LEASE_MS) this.missing.clear();
    const stalled: string[] = [];
    const seen = new Set<string>();
    try {
      for (const queue of queues) {
        const ids = await this.redis.lrange(queue.keys.active!, 0, -1);
        for (const id of ids) {
          const key = queue.toKey(id);
          seen.add(key);
          if ((await this.redis.exists(`${key}:lock`)) === 1) {
            this.missing.delete(key);
            continue;
          }
          const since = this.missing.get(key);
          if (since === undefined) {
            this.missing.set(key, now);
            continue;
          }
          if (now - since < VERDICT_MS) continue;
          this.missing.delete(key);
          if (await this.fail(queue, id, key)) stalled.push(id);
        }
      }
    } catch {
      // Redis did not answer: nothing was seen missing without a break.
      this.missing.clear();
      this.lastLook = 0;
      return stalled;
    }
    for (const key of [...this.missing.keys()]) if (!seen.has(key)) this.missing.delete(key);
    this.lastLook = now;
    return stalled;
  }

  /** Claims the job (no host can take it again after this) and fails it as stalled. */
  private async fail(queue: Queue, id: string, key: string): Promise<boolean> {
    const token = `stalled:${process.pid}:${Date.now()}`;
    const claimed = await withLease(this.redis).fleetClaim(
      `${key}:lock`,
      queue.keys.active!,
      token,
      LEASE_MS,
      id,
    );
    if (claimed !== 1) return false;
    const job = await Job.fromId(queue, id);
    if (!job) return false;
    await job.moveToFailed(
      new Error(
        `job stalled: its host did not renew its lease for ${VERDICT_MS} ms while Redis answered (the host died or lost its network)`,
      ),
      token,
      false,
    );
    return true;
  }
}
