/**
 * Where Runboard keeps its state. Everything lives under one root: $RUNBOARD_HOME when set (tests,
 * second instances), else the XDG data dir, with sockets in the XDG runtime dir.
 */
import { mkdirSync, chmodSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface StatePaths {
  /** Root of all state. */
  root: string;
  /** Runtime dir (0700) holding the supervisor socket. */
  runtimeDir: string;
  socket: string;
  /** Per-run log dirs: logs/agents/YYYYMMDD/<run-id>/ */
  logsDir: string;
  /** Scratch dirs of active runs (HOME, TMPDIR, caches), removed when the run ends. */
  scratchDir: string;
  /** Host-issued grants, one JSON file each. */
  grantsDir: string;
  /** Keys (0700 dir, 0600 files): the grant HMAC key. */
  keysDir: string;
  /** Supervisor bookkeeping: markers of active runs, so a restarted supervisor can close them. */
  supervisorDir: string;
}

export function statePaths(env: NodeJS.ProcessEnv = process.env): StatePaths {
  const home = env.RUNBOARD_HOME;
  let root: string;
  let runtimeDir: string;
  if (home) {
    root = path.resolve(home);
    runtimeDir = path.join(root, 'run');
  } else {
    const data = env.XDG_DATA_HOME || path.join(os.homedir(), '.local', 'share');
    root = path.join(data, 'runboard');
    runtimeDir = env.XDG_RUNTIME_DIR ? path.join(env.XDG_RUNTIME_DIR, 'runboard') : path.join(root, 'run');
  }
  return {
    root,
    runtimeDir,
    // A unix socket path is limited to 107 bytes; keep the name short.
    socket: path.join(runtimeDir, 'sv.sock'),
    logsDir: path.join(root, 'logs', 'agents'),
    scratchDir: path.join(root, 'scratch'),
    grantsDir: path.join(root, 'grants'),
    keysDir: path.join(root, 'keys'),
    supervisorDir: path.join(root, 'supervisor'),
  };
}

/** mkdir -p with a mode enforced on the last component even when it already existed. */
export function ensurePrivateDir(dir: string, mode = 0o700): void {
  mkdirSync(dir, { recursive: true, mode });
  if ((statSync(dir).mode & 0o777) !== mode) chmodSync(dir, mode);
}

/** The log dir of a run: the date folder comes from the run id. */
export function runLogDir(paths: StatePaths, runId: string): string {
  return path.join(paths.logsDir, runId.slice(0, 8), runId);
}
