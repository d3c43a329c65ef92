/**
 * `runboard fleet join`: makes this machine a host of a fleet: its supervisor, in the foreground,
 * takes runs of the flows it offers from Redis, with this machine's grants and keys.
 */
import { spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { grantCovering } from '@runboard/supervisor/grants';
import {
  missingRedisPassword,
  readRedisPassword,
  redisPasswordFile,
  writeRedisPassword,
} from '@runboard/supervisor/secrets';
import { MEMORY_SIZE, TMP_SIZE } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import { distDir, SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';

export const FLEET_USAGE = `fleet join --redis URL --flows A,B [--capacity N] [--workspace NAME=DIR]... [--name HOST]
          [--redis-password-file FILE | --redis-password-stdin | --redis-password-secret NAME]
          [--tcp-port N]... [--udp] [--abstract-unix] [--tmp-size SIZE] [--memory SIZE] [--max-processes N] [--writable DIR]...
                                           take runs of these flows from a fleet's Redis (foreground);
                                           a job's sandbox may be narrower than these options, never wider;
                                           Redis's password never in the URL (the process list shows it)
  fleet password set NAME | rm NAME        store (from stdin) or remove a Redis password for redis.passwordSecret`;

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
      'redis-password-file': { type: 'string' },
      'redis-password-stdin': { type: 'boolean', default: false },
      'redis-password-secret': { type: 'string' },
    },
    allowPositionals: true,
  });
  if (positionals[0] === 'password') return fleetPassword(positionals.slice(1), paths);
  if (positionals[0] !== 'join') throw new FleetUsageError('fleet takes join or password');
  if (!values.redis) throw new FleetUsageError('fleet join needs --redis redis://host:6379');
  if (/^rediss?:\/\/[^/@]*:[^/@]+@/.test(values.redis))
    throw new FleetUsageError(
      '--redis holds a password, which every user of this machine sees in the process list: write the URL without it and give the password with --redis-password-file FILE (mode 0600), --redis-password-stdin, or --redis-password-secret NAME (stored with `runboard fleet password set NAME`)',
    );
  const redisPassword = passwordOf(values, paths);
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
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // to the supervisor only, in its environment (read once there and removed): never a command line
    ...(redisPassword !== undefined ? { RUNBOARD_REDIS_PASSWORD: redisPassword } : {}),
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

/** Redis's password from `fleet join`'s options (at most one), or undefined when none is given. */
function passwordOf(
  values: {
    'redis-password-file'?: string | undefined;
    'redis-password-stdin': boolean;
    'redis-password-secret'?: string | undefined;
  },
  paths: StatePaths,
): string | undefined {
  const file = values['redis-password-file'];
  const secret = values['redis-password-secret'];
  const given = [file !== undefined, values['redis-password-stdin'], secret !== undefined].filter(
    Boolean,
  ).length;
  if (given > 1)
    throw new FleetUsageError(
      'give the Redis password one way: --redis-password-file, --redis-password-stdin or --redis-password-secret',
    );
  let pw: string | undefined;
  if (file !== undefined) {
    let mode: number;
    try {
      mode = statSync(file).mode;
      pw = readFileSync(file, 'utf8');
    } catch (err) {
      throw new FleetUsageError(
        `--redis-password-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
    if (mode & 0o077)
      throw new FleetUsageError(
        `--redis-password-file ${file} can be read by others (mode ${(mode & 0o777).toString(8)}): chmod 600 ${file}`,
      );
  } else if (values['redis-password-stdin']) {
    pw = readFileSync(0, 'utf8');
  } else if (secret !== undefined) {
    let stored: string | null;
    try {
      stored = readRedisPassword(paths, secret);
    } catch (err) {
      throw new FleetUsageError((err as Error).message);
    }
    if (stored === null) throw new FleetUsageError(missingRedisPassword(paths, secret));
    pw = stored;
  }
  if (pw === undefined) return undefined;
  pw = pw.replace(/\r?\n$/, '');
  if (!pw) throw new FleetUsageError('the Redis password given is empty');
  return pw;
}

/** `fleet password set NAME` (the password from stdin) and `fleet password rm NAME`. */
function fleetPassword(args: string[], paths: StatePaths): number {
  const [sub, name] = args;
  if ((sub !== 'set' && sub !== 'rm') || !name || args.length !== 2)
    throw new FleetUsageError('fleet password takes set NAME or rm NAME (set reads the password from stdin)');
  try {
    redisPasswordFile(paths, name);
  } catch (err) {
    throw new FleetUsageError((err as Error).message);
  }
  if (sub === 'rm') {
    writeRedisPassword(paths, name, null);
    process.stdout.write(`Redis password ${name}: removed\n`);
    return 0;
  }
  if (process.stdin.isTTY) process.stderr.write(`type the Redis password ${name}, then Enter and Ctrl-D:\n`);
  const pw = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  if (!pw)
    throw new FleetUsageError('no password on stdin (e.g. runboard fleet password set fleet < pw-file)');
  writeRedisPassword(paths, name, pw);
  process.stdout.write(`Redis password ${name}: stored in ${redisPasswordFile(paths, name)} (mode 0600)\n`);
  return 0;
}
