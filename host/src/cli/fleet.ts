/**
 * `runboard fleet join`: makes this machine a host of a fleet: its supervisor, in the foreground,
 * takes runs of the flows it offers from Redis, with this machine's grants and keys.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { grantCovering } from '@runboard/supervisor/grants';
import { MEMORY_SIZE, TMP_SIZE } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import { distDir, SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';

export const FLEET_USAGE = `fleet join --redis URL --flows A,B [--capacity N] [--workspace NAME=DIR]... [--name HOST]
          [--tcp-port N]... [--udp] [--abstract-unix] [--tmp-size SIZE] [--memory SIZE] [--max-processes N] [--writable DIR]...
                                           take runs of these flows from a fleet's Redis (foreground);
                                           a job's sandbox may be narrower than these options, never wider`;

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
      // The most a job's sandbox may ask for on this host (supervisor/src/node/fleet/policy.ts).
      'tcp-port': { type: 'string', multiple: true, default: [] },
      udp: { type: 'boolean', default: false },
      'abstract-unix': { type: 'boolean', default: false },
      'allow-unsandboxed': { type: 'boolean', default: false },
      'tmp-size': { type: 'string' },
      memory: { type: 'string' },
      'max-processes': { type: 'string' },
      writable: { type: 'string', multiple: true, default: [] },
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
  const sandbox = hostPolicy(values);
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
      sandbox,
    }),
  };
  const child = spawn(process.execPath, [path.join(distDir(), 'supervisor.mjs')], { stdio: 'inherit', env });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => child.kill(sig));
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

/** The sandbox policy of `fleet join`'s options, each checked with what to write instead. */
function hostPolicy(values: {
  'tcp-port': string[];
  udp: boolean;
  'abstract-unix': boolean;
  'allow-unsandboxed': boolean;
  'tmp-size'?: string | undefined;
  memory?: string | undefined;
  'max-processes'?: string | undefined;
  writable: string[];
}): Record<string, unknown> {
  const tcpPorts = values['tcp-port'].map((p) => {
    const n = Number(p);
    if (!Number.isInteger(n) || n < 1 || n > 65535)
      throw new FleetUsageError(`--tcp-port ${p}: a TCP port is a whole number from 1 to 65535`);
    return n;
  });
  const tmp = values['tmp-size'];
  if (tmp !== undefined && !TMP_SIZE.test(tmp))
    throw new FleetUsageError(`--tmp-size ${tmp}: write a size such as 512m, 2g or 25% (at most 100%)`);
  const memory = values.memory;
  if (memory !== undefined && !MEMORY_SIZE.test(memory))
    throw new FleetUsageError(`--memory ${memory}: write a size such as 512m, 4g or 50% (of the memory)`);
  const procs = values['max-processes'];
  if (
    procs !== undefined &&
    !(Number.isInteger(Number(procs)) && Number(procs) >= 16 && Number(procs) <= 1_000_000)
  )
    throw new FleetUsageError(`--max-processes ${procs}: a whole number from 16 to 1000000`);
  return {
    ...(tcpPorts.length ? { tcpPorts } : {}),
    ...(values.udp ? { udp: true } : {}),
    ...(values['abstract-unix'] ? { abstractUnix: true } : {}),
    ...(values['allow-unsandboxed'] ? { allowUnsandboxed: true } : {}),
    ...(tmp !== undefined ? { tmpSize: tmp } : {}),
    ...(memory !== undefined ? { memory } : {}),
    ...(procs !== undefined ? { maxProcesses: Number(procs) } : {}),
    ...(values.writable.length ? { writable: values.writable.map((w) => path.resolve(w)) } : {}),
  };
}
