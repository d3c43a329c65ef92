/**
 * The fleet's global cap: runs going on all hosts together, whichever board queued them. Each board's
 * scheduler holds its own `maxConcurrency`; several boards on one fleet would add theirs up. So a job
 * carries its board's cap, and the host that takes it first takes a slot in Redis: a sorted set of the
 * runs going (member: the run id, score: when its slot lapses, in Redis's own clock), changed only by
 * one script at a time. A job gets a slot while fewer runs than its cap hold one; else it goes back to
 * the queue for a moment. The host renews the slot while the run goes (every half lease) and gives it
 * back at the end; a host that died stops renewing, and its slots lapse after two leases (by then it
 * has stopped its runs: fencing, fleet-host.ts), so a dead host never holds the cap for good.
 */
import type { Redis } from 'ioredis';

export const SLOTS_KEY = 'runboard:fleet:slots';

/** KEYS[1]: the set; ARGV: run id, cap, ms a slot lasts, "renew" to keep one whatever the count. */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local until_ = now + tonumber(ARGV[3])
if ARGV[4] == 'renew' or redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], until_, ARGV[1])
  return 1
end
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], until_, ARGV[1])
  return 1
end
return 0
`;

type WithTake = Redis & {
  fleetSlotTake(key: string, runId: string, cap: number, ms: number, mode: string): Promise<number>;
};

function withTake(redis: Redis): WithTake {
  const r = redis as WithTake;
  if (typeof r.fleetSlotTake !== 'function')
    redis.defineCommand('fleetSlotTake', { numberOfKeys: 1, lua: TAKE });
  return r;
}

/** Takes a slot for `runId` if fewer than `cap` runs of the fleet hold one; whether it did. */
export async function takeSlot(redis: Redis, runId: string, cap: number, ms: number): Promise<boolean> {
  return (await withTake(redis).fleetSlotTake(SLOTS_KEY, runId, cap, ms, 'take')) === 1;
}

/** Keeps the slot of a run going (also after a Redis restart lost it: the run goes on regardless). */
export async function renewSlot(redis: Redis, runId: string, ms: number): Promise<void> {
  await withTake(redis).fleetSlotTake(SLOTS_KEY, runId, 0, ms, 'renew');
}

export async function releaseSlot(redis: Redis, runId: string): Promise<void> {
  await redis.zrem(SLOTS_KEY, runId);
}
