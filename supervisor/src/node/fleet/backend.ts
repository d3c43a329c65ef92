/**
 * Where a supervisor's launches run (SetBackend): here, or on a fleet through Redis. The choice is kept
 * in the state root, so a supervisor started again (after a crash, an upgrade) sends launches where the
 * board last said, before the board is back.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type pino from 'pino';
import type { StatePaths } from '../../common/paths.ts';
import { missingRedisPassword, readRedisPassword } from '../../common/secrets.ts';
import { JsonRpcCodes, ResponseError } from '../../protocol/index.ts';
import type { RunRegistry } from '../registry.ts';
import type * as FleetHostModule from './fleet-host.ts';
import type * as GatewayModule from './gateway.ts';
import { redisOptions } from './redis-url.ts';

/**
 * The fleet's code (BullMQ, ioredis: most of the supervisor's bundle) is loaded only when a fleet is
 * used: a supervisor in local mode never parses it (scripts/bundle.mjs splits it into a chunk).
 */
export const loadGateway = (): Promise<typeof GatewayModule> => import('./gateway.ts');
export const loadFleetHost = (): Promise<typeof FleetHostModule> => import('./fleet-host.ts');

type Backend = {
  backend: 'local' | 'redis';
  redisUrl?: string | undefined;
  /** The name of the stored Redis password (secrets.ts), never the password itself. */
  redisPasswordSecret?: string | undefined;
  maxConcurrency?: number | undefined;
  flowCaps?: Record<string, number> | undefined;
};

const file = (paths: StatePaths): string => path.join(paths.supervisorDir, 'backend.json');

export async function setBackend(
  registry: RunRegistry,
  p: Backend,
  paths: StatePaths,
  log: pino.Logger,
): Promise<{ backend: Backend['backend'] }> {
  if (p.backend === 'redis') {
    if (!p.redisUrl)
      throw new ResponseError(
        JsonRpcCodes.InvalidParams,
        'the redis backend needs redis.url (redis://host:6379)',
      );
    try {
      redisOptions(p.redisUrl, redisPassword(paths, p));
    } catch (err) {
      throw new ResponseError(JsonRpcCodes.InvalidParams, (err as Error).message);
    }
  }
  await apply(registry, p, log);
  const tmp = `${file(paths)}.tmp`;
  writeFileSync(tmp, JSON.stringify(p.backend === 'redis' ? p : { backend: 'local' }) + '\n', {
    mode: 0o600,
  });
  renameSync(tmp, file(paths));
  return { backend: p.backend };
}

/** At start: the backend the board last chose (local when none was ever chosen). */
export async function restoreBackend(
  registry: RunRegistry,
  paths: StatePaths,
  log: pino.Logger,
): Promise<void> {
  let saved: Backend;
  try {
    saved = JSON.parse(readFileSync(file(paths), 'utf8')) as Backend;
  } catch {
    return;
  }
  try {
    await apply(registry, saved, log);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'the saved backend is unusable; launches run here');
  }
}

/** The stored password `p` names (undefined when it names none); throws when it is not stored. */
function redisPassword(paths: StatePaths, p: Backend): string | undefined {
  if (!p.redisPasswordSecret) return undefined;
  const pw = readRedisPassword(paths, p.redisPasswordSecret);
  if (pw === null) throw new Error(missingRedisPassword(paths, p.redisPasswordSecret));
  return pw;
}

async function apply(registry: RunRegistry, p: Backend, log: pino.Logger): Promise<void> {
  if (p.backend !== 'redis' || !p.redisUrl) {
    // Runs already on the fleet keep being mirrored by the old gateway until they end.
    registry.fleet = undefined;
    return;
  }
  if (registry.fleet?.redisUrl !== p.redisUrl) {
    const { FleetGateway } = await loadGateway();
    if (registry.fleet?.redisUrl !== p.redisUrl) {
      // (unless another call made it meanwhile)
      registry.fleet = new FleetGateway({
        redisUrl: p.redisUrl,
        redisPassword: redisPassword(registry.paths, p),
        log,
        activeDir: path.join(registry.paths.supervisorDir, 'active'),
      });
      log.info('launches go to the fleet');
    }
  }
  registry.fleet.cap = p.maxConcurrency;
  registry.fleet.flowCaps = p.flowCaps;
}
