/**
 * Test-only fault, loaded into a fleet host with node's `--import` (tests/fleet/fleet-end): the job's
 * lock is deleted right before the host's first move of each kind ('end', 'delay'), so the move meets
 * "Missing lock": deterministically the state a Redis outage longer than the lease leaves a move that was
 * in flight when it began (resent by ioredis after the lock ran out). It wraps FleetHost's one `move`
 * (fleet-host.ts) in the bundle the host runs (the same module the host loads: one URL, one instance),
 * so the product carries no knob for it. Each lock dropped is a line in `<the harness's root>/dropped-locks`.
 */
import { appendFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';

const chunks = path.join(path.dirname(process.argv[1]), 'supervisor-chunks');
const chunk = readdirSync(chunks).find((n) => /^fleet-host-[\w-]+\.mjs$/.test(n));
if (!chunk) throw new Error(`drop-lock.mjs: no fleet-host chunk in ${chunks} (run node scripts/bundle.mjs)`);
const { FleetHost } = await import(pathToFileURL(path.join(chunks, chunk)).href);
const move = FleetHost.prototype.move;
if (typeof move !== 'function') throw new Error('drop-lock.mjs: FleetHost has no move() to wrap');

const host = JSON.parse(process.env.RUNBOARD_FLEET_HOST ?? '{}');
const log = path.join(path.dirname(process.env.RUNBOARD_HOME ?? '.'), 'dropped-locks');
let redis;

FleetHost.prototype.move = async function (kind, tries, lock, send) {
  if (tries === 0) {
    redis ??= new Redis(host.redis, { maxRetriesPerRequest: null });
    if ((await redis.del(lock)) === 1) appendFileSync(log, `${kind} ${lock}\n`);
  }
  return move.call(this, kind, tries, lock, send);
};
