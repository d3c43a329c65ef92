/**
 * Supervisor entry point and composition root: the one place where its services are created and wired.
 * Long-lived; survives host restarts; one per state root.
 */
import { existsSync, unlinkSync, chmodSync, realpathSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { config as zodConfig } from 'zod/mini';
import en from 'zod/v4/locales/en.js';
import { holdProcessLock, jailPath, peerIdentity, sandboxSupport } from '@runboard/native';
import { keepOwnGitDirsIn } from '../common/git.ts';
import { listGrants, revokeRefusedGrants } from '../common/grants.ts';
import { desktopSocketDirs, installDirs, protectedConflict } from '../common/protected-dirs.ts';
import { ensurePrivateDir, statePaths } from '../common/paths.ts';
import { logSink } from './log-sink.ts';
import { refusePeer, type PeerLookup } from './peer.ts';
import {
  cardParamSecrets,
  deleteParamSecret,
  hasProviderKey,
  missingKeyGuidance,
  readProviderKey,
  writeParamSecret,
  writeProviderKey,
} from '../common/secrets.ts';
import { ModelProxy, providerRoutes } from './model-proxy.ts';
import { RunRegistry } from './registry.ts';
import { SupervisorServer } from './server.ts';
import { scheduleLauncher } from './schedule-launcher.ts';
import { ScheduleBook } from './schedules.ts';
import { cardSavedAt, scheduleClockOf } from './schedule-clock.ts';
import { ProjectBook } from './projects.ts';
import { RetentionKeeper } from './gc-auto.ts';
import { fleetConfig } from './fleet/config.ts';
import { insideAny, installReadTrees, outermost, readablePath, systemReadTrees } from './reads.ts';
import { RootOnlyEntries } from './root-only.ts';
import { loadFleetHost, loadGateway, restoreBackend } from './fleet/backend.ts';

const VERSION = '0.1.0';

/** Whether something answers on the socket now. */
function answers(socketPath: string): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const c = net.connect(socketPath, () => {
      c.destroy();
      resolve(true);
    });
    c.on('error', () => resolve(false));
  });
}

/**
 * Takes this state root's supervisor lock (decision 139): true once held, false when another
 * supervisor serves. Held by one that is still starting, or already stopping (its socket closed, its
 * process not yet gone), it is tried again until that one serves or is gone, so a start in those
 * moments neither gives way to nobody nor serves beside it; after a minute of neither, it exits
 * saying so (not "serving": nothing serves).
 */
async function takeTheLock(lockFile: string, socketPath: string, log: pino.Logger): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  for (let tries = 0; !holdProcessLock(lockFile); tries++) {
    if (await answers(socketPath)) return false;
    if (Date.now() > deadline) {
      process.stderr.write(
        `runboard supervisor: another process has held ${lockFile} for a minute without serving ${socketPath}\n`,
      );
      process.exit(0);
    }
    if (tries === 0)
      log.info({ lockFile }, 'another supervisor holds the lock and does not serve: waiting for it');
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

async function listen(server: net.Server, socketPath: string): Promise<'listening' | 'taken'> {
  for (let attempt = 0; attempt < 2; attempt++) {
    const outcome = await new Promise<'ok' | 'inuse'>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void =>
        err.code === 'EADDRINUSE' ? resolve('inuse') : reject(err);
      server.once('error', onError);
      const old = process.umask(0o177); // the socket is born 0600
      server.listen(socketPath, () => {
        server.off('error', onError);
        resolve('ok');
      });
      process.umask(old);
    });
    if (outcome === 'ok') {
      chmodSync(socketPath, 0o600);
      return 'listening';
    }
    // Someone's socket file: alive (another supervisor) or stale (a dead one's)?
    if (await answers(socketPath)) return 'taken';
    unlinkSync(socketPath);
  }
  throw new Error(`cannot listen on ${socketPath}`);
}

/**
 * How to start a worker: from its V8 start-up snapshot when there is one that this Node loads (checked
 * once, here), else from the plain bundle. RUNBOARD_WORKER_SNAPSHOT=off forces the bundle.
 */
