/** Supervisors as hosts of a fleet, each with a state root and a granted workspace of its own. */
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import { Harness } from '../helpers/harness.ts';

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
): Promise<Harness> {
  // The host's env names its own workspace: start once to make its folders and grant, then as a host.
  const h = await Harness.start({ env: { RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS) } });
  h.client.close();
  if (folder) createGrant(h.paths, folder);
  const exited = new Promise((r) => h.supervisor.once('exit', r));
  h.supervisor.kill('SIGTERM');
  await exited;
  await h.startSupervisor(undefined, {
    RUNBOARD_FLEET_LEASE_MS: String(LEASE_MS),
    RUNBOARD_FLEET_CARDS: path.join(h.root, 'fleet-cards'),
    RUNBOARD_FLEET_HOST: JSON.stringify({
      redis: redisUrl,
      name,
      flows,
      capacity,
      workspaces: Object.fromEntries(workspaceNames.map((n) => [n, folder ?? h.workspace])),
    }),
    ...env,
  });
  return h;
}
