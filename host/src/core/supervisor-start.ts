/**
 * Reaching this state root's supervisor, starting one when none runs (supervisor-client.ts): the waits
 * here end on what happened, not on a clock. A started supervisor is waited for until its socket
 * answers or the process exits (a missing bundle, a crash, another supervisor serving first), and a
 * client that lost its supervisor tries again as soon as a socket appears (one started by anyone: a
 * CLI command, `runboard supervisor start`) rather than at the end of its back-off only.
 */
import { spawn } from 'node:child_process';
import { existsSync, openSync, watch } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type MessageConnection } from '@runboard/supervisor/protocol';
import { ensurePrivateDir, type StatePaths } from '@runboard/supervisor/paths';

export class SupervisorUnavailable extends Error {}
/** The supervisor started to serve exited before it did (the reason is in the message). */
export class SupervisorExited extends SupervisorUnavailable {}

/** dist/ holding the process bundles, found from this file or the bundle that contains it. */
export function distDir(): string {
  if (process.env.RUNBOARD_DIST) return process.env.RUNBOARD_DIST;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'supervisor.mjs'))) return dir;
    if (existsSync(path.join(dir, 'dist', 'supervisor.mjs'))) return path.join(dir, 'dist');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('runboard: dist/supervisor.mjs not found; run scripts/setup.sh');
    dir = parent;
  }
}

function tryConnect(socketPath: string): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

/** A supervisor started for a state root: its pid, and how it exited once it has (undefined meanwhile). */
export interface StartedSupervisor {
  pid: number;
  exited(): string | undefined;
}

/** Starts a supervisor for this state root, detached, logging to supervisor/supervisor.log. */
export function startSupervisor(paths: StatePaths): StartedSupervisor {
  ensurePrivateDir(paths.root);
  ensurePrivateDir(paths.supervisorDir);
  const logFd = openSync(path.join(paths.supervisorDir, 'supervisor.log'), 'a', 0o600);
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS; // faster start; the supervisor makes no TLS connections of its own
  // In the Electron shell execPath is Electron: without this it would start a second app, not Node.
  if (process.versions.electron) env.ELECTRON_RUN_AS_NODE = '1';
  const child = spawn(process.execPath, [path.join(distDir(), 'supervisor.mjs')], {
    detached: true,
    stdio: ['ignore', 'ignore', logFd],
    env,
  });
  let exit: string | undefined;
  child.once('exit', (code, signal) => (exit = signal ? `killed by ${signal}` : `exited with ${code}`));
  child.once('error', (err) => (exit = `could not be started (${err.message})`));
  child.unref();
  return { pid: child.pid ?? 0, exited: () => exit };
}

/** How a supervisor ends that found another one serving, or starting, for its state root. */
const GAVE_WAY = 'exited with 0';

export interface ConnectOptions {
  /** Start a supervisor when none runs. */
  autoStart?: boolean;
  /** How long a started supervisor that neither answers nor exits is waited for (default 10 s). */
  timeoutMs?: number;
  /**
   * Read attached runs' output from their log files (the supervisor sends only sizes) where this
   * process can open them; else (false, or files that are not the supervisor's) as bytes frames.
   * Default true.
   */
  readFiles?: boolean;
  /**
   * A long-lived client (the board's): when the connection is lost, connect again, starting a new
   * supervisor the same way (runs of a supervisor that died are recorded by its successor as
   * `supervisor-died`), and attach again to every run that was attached, from the offsets reached.
   * Calls made meanwhile wait for the new connection.
   */
  reconnect?: boolean;
}

export async function openConnection(
  paths: StatePaths,
  opts: ConnectOptions,
): Promise<{ socket: net.Socket; conn: MessageConnection }> {
  // No socket file: no supervisor to try, so one is started at once, before this function first
  // yields (a board reading its cards meanwhile overlaps the supervisor's start with its own).
  let socket = existsSync(paths.socket) ? await tryConnect(paths.socket) : null;
  let exit: string | undefined;
  if (!socket && opts.autoStart) {
    const started = startSupervisor(paths);
    const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
    while (!socket && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      // read before the try: a supervisor that exited because another serves first leaves that one's socket
      exit = started.exited();
      socket = await tryConnect(paths.socket);
      // exit 0: it gave way to another one, serving or still starting (the lock): that one is waited for
      if (exit !== undefined && exit !== GAVE_WAY) break;
    }
  }
  if (!socket && exit !== undefined)
    throw new SupervisorExited(
      `the supervisor ${exit} before it served; see ${path.join(paths.supervisorDir, 'supervisor.log')}`,
    );
  if (!socket) {
    throw new SupervisorUnavailable(
      opts.autoStart
        ? `the supervisor did not come up; see ${path.join(paths.supervisorDir, 'supervisor.log')}`
        : `no supervisor is running for ${paths.root} (start one with \`runboard run\`)`,
    );
  }
  const s = socket;
  s.on('error', () => undefined);
  const conn = connect(s, s, { close: () => s.destroy() });
  conn.listen();
  return { socket: s, conn };
}

/**
 * Resolves after `ms`, or sooner once this state root's socket is made anew (a supervisor started by
 * anyone) or already answers. A socket file left by a supervisor that was killed does not end the
 * wait: only a change to it, or an answer on it, does.
 */
export function socketAppearsOr(paths: StatePaths, ms: number): Promise<void> {
  return new Promise((resolve) => {
    let watcher: ReturnType<typeof watch> | undefined;
    const done = (): void => {
      clearTimeout(timer);
      watcher?.close();
      resolve();
    };
    const timer = setTimeout(done, ms);
    try {
      watcher = watch(path.dirname(paths.socket), (_type, name) => {
        if (name === path.basename(paths.socket)) done();
      });
      watcher.on('error', () => undefined);
    } catch {
      // no folder to watch (removed): the delay alone
    }
    // one made between the last try and the watch
    void tryConnect(paths.socket).then((s) => {
      if (!s) return;
      s.destroy();
      done();
    });
  });
}
