/**
 * The fleet's caps: runs going on all hosts together, whichever board queued them. Each board's
 * scheduler holds its own `maxConcurrency` and flow `cap`s; several boards on one fleet would add theirs
 * up. So a job carries its board's caps (the global one and its flow's), and the host that takes it
 * first takes a slot in Redis for each: sorted sets of the runs going (member: the run id, score: when
 * its slot lapses, in Redis's own clock), one for the whole fleet and one per flow, changed only by one
 * script at a time, so both slots are taken together or neither. A job gets its slots while fewer runs
 * than each cap hold one; else it goes back to the queue for a moment. The host renews the slots while
 * the run goes (every half lease) and gives them back at the end; a host that died stops renewing, and
 * its slots lapse after two leases (by then it has stopped its runs: fencing, fleet-host.ts), so a dead
 * host never holds a cap for good.
 */
import type { Redis } from 'ioredis';

export const SLOTS_KEY = 'runboard:fleet:slots';

/** The slot set of one flow's runs (flow names are free text: hex keeps the key plain). */
export function flowSlotsKey(flow: string): string {
  return `runboard:fleet:flow-slots:${Buffer.from(flow).toString('hex').slice(0, 400)}`;
}

/** The caps a job asks its host to keep (0 or none: not bounded by that one). */
export interface SlotCaps {
  /** The fleet's global cap (the board's scheduler.maxConcurrency). */
  cap?: number | undefined;
  /** Its flow's cap (the board's flows.<name>.cap), over the runs of that flow on the whole fleet. */
  flowCap?: number | undefined;
  flow: string;
}

/**
 * KEYS[1]: the fleet's set, KEYS[2]: the flow's; ARGV: run id, cap, flow cap (0: that set is not
 * used), ms a slot lasts, "renew" to keep the run's slots whatever the counts.
 */
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = now + tonumber(ARGV[4])
local caps = { tonumber(ARGV[2]), tonumber(ARGV[3]) }
for i = 1, 2 do
  if caps[i] > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    if ARGV[5] ~= 'renew' and not redis.call('ZSCORE', KEYS[i], ARGV[1])
       and redis.call('ZCARD', KEYS[i]) >= caps[i] then
      return 0
    end
  end
end
for i = 1, 2 do
  if caps[i] > 0 then redis.call('ZADD', KEYS[i], until_, ARGV[1]) end
end
return 1
`;

type WithTake = Redis & {
  fleetSlotsTake(
    key: string,
    flowKey: string,
    runId: string,
    cap: number,
    flowCap: number,
    ms: number,
    mode: string,
  ): Promise<number>;
};

function withTake(redis: Redis): WithTake {
  const r = redis as WithTake;
  if (typeof r.fleetSlotsTake !== 'function')
    redis.defineCommand('fleetSlotsTake', { numberOfKeys: 2, lua: TAKE });
  return r;
}

const n = (cap: number | undefined): number => (cap && Number.isInteger(cap) && cap >= 1 ? cap : 0);

/** Whether `caps` bound the run at all (else it takes no slot). */
export function capped(caps: SlotCaps): boolean {
  return n(caps.cap) > 0 || n(caps.flowCap) > 0;
}

/** Takes the slots of `runId` if fewer than each cap's runs of the fleet hold one; whether it did. */
export async function takeSlot(redis: Redis, runId: string, caps: SlotCaps, ms: number): Promise<boolean> {
  const k = flowSlotsKey(caps.flow);
  return (
    (await withTake(redis).fleetSlotsTake(SLOTS_KEY, k, runId, n(caps.cap), n(caps.flowCap), ms, 'take')) ===
    1
  );
}

/** Keeps the slots of a run going (also after a Redis restart lost them: the run goes on regardless). */
export async function renewSlot(redis: Redis, runId: string, caps: SlotCaps, ms: number): Promise<void> {
  const k = flowSlotsKey(caps.flow);
  await withTake(redis).fleetSlotsTake(SLOTS_KEY, k, runId, n(caps.cap), n(caps.flowCap), ms, 'renew');
}

export async function releaseSlot(redis: Redis, runId: string, caps: SlotCaps): Promise<void> {
  await redis.multi().zrem(SLOTS_KEY, runId).zrem(flowSlotsKey(caps.flow), runId).exec();
}
