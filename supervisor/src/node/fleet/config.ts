/**
 * A supervisor's part in a fleet, from its environment (set by `runboard fleet join` for a host, and
 * by the board for the supervisor it starts when the config says scheduler.backend: redis).
 */
import os from 'node:os';
import path from 'node:path';
import * as z from 'zod/mini';
import type { HostOffer } from './job.ts';
import { redisOptions } from './redis-url.ts';
import { HostPolicy } from './policy.ts';

const HostSpec = z.object({
  redis: z.string(),
  name: z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
  flows: z.array(z.string().check(z.minLength(1), z.maxLength(100))).check(z.minLength(1)),
  capacity: z.int().check(z.minimum(1), z.maximum(1000)),
  workspaces: z.record(z.string(), z.string()),
  /** The sandbox jobs may have here at most (absent: a local run's defaults, nothing more). */
  sandbox: z.optional(HostPolicy),
});

export interface FleetConfig {
  /** Launches go to the fleet through this Redis. */
  gateway?: { redisUrl: string; redisPassword?: string };
  /** This supervisor takes runs from the fleet. */
  host?: { redisUrl: string; redisPassword?: string; offer: HostOffer };
}

export function fleetConfig(env: NodeJS.ProcessEnv): FleetConfig {
  const out: FleetConfig = {};
  // Redis's password apart from the URL: from `fleet join`'s file/stdin/secret, in this process's
  // environment only (never a command line, never a run's: the jail passes a fixed list of variables)
  const pw = env.RUNBOARD_REDIS_PASSWORD;
  const password = pw ? { redisPassword: pw } : {};
  const backend = env.RUNBOARD_SCHEDULER_BACKEND;
  if (backend && backend !== 'local' && backend !== 'redis')
    throw new Error(`RUNBOARD_SCHEDULER_BACKEND is "${backend}"; it is local or redis`);
  if (backend === 'redis') {
    const url = env.RUNBOARD_REDIS_URL;
    if (!url) throw new Error('scheduler.backend is redis but no redis.url is set (RUNBOARD_REDIS_URL)');
    redisOptions(url, pw); // a clear error now rather than at the first launch
    out.gateway = { redisUrl: url, ...password };
  }
  if (env.RUNBOARD_FLEET_HOST) {
    let raw: unknown;
    try {
      raw = JSON.parse(env.RUNBOARD_FLEET_HOST);
    } catch {
      throw new Error('RUNBOARD_FLEET_HOST is not JSON; start a host with `runboard fleet join`');
    }
    const spec = HostSpec.safeParse(raw);
    if (!spec.success) throw new Error(`RUNBOARD_FLEET_HOST: ${z.prettifyError(spec.error)}`);
    redisOptions(spec.data.redis);
    const workspaces: Record<string, string> = {};
    for (const w of spec.data.sandbox?.writable ?? [])
      if (!path.isAbsolute(w)) throw new Error(`fleet --writable ${w}: the folder must be absolute`);
    for (const [name, folder] of Object.entries(spec.data.workspaces)) {
      if (!path.isAbsolute(folder))
        throw new Error(`fleet workspace ${name}=${folder}: the folder must be absolute`);
      workspaces[name] = folder;
    }
    out.host = {
      redisUrl: spec.data.redis,
      ...password,
      offer: {
        name: spec.data.name ?? os.hostname(),
        flows: spec.data.flows,
        capacity: spec.data.capacity,
        workspaces,
        policy: spec.data.sandbox ?? {},
      },
    };
  }
  return out;
}
