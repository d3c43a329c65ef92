/**
 * Tells the supervisor where this board's launches run (config `scheduler.backend`: local, or redis
 * with `redis.url`), before the first launch and again whenever the config changes or the supervisor
 * is a new one.
 */
import type { BoardStore } from './board-store.ts';
import type { SupervisorClient } from './supervisor-client.ts';

export async function followBackend(store: BoardStore, client: SupervisorClient): Promise<void> {
  const send = async (): Promise<void> => {
    const cfg = store.config;
    await client.setBackend({
      backend: cfg.scheduler.backend,
      ...(cfg.redis ? { redisUrl: cfg.redis.url } : {}),
      ...(cfg.redis?.passwordSecret ? { redisPasswordSecret: cfg.redis.passwordSecret } : {}),
      // on a fleet, a cap for all the fleet's runs together (several boards share it)
      ...(cfg.scheduler.backend === 'redis'
        ? {
            maxConcurrency: cfg.scheduler.maxConcurrency,
            // and each flow's cap, over that flow's runs of the whole fleet
            flowCaps: Object.fromEntries(
              Object.entries(cfg.flows).flatMap(([n, f]) => (f.cap >= 1 ? [[n, f.cap]] : [])),
            ),
          }
        : {}),
    });
  };
  const warn = (err: Error): void => {
    process.emitWarning(`runboard: could not set the scheduler backend: ${err.message}`);
  };
  client.on('reconnected', () => void send().catch(warn));
  store.on('config', () => void send().catch(warn));
  // A supervisor from before fleets answers "method not found": launches then stay local, as before.
  await send().catch(warn);
}
