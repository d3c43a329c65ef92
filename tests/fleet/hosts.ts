/** Supervisors as hosts of a fleet, each with a state root and a granted workspace of its own. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import { Harness } from '../helpers/harness.ts';
import { RedisServer } from './redis.ts';

export const LEASE_MS = 5000;

/**
 * A host offering `flows` with `capacity`; `workspaces` maps a project-relative name to its own granted
 * folder (its harness workspace), or nothing (a host that cannot take any job's workspace).
 */
export async function startHost(
  redisUrl: string,
  name: string,
  flows: string[],
  capacity: number,
  workspaceNames: string[] = ['.'],
  /** More environment for the host (e.g. a longer lease). */
  env: NodeJS.ProcessEnv = {},
  /** Work in this folder instead of the host's own (granted on this host too). */
  folder?: string,
  /** The host's sandbox policy (fleet join's --tcp-port, --udp, --tmp-size, …). */
  sandbox?: Record<string, unknown>,
  /** Node options for the host's process before its bundle (e.g. `--import` of a test-only fault). */
  nodeArgs: string[] = [],
): Promise<Harness> {
  // The host's env names its own workspace: start once to make its folders and grant, then as a host.
  const h = await Harness.start({ env: { RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS) } });
  h.client.close();
  if (folder) createGrant(h.paths, folder);
  const exited = new Promise((r) => h.supervisor.once('exit', r));
  h.supervisor.kill('SIGTERM');
  await exited;
  const wrap = nodeArgs.length ? ([node, ...rest]: string[]) => [node!, ...nodeArgs, ...rest] : undefined;
  await h.startSupervisor(wrap, {
    RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS),
    RUNBOARD_FLEET_CARDS: path.join(h.root, 'fleet-cards'),
    RUNBOARD_FLEET_HOST: JSON.stringify({
      redis: redisUrl,
      name,
      flows,
      capacity,
      workspaces: Object.fromEntries(workspaceNames.map((n) => [n, folder ?? h.workspace])),
      ...(sandbox ? { sandbox } : {}),
    }),
    ...env,
  });
  return h;
}

/**
 * The supervisor the board talks to, with the redis backend, and a private redis-server in its folder.
 * `env`: more environment for the supervisor.
 */
export async function startGateway(
  env: NodeJS.ProcessEnv = {},
): Promise<{ board: Harness; redis: RedisServer; env: NodeJS.ProcessEnv }> {
  const board = await Harness.start({ env: { RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS) } });
  const redis = await RedisServer.start(path.join(board.root, 'redis'));
  board.client.close();
  const exited = new Promise((r) => board.supervisor.once('exit', r));
  board.supervisor.kill('SIGTERM');
  await exited;
  const gatewayEnv = { RUNBOARD_SCHEDULER_BACKEND: 'redis', RUNBOARD_REDIS_URL: redis.url, ...env };
  await board.startSupervisor(undefined, gatewayEnv);
  writeFileSync(path.join(board.root, 'card.md'), '---\ntitle: test card\n---\nSay hello.\n');
  return { board, redis, env: gatewayEnv };
}

/** Most intervals open at one instant. */
export function maxOverlap(spans: [number, number][]): number {
  const edges = spans.flatMap(([a, b]): [number, number][] => [
    [a, 1],
    [b, -1],
  ]);
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (open += d));
  return most;
}
