/**
 * `runboard fleet join`: makes this machine a host of a fleet: its supervisor, in the foreground,
 * takes runs of the flows it offers from Redis, with this machine's grants and keys.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { grantCovering } from '@runboard/supervisor/grants';
import type { StatePaths } from '@runboard/supervisor/paths';
import { distDir, SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';

export const FLEET_USAGE = `fleet join --redis URL --flows A,B [--capacity N] [--workspace NAME=DIR]... [--name HOST]
                                           take runs of these flows from a fleet's Redis (foreground)`;

export class FleetUsageError extends Error {}

export async function cmdFleet(args: string[], paths: StatePaths): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      redis: { type: 'string' },
      flows: { type: 'string' },
      capacity: { type: 'string', default: '2' },
      workspace: { type: 'string', multiple: true, default: [] },
      name: { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals[0] !== 'join') throw new FleetUsageError('fleet takes join');
  if (!values.redis) throw new FleetUsageError('fleet join needs --redis redis://host:6379');
  const flows = (values.flows ?? '').split(',').filter(Boolean);
  if (flows.length === 0) throw new FleetUsageError('fleet join needs --flows: the flows this host runs');
  const capacity = Number(values.capacity);
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new FleetUsageError('--capacity is a whole number, 1 or more');
  const workspaces: Record<string, string> = {};
  for (const w of values.workspace) {
    const eq = w.indexOf('=');
    if (eq <= 0) throw new FleetUsageError(`--workspace ${w}: write it NAME=DIR (e.g. .=/srv/project)`);
    const dir = path.resolve(w.slice(eq + 1));
    // Checked here too so the person learns it now, not at the first job.
    if (!grantCovering(paths, dir)) {
      process.stderr.write(
        `runboard: ${dir} is not granted on this host; run \`runboard grant ${dir}\` first\n`,
      );
      return 1;
    }
    workspaces[w.slice(0, eq)] = dir;
  }
  try {
    (await SupervisorClient.connect(paths)).close();
    process.stderr.write(
      `runboard: a supervisor already runs for ${paths.root}; stop it (\`runboard supervisor stop\`) or use another RUNBOARD_HOME\n`,
    );
    return 1;
  } catch (err) {
    if (!(err instanceof SupervisorUnavailable)) throw err;
  }
  const env = {
    ...process.env,
    RUNBOARD_FLEET_HOST: JSON.stringify({
      redis: values.redis,
      flows,
      capacity,
      workspaces,
      ...(values.name ? { name: values.name } : {}),
    }),
  };
  const child = spawn(process.execPath, [path.join(distDir(), 'supervisor.mjs')], { stdio: 'inherit', env });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}