function pickWorkerArgv(blob: string, bundle: string, log: pino.Logger): string[] {
  const plain = [process.execPath, bundle];
  if (
    process.env.RUNBOARD_WORKER_SNAPSHOT === 'off' ||
    process.env.RUNBOARD_WORKER_ENTRY ||
    !existsSync(blob)
  )
    return plain;
  const probe = spawnSync(process.execPath, ['--snapshot-blob', blob], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', RUNBOARD_WORKER_PROBE: '1' },
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (probe.status === 0 && probe.stdout.includes('runboard-worker-ok'))
    return [process.execPath, '--snapshot-blob', blob];
  log.warn(
    { stderr: probe.stderr?.slice(0, 500) },
    'worker start-up snapshot unusable; using the plain bundle',
  );
  return plain;
}

async function main(): Promise<void> {
  zodConfig(en()); // English validation messages for clients (zod/mini loads no locale by itself)
  const paths = statePaths();
  // Not pino.destination: on a disk that stays full it kept every line and hung the exit (log-sink.ts).
  // RUNBOARD_LOG_HOLD_BYTES: how much unwritten log it may hold (tests make it small; default 4 MiB)
  const hold = Number(process.env.RUNBOARD_LOG_HOLD_BYTES);
  const logOut = logSink(2, Number.isInteger(hold) && hold > 0 ? { maxBytes: hold } : {});
  process.on('exit', () => logOut.flushOnce());
  const log = pino({ base: { pid: process.pid }, level: process.env.RUNBOARD_LOG_LEVEL ?? 'info' }, logOut);
  ensurePrivateDir(paths.root);
  ensurePrivateDir(paths.runtimeDir);
  ensurePrivateDir(paths.supervisorDir);
  // One supervisor per state root from here on. Two started at once (two clients finding none) both
  // took a dead one's socket for stale: the second unlinked the first's new socket and served too,
  // the first went on unseen (its runs, schedules and git dirs beside the second's) and never ended.
  if (!(await takeTheLock(path.join(paths.supervisorDir, 'supervisor.lock'), paths.socket, log))) {
    process.stderr.write(`runboard supervisor: another supervisor is already serving ${paths.socket}\n`);
    process.exit(0);
  }
  ensurePrivateDir(paths.scratchDir);

  const sandbox = sandboxSupport();
  // RUNBOARD_LANDLOCK=off: behave as on a kernel without Landlock (diagnostics and tests of that path).
  const landlockAbi = process.env.RUNBOARD_LANDLOCK === 'off' ? 0 : sandbox.landlockAbi;
  const landlockReason =
    process.env.RUNBOARD_LANDLOCK === 'off' ? 'Landlock disabled by RUNBOARD_LANDLOCK=off' : sandbox.reason;
  const here = path.dirname(fileURLToPath(import.meta.url));
  const workerEntry = process.env.RUNBOARD_WORKER_ENTRY ?? path.join(here, 'worker.mjs');
  if (!existsSync(workerEntry))
    throw new Error(`worker bundle not found at ${workerEntry}; run scripts/setup.sh`);
  const workerArgv = pickWorkerArgv(path.join(here, 'worker.blob'), workerEntry, log);

  // Git dirs of our own for committing runs' work: in the state root, which no run can read or write.
  const ownGitDirs = path.join(paths.supervisorDir, 'git');
  rmSync(ownGitDirs, { recursive: true, force: true }); // what a killed supervisor left: nothing uses it now
  ensurePrivateDir(ownGitDirs);
  keepOwnGitDirsIn(ownGitDirs);

  // The loopback model proxy (a listener per run); keys are read at each request, never logged.
  const proxy = new ModelProxy(providerRoutes(process.env), (p) => readProviderKey(paths, p), log);

  const useNamespaces = process.env.RUNBOARD_NAMESPACES !== 'off';
  // covered in a root run's mount namespace (none without namespaces: DAC is all there is then)
  const rootOnly = process.getuid?.() === 0 && useNamespaces ? new RootOnlyEntries('/etc', log) : undefined;
  const hiddenPaths = [...new Set([paths.root, paths.runtimeDir].map((p) => realpathSync(p)))];
  const readTrees = outermost([
    ...systemReadTrees(),
    ...installReadTrees(path.resolve(here, '..'), process.execPath),
    path.dirname(workerEntry),
    path.dirname(jailPath()),
  ]).filter((t) => !insideAny(t, hiddenPaths));
  // never asked, never granted: Runboard's own code and the desktop's sockets
  const protectedPaths = [...installDirs(here, path.dirname(jailPath())), ...desktopSocketDirs(process.env)];
  // Grants made before these were refused (decision 49) are revoked, not kept working (docs/security-model.md)
  for (const r of revokeRefusedGrants(paths, (real) => protectedConflict(real, protectedPaths)))
    log.warn(
      { grant: r.id, path: r.path, why: r.why },
      `revoked the grant of ${r.path}: ${r.why}; grant a folder that holds none of it (\`runboard grant <dir>\`)`,
    );
  const registry = new RunRegistry(paths, {
    log,
    jailPath: jailPath(),
    workerArgv,
    nodeCommandWorker: process.env.RUNBOARD_COMMAND_WORKER === 'node',
    // Never readable by a run: Runboard's own state (keys, grants, other runs).
    hiddenPaths,
    // Readable by every run (an allow-list): the system's trees and Runboard's install; the run's own
    // trees are added per run.
    readTrees,
    // a root run reads what root reads: what only root may read in /etc is covered in its namespace
    // (found at the first run and again after /etc changed, not at the start: root-only.ts)
    ...(rootOnly ? { blanked: () => rootOnly.current() } : {}),
    runPath: readablePath(process.env.PATH, readTrees),
    protectedPaths,
    grantedPaths: () => listGrants(paths).map((g) => g.path),
    landlockAbi,
    landlockReason,
    useNamespaces,
    supervisorDir: paths.supervisorDir,
    baseEnv: process.env,
    proxy,
    hasKey: (p) => hasProviderKey(paths, p),
    missingKeyGuidance: (p) => missingKeyGuidance(paths, p),
    // other projects in a run's reach stay read-only (the book is made below, before any launch)
    knownProjects: (): string[] => schedules.projects(),
    paramSecrets: (card) => cardParamSecrets(paths, card),
    onDiskFull: (where) => keeper.diskFull(where),
  });

  const clock = scheduleClockOf(process.env.RUNBOARD_SCHEDULE_CLOCK);
  const schedules = new ScheduleBook({
    file: path.join(paths.supervisorDir, 'schedules.json'),
    log,
    now: clock.now,
    isRunning: (cardPath) => registry.list(true, 10_000).some((r) => r.card.path === cardPath),
    launcher: scheduleLauncher(paths, registry, log),
    savedAt: cardSavedAt(clock),
  });
  clock.onMoved(() => schedules.clockMoved()); // a test moved the clock (schedule-clock.ts)
  const projects = new ProjectBook(path.join(paths.supervisorDir, 'projects.json'), schedules, log);
  // the retention policy applied by itself (gc-auto.ts); a full disk (above) starts a pass at once
  const keeper = new RetentionKeeper({
    paths,
    log,
    projects: () => projects.registered(),
    going: () => registry.list(true, 10_000),
    settle: (runId) => registry.settleWorktree(runId, 'discard').then(() => undefined),
    pruneKeys: () => registry.pruneLaunchKeys(),
    // RUNBOARD_RETENTION_TICK_MS: how often intervals and free space are looked at (tests; default 1 min)
    ...(Number(process.env.RUNBOARD_RETENTION_TICK_MS) > 0
      ? { tickMs: Number(process.env.RUNBOARD_RETENTION_TICK_MS) }
      : {}),
  });

  let shuttingDown = false;
  let closeFleet = async (): Promise<void> => undefined;
  const netServer = net.createServer();
  const shutdown = (cancelRuns: boolean): void => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ cancelRuns }, 'shutting down');
    schedules.stop();
    projects.stop();
    keeper.stop();
    void registry.drain(cancelRuns).then(async () => {
      await closeFleet().catch(() => undefined);
      netServer.close();
      await new Promise((r) => setTimeout(r, 100)); // let replies (e.g. to supervisor/shutdown) reach their clients
      server.closeAll();
      try {
        unlinkSync(paths.socket);
      } catch {
        // already gone
      }
      process.exit(0);
    });
  };
  const ownUid = process.getuid?.() ?? -1;
  const refuse = (socket: net.Socket): string | null => {
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    let lookup: PeerLookup;
    try {
      lookup =
        fd !== undefined && fd >= 0
          ? { peer: peerIdentity(fd) }
          : { unknown: 'the socket has no descriptor' };
    } catch (err) {
      lookup = { unknown: (err as Error).message };
    }
    return refusePeer(lookup, ownUid, registry.jailPids());
  };
  const server = new SupervisorServer(
    registry,
    {
      version: VERSION,
      startedAt: new Date().toISOString(),
      stateRoot: paths.root,
      landlockAbi,
      landlockReason,
      log: () => logOut.state(),
    },
    log,
    shutdown,
    refuse,
    {
      list: () => proxy.providers().map((p) => ({ ...p, hasKey: hasProviderKey(paths, p.name) })),
      set: (provider, key) => {
        writeProviderKey(paths, provider, key);
        return hasProviderKey(paths, provider);
      },
      check: (provider) => proxy.checkKey(provider),
      setParam: (card, param, value, replaces) => {
        if (replaces) deleteParamSecret(paths, replaces);
        return value === null ? null : writeParamSecret(paths, { card, param, value });
      },
    },
    schedules,
    projects,
  );
  // Connections are served once the runs a dead supervisor left are taken over or closed (below): an
  // attach before that found a fleet run's record still `running` with nothing to follow, and the
  // board ended its card as if the run had ended (issue 34).
  let recovered!: () => void;
  const ready = new Promise<void>((r) => (recovered = r));
  netServer.on('connection', (s) => void ready.then(() => server.accept(s)));

  const state = await listen(netServer, paths.socket);
  if (state === 'taken') {
    process.stderr.write(`runboard supervisor: another supervisor is already serving ${paths.socket}\n`);
    process.exit(0);
  }
  // In a fleet: launches become jobs (gateway), and/or this host takes jobs of the flows it offers.
  const fleet = fleetConfig(process.env);
  delete process.env.RUNBOARD_REDIS_PASSWORD; // read once; nothing started later inherits it
  await restoreBackend(registry, paths, log);
  if (fleet.gateway && registry.fleet?.redisUrl !== fleet.gateway.redisUrl)
    registry.fleet = new (await loadGateway()).FleetGateway({
      redisUrl: fleet.gateway.redisUrl,
      redisPassword: fleet.gateway.redisPassword,
      log,
      activeDir: path.join(paths.supervisorDir, 'active'),
    });
  // We own the socket, so any run still marked active belongs to a supervisor that died (a fleet's run
  // goes on on its host: the gateway just made takes it over).
  const orphans = registry.recoverOrphans();
  if (orphans.length) log.warn({ runs: orphans }, 'closed runs left by a supervisor that died');
  recovered();
  schedules.start(); // after the socket is ours: only one supervisor decides missed fires
  projects.start(); // the registered projects' cards, read again (schedules added while it was down)
  keeper.start();
  const fleetHost = fleet.host
    ? new (await loadFleetHost()).FleetHost({
        redisUrl: fleet.host.redisUrl,
        redisPassword: fleet.host.redisPassword,
        offer: fleet.host.offer,
        registry,
        paths,
        // Runners read their card: outside the state root, which runs cannot see.
        cardsDir:
          process.env.RUNBOARD_FLEET_CARDS ??
          path.join(
            os.homedir(),
            '.cache',
            'runboard',
            'fleet-cards',
            createHash('sha256').update(paths.root).digest('hex').slice(0, 12),
          ),
        log,
      })
    : undefined;
  if (fleetHost) log.info({ offer: fleet.host!.offer }, 'taking runs from the fleet');
  await fleetHost?.announced; // in the fleet's roster before it says it is ready (boards read it)
  closeFleet = async () => {
    await fleetHost?.close();
    await registry.fleet?.close();
  };
  log.info({ socket: paths.socket, landlockAbi, version: VERSION }, 'supervisor ready');
  process.stdout.write(`ready ${paths.socket}\n`);

  process.on('SIGTERM', () => shutdown(true));
  process.on('SIGINT', () => shutdown(true));
  process.on('SIGHUP', () => undefined); // detached from the terminal that started it
  process.on('uncaughtException', (err) => {
    // One bad run or client must not take the others down; record it and keep serving.
    log.error({ err: err.stack }, 'uncaught exception');
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`runboard supervisor: ${(err as Error).message}\n`);
  process.exit(1);
});
