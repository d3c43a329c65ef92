// One supervisor per state root, however many are started at once. Two clients that find none (the
// board's reconnect and a launch, after a crash) each start one: both took the dead one's socket for
// stale, the second unlinked the first's new socket, and the first went on serving nobody, with its
// runs and schedules beside the second's, until someone killed it by hand.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { peerIdentity } from '@runboard/native';
import { statePaths } from '@runboard/supervisor/paths';
import { openConnection } from '../../host/src/core/supervisor-start.ts';
import { commandLine, DIST, Harness, pidAlive, processesMentioning, waitUntil } from '../helpers/harness.ts';

let h: Harness | undefined;
const started: ChildProcess[] = [];
const roots: string[] = [];
const holders: ChildProcess[] = [];
/** Kills a lock holder's group; resolves once flock itself is gone. */
async function killHolder(holder: ChildProcess): Promise<void> {
  if (holder.exitCode !== null || holder.signalCode !== null) return;
  const gone = new Promise((r) => holder.once('exit', r));
  process.kill(-holder.pid!, 'SIGKILL');
  await gone;
}
afterEach(async () => {
  for (const holder of holders.splice(0)) await killHolder(holder);
  await h?.stop();
  h = undefined;
  for (const c of started.splice(0))
    if (c.exitCode === null && c.signalCode === null) {
      const gone = new Promise((r) => c.once('exit', r));
      c.kill('SIGKILL');
      await gone;
    }
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
});

/**
 * A state root of its own, and a process holding its supervisor lock until killed: flock(1), which
 * with -o keeps the lock to itself (its `sleep` does not inherit it).
 */
function rootWithLockHeld(): { home: string; holder: ChildProcess } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'rb-lock-'));
  roots.push(root);
  const home = path.join(root, 'home');
  const paths = statePaths({ RUNBOARD_HOME: home });
  mkdirSync(paths.supervisorDir, { recursive: true, mode: 0o700 });
  mkdirSync(paths.runtimeDir, { recursive: true, mode: 0o700 });
  // its own process group: the group is killed, flock and its sleep
  const holder = spawn(
    'flock',
    ['-o', '-x', path.join(paths.supervisorDir, 'supervisor.lock'), 'sleep', '600'],
    {
      stdio: 'ignore',
      detached: true,
    },
  );
  holders.push(holder);
  return { home, holder };
}

/** Starts a supervisor for `home`; `ready` resolves when it serves, `exit` with its exit code. */
function startOne(home: string): {
  ready: Promise<void>;
  exit: Promise<number | null>;
  stderr: () => string;
} {
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: home };
  delete env.NODE_EXTRA_CA_CERTS;
  const child = spawn(process.execPath, [path.join(DIST, 'supervisor.mjs')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const ready = new Promise<void>((resolve) =>
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready ')) resolve();
    }),
  );
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { ready, exit, stderr: () => err };
}

/** Whether the lock file is held by a process we can see: flock(1)'s holder while it runs. */
const lockedBy = (holder: ChildProcess): boolean => pidAlive(holder.pid!);

/** The supervisors of this state root: processes of it that run supervisor.mjs. */
const supervisorsOf = (root: string): number[] =>
  processesMentioning(root).filter((pid) => commandLine(pid).includes('supervisor.mjs'));

describe('starting the supervisor', () => {
  it('clients that each start one over a dead supervisor’s socket all reach one, and no other is left', async () => {
    h = await Harness.start();
    const dead = h.supervisor;
    h.client.close();
    const gone = new Promise((r) => dead.once('exit', r));
    dead.kill('SIGKILL');
    await gone;
    expect(existsSync(h.paths.socket)).toBe(true); // what a killed supervisor leaves

    // Ten clients at once: the window is narrow (the old code left a second supervisor 2 runs in 10).
    // The supervisors the clients start take the state root from the environment.
    const home = process.env.RUNBOARD_HOME;
    process.env.RUNBOARD_HOME = h.paths.root;
    let conns: { socket: net.Socket; conn: { dispose(): void } }[];
    try {
      conns = await Promise.all(
        Array.from({ length: 10 }, () => openConnection(h!.paths, { autoStart: true, timeoutMs: 60_000 })),
      );
    } finally {
      if (home === undefined) delete process.env.RUNBOARD_HOME;
      else process.env.RUNBOARD_HOME = home;
    }
    const owners = conns.map(({ socket }) => {
      const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
      return peerIdentity(fd).pid;
    });
    for (const { conn, socket } of conns) {
      conn.dispose();
      socket.destroy();
    }
    expect(new Set(owners).size, `the clients reached ${owners.join(', ')}`).toBe(1);
    const [serving] = owners as [number];
    await waitUntil(
      'the supervisors that gave way have ended',
      () => supervisorsOf(h!.root).length <= 1,
      30_000,
    );
    expect(supervisorsOf(h.root)).toEqual([serving]);

    process.kill(serving, 'SIGTERM');
    await waitUntil('the serving supervisor stopped', () => !pidAlive(serving), 30_000);
  });

  it('a supervisor started while another holds the lock, not yet serving, waits and serves once it is gone', async () => {
    // (the moments of a start, or of a stop: its socket closed, its process not yet gone)
    const { home, holder } = rootWithLockHeld();
    await waitUntil('the lock is held', () => lockedBy(holder));
    const one = startOne(home);
    const served = one.ready.then(() => 'served' as const);
    const exited = one.exit.then((code) => `exited ${code}: ${one.stderr()}`);
    // it neither serves beside the holder nor gives way to nobody: it waits for the lock
    const socket = statePaths({ RUNBOARD_HOME: home }).socket;
    await waitUntil('the new supervisor is waiting for the lock', () =>
      one.stderr().includes('waiting for it'),
    );
    expect(existsSync(socket)).toBe(false);
    await killHolder(holder); // the holder goes: the kernel lets its lock go
    expect(await Promise.race([served, exited])).toBe('served');
  });

  it('a supervisor started while another serves gives way and says so', async () => {
    const { home, holder } = rootWithLockHeld();
    await waitUntil('the lock is held', () => lockedBy(holder));
    // something answers on the socket: the supervisor that holds the lock, serving
    const socket = statePaths({ RUNBOARD_HOME: home }).socket;
    const server = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => server.listen(socket, r));
    try {
      const one = startOne(home);
      expect(await one.exit).toBe(0);
      expect(one.stderr()).toMatch(/another supervisor is already serving/);
    } finally {
      server.close();
    }
  });
});
