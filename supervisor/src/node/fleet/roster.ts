/**
 * The fleet's roster: each host says in Redis what it offers (its name, flows and workspace names,
 * never its folders), under a key that expires unless renewed, so a host that died drops out. A board's
 * supervisor reads it at launch and refuses up front a card no host can run (its flow offered by none,
 * or its workspace mapped by none of those that offer it), with the reason on the card, instead of
 * queueing a job that some host refuses later or that waits for good.
 *
 * What is read is written by whoever can write Redis: each entry is checked (a bounded JSON of the
 * shape below) and only used to word a refusal; the hosts still hold each job to their own checks.
 */
import type { Redis } from 'ioredis';
import * as z from 'zod/mini';
import { FLEET_JOB_VERSION } from './job.ts';

const PREFIX = 'runboard:fleet:host:';

export const HostAd = z.object({
  name: z.string().check(z.minLength(1), z.maxLength(100)),
  flows: z.array(z.string().check(z.maxLength(100))).check(z.maxLength(1000)),
  workspaces: z.array(z.string().check(z.maxLength(1024))).check(z.maxLength(1000)),
  capacity: z.int().check(z.minimum(1), z.maximum(1000)),
  /** The fleet version of the jobs it takes (job.ts); hosts of releases before session 17 say none: 1. */
  v: z.optional(z.int().check(z.minimum(0), z.maximum(1_000_000))),
});
export type HostAd = z.infer<typeof HostAd>;

function key(name: string): string {
  return PREFIX + Buffer.from(name).toString('hex');
}

/** Says (again) what this host offers, for `ttlMs`: renewed more often than that while it is up. */
export async function advertise(redis: Redis, ad: HostAd, ttlMs: number): Promise<void> {
  await redis.set(key(ad.name), JSON.stringify(ad), 'PX', ttlMs);
}

/** This host is leaving: it offers nothing any more. */
export async function withdraw(redis: Redis, name: string): Promise<void> {
  await redis.del(key(name));
}

/** The hosts up now, as they said (entries that do not read as one are left out). */
export async function readRoster(redis: Redis): Promise<HostAd[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 200);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0' && keys.length < 10_000);
  if (keys.length === 0) return [];
  const out: HostAd[] = [];
  for (const raw of await redis.mget(...keys)) {
    if (!raw || raw.length > 256 * 1024) continue;
    try {
      const ad = HostAd.safeParse(JSON.parse(raw));
      if (ad.success) out.push(ad.data);
    } catch {
      // not JSON: not a host
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

const list = (xs: string[]): string => (xs.length ? xs.map((x) => JSON.stringify(x)).join(', ') : 'none');

/**
 * Why no host of `roster` can run a job of `flow` in `workspace` (its project-relative name), in words
 * a person acts on; null when one can. A host of another fleet version that offers the flow refuses
 * the launch too: it would take some of the flow's jobs and refuse them (decision 115).
 */
export function whyNoHost(roster: HostAd[], flow: string, workspace: string): string | null {
  const join = `runboard fleet join … --flows ${flow} --workspace ${workspace}=DIR`;
  if (roster.length === 0)
    return `no host of the fleet is up to run it (none has said so in Redis lately): start one with \`${join}\` (after \`runboard grant DIR\` there)`;
  const offering = roster.filter((h) => h.flows.includes(flow));
  if (offering.length === 0)
    return `no host of the fleet offers flow "${flow}" (${roster.map((h) => `${h.name} offers ${list(h.flows)}`).join('; ')}): start one with \`${join}\``;
  // a host of another release takes the flow's jobs from the same queue and refuses (or fails) them
  const other = offering.filter((h) => (h.v ?? 1) !== FLEET_JOB_VERSION);
  if (other.length) {
    const older = other.filter((h) => (h.v ?? 1) < FLEET_JOB_VERSION).map((h) => h.name);
    const newer = other.filter((h) => (h.v ?? 1) > FLEET_JOB_VERSION).map((h) => h.name);
    return `${other.map((h) => `${h.name} runs fleet version ${h.v ?? 1}`).join('; ')}, and this supervisor ${FLEET_JOB_VERSION}: a host of another Runboard release offering flow "${flow}" would refuse the runs of it that it takes; every supervisor of a fleet must run the same release: ${[...(older.length ? [`upgrade ${older.join(', ')}`] : []), ...(newer.length ? ["upgrade this board's supervisor"] : [])].join(' and ')} (or stop ${other.length === 1 ? 'that host' : 'those hosts'})`;
  }
  if (offering.some((h) => h.workspaces.includes(workspace))) return null;
  return `no host of the fleet that offers flow "${flow}" has workspace "${workspace}" (${offering.map((h) => `${h.name} maps ${list(h.workspaces)}`).join('; ')}): on a host, \`runboard grant DIR\` and join with \`--workspace ${workspace}=DIR\``;
}
