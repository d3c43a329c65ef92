/**
 * One run, from launch to its final record. Owns the run's jail + worker process and its state; the
 * parts it composes live beside it: its records (run-log.ts), preflight (run-preflight.ts), the jail's
 * argv and the run's environment (jail-args.ts), the jail's status lines (jail-status.ts), the worker
 * endpoint (worker-endpoint.ts), liveness timers (liveness.ts), how it ended (classify-end.ts) and its
 * final record (run-finalize.ts).
 */
import { constants as osConstants, totalmem } from 'node:os';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { closeSync, existsSync, mkdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { appendFile, mkdir, open, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { execa } from 'execa';
import {
  AgentSessionId,
  ARTIFACTS_DIR,
  drivesDesktop,
  LIVE_FRAME_FILE,
  JAIL_ENV_FD,
  JAIL_OUTPUT_FDS,
  JAIL_STATUS_FD,
  JAIL_WORKSPACE_FD,
  RUN_ENDPOINT_FD,
  RunEnv,
  RunState,
  type Command,
  type CardRef,
  type FlowSpec,
  type MessageConnection,
  type RunEvent,
  type RunResult,
  type TerminationReason,
} from '../protocol/index.ts';
import type { AttachSource } from './attach.ts';
import { classifyEnd, signalName, type FinishedReport, type JailExit } from './classify-end.ts';
import type { ProtectedDir } from '../common/protected-dirs.ts';
import { deriveAsks } from './asks.ts';
import { keepSession, restoreSession, type AgentCli } from './agent-session.ts';
import { DenialScanner } from './denials.ts';
import {
  buildJailArgs,
  buildRunEnv,
  projectFoldersToMake,
  projectReadOnly,
  runReadable,
  knownProjectsReadOnly,
  runWritable,
  userDisplay,
  SCRATCH_DIRS,
  DEFAULT_TMP_SIZE,
  runMemoryBytes,
  serializeEnv,
} from './jail-args.ts';
import { readJailStatus, type JailStatus } from './jail-status.ts';
import { Liveness } from './liveness.ts';
import { launchedResult } from './result-file.ts';
import { JailOutput } from './output-files.ts';
import { RunLog } from './run-log.ts';
import {
  runnerApis,
  type ModelProxy,
  type ModelRequestInfo,
  type ProxyGrant,
  type VisionGrant,
} from './model-proxy.ts';
import { recordEvidence, recordWorktree, tearDownDisplay } from './run-finalize.ts';
import { preflight } from './run-preflight.ts';
import { openWorkspace } from './workspace-fd.ts';
import { serveWorkerEndpoint } from './worker-endpoint.ts';
import { createWorktree, discardWorktree } from './worktrees.ts';
import { startPrivateDisplay, type PrivateDisplay } from './displays.ts';

export interface RunDeps {
  log: Logger;
  jailPath: string;
  /** The command line that starts a worker (node + snapshot or bundle). */
  workerArgv: string[];
  /** Trees no run may read: the state root (keys, grants, other runs' logs and scratch dirs). */
  hiddenPaths: string[];
  /** The system's trees and Runboard's install, which every run may read (reads.ts); [] reads all. */
  readTrees?: string[];
  /** The PATH runs get: the supervisor's without the folders they cannot read (reads.ts). */
  runPath?: string;
  /** Folders never asked (Runboard's install folder, the desktop's sockets: protected-dirs.ts). */
  protectedPaths?: ProtectedDir[];
  /** The granted folders now (a folder around one is never asked). */
  grantedPaths?: () => string[];
  /** Landlock ABI of the kernel (0: none). */
  landlockAbi: number;
  landlockReason: string;
  useNamespaces: boolean;
  supervisorDir: string;
  baseEnv: NodeJS.ProcessEnv;
  /** The loopback model proxy and where provider keys come from (coding-agent runs). */
  proxy?: ModelProxy;
  hasKey?: (provider: string) => boolean;
  missingKeyGuidance?: (provider: string) => string;
  /** Project folders the supervisor knows (schedule book): what of them is in a run's reach stays read-only. */
  knownProjects?: () => string[];
  /** A replay card's sensitive parameter values from the supervisor's store (secrets.ts), by name. */
  paramSecrets?: (cardPath: string) => Promise<Record<string, string>>;
  /**
   * `command` runs through a Node worker as agent runs do, instead of under the jail's init
   * (RUNBOARD_COMMAND_WORKER=node: the benchmark's measure of what a Node worker's start costs).
   */
  nodeCommandWorker?: boolean;
}

export interface LaunchSpec {
  runId: string;
  logDir: string;
  scratchDir: string;
  card: CardRef;
  flow: FlowSpec;
  workspace: string;
  command: Command | undefined;
  /** The grant's folder (realpath): a run's worktree must stay inside it. */
  grantPath?: string;
  /** Continue the agent session an earlier run of the card kept at an ask the person allowed. */
  resumeFrom?: { logDir: string; session: string; note: string };
}

function spawnJail(
  file: string,
  args: string[],
  cwd: string,
  workspaceFd: number | undefined,
  outputFds: number[],
  /** Whether a worker runs (it gets the run endpoint); a command under the jail's init gets none. */
  endpoint: boolean,
) {
  return execa(file, args, {
    cwd,
    // Nothing: the run's environment goes through JAIL_ENV_FD (protocol/jail.ts).
    env: {},
    extendEnv: false,
    // 0-2: nothing (the run's output goes through the jail into its log files, 7-9; the jail's own
    // errors come as status lines), 3: the run endpoint (a socketpair), 4: jail status lines, 5: the
    // run's environment, 6: the open workspace.
    // (execa passes an fd number through at any index; its types admit one only for 0-2)
    stdio: [
      'ignore',
      'ignore',
      'ignore',
      endpoint ? 'pipe' : 'ignore',
      'pipe',
      'pipe',
      workspaceFd ?? 'ignore',
      ...outputFds,
    ] as unknown as ['ignore', 'ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'ignore'],
    buffer: false,
    reject: false,
    cleanup: false,
    encoding: 'buffer',
  });
}
type JailProcess = ReturnType<typeof spawnJail>;

/** The path the jail will find (symlinks resolved), or the path itself when it does not exist. */
function realOrAsIs(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

const DEFAULT_KILL_GRACE_MS = 1000;

const ARTIFACT_RUNNERS: ReadonlySet<string> = new Set(['computer-use', 'reflect', 'replay', 'extract']);

export class Run {
  readonly id: string;
  readonly token = randomBytes(24).toString('hex');
  readonly signals = new EventEmitter();
  state: RunState = RunState.launching();
  result: RunResult;

  private readonly log: RunLog<JailOutput>;
  /** How far stderr.log was read for the denial scanner, and the read going on. */
  private stderrScanned = 0;
  private stderrScan: Promise<void> = Promise.resolve();
  private child: JailProcess | undefined;
  private conn: MessageConnection | undefined;
  private workerPid: number | null = null;
  private finishedReport: FinishedReport | null = null;
  private jailExit: JailExit | null = null;
  private jailError = '';
  private endCause: { reason: TerminationReason; detail: string } | null = null;
  private killTimers: NodeJS.Timeout[] = [];
  private readonly liveness: Liveness;
  private denials: DenialScanner;
  /** Where the run works: its worktree when the flow asks for one. */
  private workspace: string;
  private proxyGrant: ProxyGrant | undefined;
  private visionGrant: VisionGrant | undefined;
  private modelRequests = 0;
  /** The run's private virtual display (flow computerUse.privateDisplay). */
  private display: PrivateDisplay | undefined;
  private readonly startedAt = Date.now();
  /**
   * The run's command line, when the jail's init runs it with no worker (a `command` run: no Node
   * start, no endpoint); undefined for a run with a worker.
   */
  private readonly direct: string[] | undefined;
  /** What the run may read (its allow-list), once its jail is started. */
  private readable: string[] | undefined;
  /** The cookie file of the person's display made for this run (a user-display run). */
  private xauthority: string | undefined;
  /** Where the scratch dir went at the end, to be removed after the run is reported ended. */
  private goneScratch: string | undefined;
  /** The agent CLI's session id, as the worker reported it (claude's system/init). */
  private agentSession: string | undefined;
  /** This run continues an earlier run's agent session (restored into its HOME). */
  private resumed = false;
  /** The active-run marker's writes, in order (see writeMarker). */
  private markerWrites: Promise<unknown> = Promise.resolve();
  /** A replay card's sensitive parameter values, for the worker's spec (never written anywhere). */
  private paramSecrets: Record<string, string> | undefined;
  private readonly ended: Promise<RunResult>;
  private resolveEnded!: (r: RunResult) => void;

  constructor(
    private readonly deps: RunDeps,
    private readonly spec: LaunchSpec,
  ) {
    this.id = spec.runId;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.result = launchedResult({
      runId: spec.runId,
      card: spec.card,
      flow: spec.flow.name,
      runner: spec.flow.runner,
      workspace: spec.workspace,
      logDir: spec.logDir,
      startedAt: new Date(this.startedAt).toISOString(),
      metrics: {},
    });
    this.log = new RunLog(
      spec.logDir,
      this.result,
      () => this.signals.emit('grow'),
      (file, err) => this.onLogWriteFailed(file, err),
      (dir) => new JailOutput(dir),
    );
    this.workspace = spec.workspace;
    const { command } = spec;
    if (spec.flow.runner === 'command' && command !== undefined && !deps.nodeCommandWorker)
      this.direct = typeof command === 'string' ? ['/bin/sh', '-c', command] : [...command];
    this.denials = this.makeDenialScanner();
    this.liveness = new Liveness({
      heartbeatTimeoutMs: spec.flow.heartbeatTimeoutMs,
      stallTimeoutMs: spec.flow.stallTimeoutMs,
      timeoutMs: spec.flow.timeoutMs,
      live: () => this.isActive && !this.endCause,
      // A hung worker gets no grace: it would not wind down anyway.
      expire: (reason, detail) => this.stop(reason, detail, reason === 'heartbeat-timeout' ? 0 : undefined),
    });
  }

  private get writable(): string[] {
    return runWritable({
      flow: this.spec.flow,
      workspace: this.workspace,
      scratchDir: this.spec.scratchDir,
      artifactsDir: this.artifactsDir,
    });
  }

  /**
   * Runs that make files for the person write them into `<logDir>/artifacts`: computer-use (screenshots,
   * report.md), reflect and replay (the workflow, schema.json, that the host installs in the card),
   * extract (task.md, the model's answer, which the host gates before it writes the card).
   */
  private get artifactsDir(): string | undefined {
    return ARTIFACT_RUNNERS.has(this.spec.flow.runner)
      ? path.join(this.spec.logDir, ARTIFACTS_DIR)
      : undefined;
  }

  private makeDenialScanner(): DenialScanner {
    return new DenialScanner(
      this.workspace,
      this.writable,
      (d) =>
        this.event('denial', `sandbox denied: ${d.path ?? (d.port ? `port ${d.port}` : d.line)}`, {
          path: d.path,
          line: d.line,
          ...(d.port ? { port: d.port } : {}),
          ...(d.remove ? { remove: true } : {}),
        }),
      !!this.spec.flow.sandbox?.askDeletes,
      () => (this.readable ? [...this.readable, ...this.writable] : undefined),
    );
  }

  /**
   * The permissions the person may allow, from the run's denials (asks.ts decides what may be asked).
   * A failed run with asks ends needs-input: the card asks instead of retrying into the same wall.
   */
  private askFor(verdict: ReturnType<typeof classifyEnd>): ReturnType<typeof classifyEnd> {
    const relevant =
      (verdict.status === 'failed' && verdict.reason === 'sandbox-denial') ||
      (verdict.status === 'needs-input' && verdict.reason === 'finished');
    if (!relevant || this.denials.found.length === 0) return verdict;
    const { asks, refused } = deriveAsks(this.denials.found, {
      writable: this.writable,
      hidden: this.deps.hiddenPaths,
      readOnly: this.spec.flow.sandbox?.projectWritable
        ? []
        : projectReadOnly(this.spec.card, this.spec.flow),
      ownPorts: this.proxyGrant ? [this.proxyGrant.port] : [],
      tcpPorts: this.spec.flow.sandbox?.tcpPorts ?? [],
      workspace: this.workspace,
      protected: this.deps.protectedPaths ?? [],
      granted: [this.workspace, ...(this.deps.grantedPaths?.() ?? [])],
    });
    for (const r of refused)
      this.event('log', `not asked: ${r.why}`, { kind: 'ask-refused', line: r.denial.line, level: 'warn' });
    if (asks.length === 0) return verdict;
    this.result.asks = asks;
    const what = asks.map((a) => `${a.kind} ${a.path ?? `port ${a.port}`}`).join('; ');
    this.event('log', `the card asks the person to allow: ${what}`, { kind: 'ask', asks });
    return {
      status: 'needs-input',
      reason: verdict.reason,
      detail: `the sandbox refused: ${what}; allow it once, always for flow ${this.spec.flow.name}, or deny it`,
    };
  }

  get jailPid(): number | undefined {
    return this.child?.pid;
  }

  /** A computer-use run on the user's (shared) display: at most one at a time. */
  get drivesRealDisplay(): boolean {
    return drivesDesktop(this.spec.flow.runner) && !this.spec.flow.computerUse?.privateDisplay;
  }

  get isActive(): boolean {
    return this.state.kind !== 'ended';
  }

  /** Spawns the jail and the worker. Errors here end the run (recorded), they do not throw. */
  start(): void {
    const { flow } = this.spec;
    this.event('launched', `launching ${flow.runner} run of ${this.spec.card.path}`, {
      flow: flow.name,
      workspace: this.spec.workspace,
    });
    void this.prepare().catch((err: unknown) => {
      const detail = `could not start the worker: ${err instanceof Error ? err.message : String(err)}`;
      if (this.child) this.stop('spawn-failed', detail, 0);
      else void this.finish('failed', 'spawn-failed', detail);
    });
  }

  /** Preflight, the worktree, the private display, then the jail; each ends the run when it fails. */
  private async prepare(): Promise<void> {
    const { flow } = this.spec;
    const refused = preflight(flow, {
      landlockAbi: this.deps.landlockAbi,
      landlockReason: this.deps.landlockReason,
      useNamespaces: this.deps.useNamespaces,
      knowsProvider: (p) => !!this.deps.proxy?.route(p),
      hasKey: (p) => !!this.deps.hasKey?.(p),
      missingKeyGuidance: this.deps.missingKeyGuidance,
    });
    if (refused) return this.finish('failed', refused.reason, refused.detail);
    // On disk before any process of the run exists: a supervisor started after a crash of this one
    // finds every run that was going (the jail's pid follows once there is one).
    const marked = this.writeMarker(0);
    if (flow.worktree) {
      let wt: Awaited<ReturnType<typeof createWorktree>>;
      try {
        wt = await createWorktree(this.spec.workspace, this.spec.grantPath ?? this.spec.workspace, this.id);
      } catch (err) {
        return this.finish(
          'failed',
          'worktree-failed',
          `could not create the run's worktree: ${(err as Error).message}`,
        );
      }
      if (!this.isActive) {
        // Cancelled while the worktree was being made: nothing ran in it, so it goes.
        void discardWorktree(wt.info).catch(() => undefined);
        return;
      }
      this.result.worktree = wt.info;
      this.workspace = wt.workspace;
      this.result.workspace = wt.workspace;
      this.denials = this.makeDenialScanner();
      this.event(
        'log',
        `worktree ${wt.info.path} on branch ${wt.info.branch} (from ${wt.info.baseCommit.slice(0, 12)})`,
        { kind: 'worktree', ...wt.info },
      );
    }
    const cu = flow.computerUse;
    if (cu?.privateDisplay) {
      // A private display (Xvfb + D-Bus + AT-SPI + WM, and the flow's app) before the worker.
      const s = this.spec.scratchDir;
      for (const d of ['home', 'tmp']) mkdirSync(path.join(s, d), { recursive: true, mode: 0o700 });
      let d: PrivateDisplay;
      try {
        d = await startPrivateDisplay({
          jailPath: this.deps.jailPath,
          useNamespaces: this.deps.useNamespaces,
          dir: path.join(s, 'display'),
          size: cu.displaySize,
          app: cu.app,
          baseEnv: this.deps.baseEnv,
          appEnv: { HOME: path.join(s, 'home'), TMPDIR: path.join(s, 'tmp') },
          confine: this.deps.landlockAbi > 0 ? { hidden: this.deps.hiddenPaths } : null,
        });
      } catch (err) {
        return this.finish(
          'failed',
          'spawn-failed',
          `could not start the run's private display: ${(err as Error).message}`,
        );
      }
      if (!this.isActive || this.endCause) {
        void d.stop(); // cancelled while the display was starting: nothing ran on it
        return;
      }
      this.display = d;
      this.event('log', `private display ${d.env.DISPLAY} started in ${Math.round(d.startMs)} ms`, {
        kind: 'display',
        display: d.env.DISPLAY,
        startMs: Math.round(d.startMs),
        app: cu.app ?? null,
      });
    }
    if (flow.provider && this.deps.proxy) {
      try {
        this.proxyGrant = await this.deps.proxy.grant(
          this.id,
          flow.provider,
          (info) => this.onModelRequest(info),
          { runner: flow.runner, apis: runnerApis(flow) },
        );
      } catch (err) {
        return this.finish(
          'failed',
          'spawn-failed',
          `could not open the run's model proxy: ${(err as Error).message}`,
        );
      }
      if (!this.isActive || this.endCause) {
        this.deps.proxy.revoke(this.proxyGrant.token); // cancelled meanwhile: nothing uses it
        return;
      }
    }
    const vision = flow.vision && flow.documents !== false ? flow.vision : undefined;
    if (vision && this.deps.proxy?.route(vision.provider) && !this.deps.hasKey?.(vision.provider)) {
      // Said before the run starts, with what to do, rather than as the provider's 401 at the first use.
      const p = vision.provider;
      const how = this.deps.missingKeyGuidance?.(p) ?? `no API key for provider "${p}"`;
      this.event(
        'log',
        `no vision route for this run (vision profile "${vision.profile}"): ${how}; analyze_media says so when it is used`,
        { kind: 'vision', reason: 'no-key', provider: p },
      );
    } else if (vision && this.deps.proxy) {
      // analyze_media's route to the vision profile's provider, on the run's own listener
      try {
        this.visionGrant = await this.deps.proxy.grantVision(this.id, vision, this.proxyGrant, (info) =>
          this.onModelRequest(info),
        );
      } catch (err) {
        this.event('log', `no vision route for this run: ${(err as Error).message}`, { kind: 'vision' });
      }
      if (!this.isActive || this.endCause) {
        for (const g of [this.proxyGrant, this.visionGrant]) if (g) this.deps.proxy.revoke(g.token);
        return;
      }
    }
    if (flow.runner === 'replay' && this.deps.paramSecrets) {
      // handed to the worker in its spec (memory only), never written to the run's folder
      this.paramSecrets = await this.deps.paramSecrets(this.spec.card.path);
      if (!this.isActive || this.endCause) {
        for (const g of [this.proxyGrant, this.visionGrant]) if (g) this.deps.proxy?.revoke(g.token);
        return;
      }
    }
    // The run's folders, made off the event loop (a mkdir on a busy disk takes a millisecond or more,
    // and every launch and attached client of the supervisor would wait for it).
    // So are its output files (the jail gets them open).
    const outputFiles = this.log.output.open();
    outputFiles.catch(() => undefined); // looked at below, after the folders
    await mkdir(this.spec.scratchDir, { recursive: true, mode: 0o700 });
    await Promise.all([
      ...SCRATCH_DIRS.map((d) => mkdir(path.join(this.spec.scratchDir, d), { recursive: true, mode: 0o700 })),
      ...(this.artifactsDir ? [mkdir(this.artifactsDir, { recursive: true, mode: 0o700 })] : []),
      marked,
    ]);
    const display = this.display ? undefined : userDisplay(flow);
    if (display) this.xauthority = await this.displayCookie(display);
    try {
      await outputFiles;
    } catch (err) {
      for (const g of [this.proxyGrant, this.visionGrant]) if (g) this.deps.proxy?.revoke(g.token);
      if (!this.isActive || this.endCause) return;
      const e = err as NodeJS.ErrnoException;
      return this.finish(
        'failed',
        'log-write-failed',
        `could not create the run's output files in ${this.spec.logDir}: ${e.code ?? e.message}${e.code === 'ENOSPC' ? ' (the disk holding the run logs is full; free space and run again)' : ''}`,
      );
    }
    const from = this.spec.resumeFrom;
    const cli = agentCli(this.spec.flow.runner);
    if (from && cli)
      await restoreSession(cli, from.logDir, from.session, this.spec.scratchDir, this.workspace).then(
        () => {
          this.resumed = true;
          this.result.session = { cli, id: from.session, resumed: true };
          this.event('log', `continuing agent session ${from.session} (the person allowed what it asked)`, {
            kind: 'resume',
            session: from.session,
          });
        },
        (err: unknown) =>
          this.event(
            'log',
            `the agent starts afresh: its session could not be restored (${(err as Error).message})`,
            {
              kind: 'resume-failed',
              level: 'warn',
            },
          ),
      );
    if (!this.isActive || this.endCause) {
      for (const g of [this.proxyGrant, this.visionGrant]) if (g) this.deps.proxy?.revoke(g.token);
      return;
    }
    this.spawn();
  }

  /**
   * The person's display's cookie alone, extracted (`xauth extract`) from their authority file into the
   * run's scratch dir: the run never reads the person's .Xauthority. undefined when there is none to
   * take (a display without cookies needs none; the run's X clients then try without).
   */
  private async displayCookie(display: string): Promise<string | undefined> {
    const env = this.deps.baseEnv;
    const source = env.XAUTHORITY || (env.HOME ? path.join(env.HOME, '.Xauthority') : undefined);
    if (!source) return undefined;
    const file = path.join(this.spec.scratchDir, 'xauthority');
    try {
      await execa('xauth', ['-f', source, 'extract', file, display], {
        env: { PATH: env.PATH ?? '' },
        timeout: 10_000,
      });
    } catch (err) {
      this.event('log', `no cookie for display ${display}: ${(err as Error).message.split('\n')[0]}`, {
        kind: 'display',
        level: 'warn',
      });
      return undefined;
    }
    return existsSync(file) ? file : undefined;
  }

  private spawn(): void {
    const { flow } = this.spec;
    // The workspace goes to the jail open, checked against the path the grant check resolved.
    let workspaceFd: number | undefined;
    if (!flow.readOnly) {
      try {
        workspaceFd = openWorkspace(this.workspace);
      } catch (err) {
        void this.finish('failed', 'sandbox-failed', (err as Error).message);
        return;
      }
    }
    const own = projectReadOnly(this.spec.card, flow);
    for (const d of projectFoldersToMake(own)) mkdirSync(d, { recursive: true, mode: 0o700 });
    const readOnly = [
      ...own,
      ...knownProjectsReadOnly(this.deps.knownProjects?.() ?? [], this.writable, this.spec.card),
    ];
    const display = this.display ? undefined : userDisplay(flow);
    const readable = (this.readable = this.deps.readTrees?.length
      ? runReadable({
          base: this.deps.readTrees,
          flow,
          workspace: this.workspace,
          card: this.spec.card,
          privateDisplay: !!this.display,
          userDisplay: !!display,
          userRuntimeDir: this.deps.baseEnv.XDG_RUNTIME_DIR,
          userHome: this.deps.baseEnv.HOME,
        })
      : undefined);
    const args = buildJailArgs({
      flow,
      workspace: this.workspace,
      writable: this.writable,
      hiddenPaths: this.deps.hiddenPaths,
      workerArgv: this.direct ?? this.deps.workerArgv,
      init: this.direct !== undefined,
      parentPid: process.pid,
      landlockAbi: this.deps.landlockAbi,
      useNamespaces: this.deps.useNamespaces,
      proxyPort: this.proxyGrant?.port ?? this.visionGrant?.port,
      privateDisplay: this.display?.env.DISPLAY,
      userDisplay: display,
      readable,
      userRuntimeDir: this.deps.baseEnv.XDG_RUNTIME_DIR,
      privateTmpSize: flow.sandbox?.tmpSize ?? DEFAULT_TMP_SIZE,
      memoryBytes: runMemoryBytes(flow, totalmem()),
      readOnly: readOnly.map(realOrAsIs),
      workspaceFd: workspaceFd === undefined ? undefined : JAIL_WORKSPACE_FD,
      outputFds: [...JAIL_OUTPUT_FDS],
    });
    const env: Record<string, string> = buildRunEnv({
      flow,
      baseEnv: this.deps.baseEnv,
      runId: this.id,
      token: this.token,
      workspace: this.workspace,
      scratchDir: this.spec.scratchDir,
      nativeDir: path.dirname(this.deps.jailPath),
      displayEnv: this.display?.env,
      path: readable ? this.deps.runPath : undefined,
      xauthority: this.xauthority,
    });
    if (this.direct) delete env[RunEnv.token]; // no endpoint to prove anything to
    let child: JailProcess;
    try {
      child = spawnJail(
        this.deps.jailPath,
        args,
        this.workspace,
        workspaceFd,
        this.log.output.fileFds,
        !this.direct,
      );
      const envPipe = (child.stdio as unknown as Writable[])[JAIL_ENV_FD]!;
      envPipe.on('error', () => undefined); // a jail that died early: its exit says why
      envPipe.end(serializeEnv(env));
    } catch (err) {
      void this.finish('failed', 'spawn-failed', `could not start the worker: ${(err as Error).message}`);
      return;
    } finally {
      if (workspaceFd !== undefined) closeSync(workspaceFd); // the jail has its own copy
      this.log.output.handedOver(); // so are the log files
    }
    this.child = child;
    readJailStatus(
      child.stdio[JAIL_STATUS_FD],
      (s) => this.onJailStatus(s),
      (why) => this.event('error', why),
    );
    if (!this.direct) this.serveEndpoint(child.stdio[RUN_ENDPOINT_FD] as unknown as NodeJS.ReadWriteStream);
    void child
      .then((r) => this.onJailExit(r.exitCode ?? null, r.signal ?? null))
      .catch((err: unknown) =>
        this.finish('failed', 'crashed', `could not tell how the run ended: ${(err as Error).message}`),
      );
    this.liveness.start(!this.direct);
  }

  /** Cancel: idempotent. */
  cancel(): void {
    this.stop('cancelled', 'cancelled by the user');
  }

  /** Ends the run for `reason`: SIGTERM to the worker (via the jail), SIGKILL after the grace. */
  stop(
    reason: TerminationReason,
    detail: string,
    graceMs = this.spec.flow.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
  ): void {
    if (!this.isActive || this.endCause) return;
    this.endCause = { reason, detail };
    this.event('cancel', detail, { reason });
    if (!this.child) {
      void this.finish(reason === 'cancelled' ? 'cancelled' : 'failed', reason, detail);
      return;
    }
    if (graceMs > 0) this.child.kill('SIGTERM');
    this.killTimers.push(setTimeout(() => this.killNow(), graceMs));
  }

  attachSource(): AttachSource {
    return this.log.attachSource(this.id, this.signals, () => this.ended);
  }

  whenEnded(): Promise<RunResult> {
    return this.ended;
  }

  // ─── internals ────────────────────────────────────────────────────────────────────────────────

  private killNow(): void {
    // The worker is the init of the run's PID namespace: killing it kills every process of the run,
    // and the jail's wait for it returns only when they are all gone. So the jail is left to report
    // (and the run counts as ended only then); it is killed itself only if it does not.
    if (this.workerPid) {
      try {
        process.kill(this.workerPid, 'SIGKILL');
      } catch {
        // already gone
      }
      this.killTimers.push(setTimeout(() => this.child?.kill('SIGKILL'), 2000));
    } else {
      this.child?.kill('SIGKILL'); // no worker yet; the jail's parent-death signal covers a late fork
    }
  }

  private onModelRequest(info: ModelRequestInfo): void {
    this.modelRequests++;
    this.event('log', `model request ${info.method} ${info.path} → ${info.status ?? info.error}`, {
      kind: 'model-request',
      provider: info.provider,
      path: info.path,
      status: info.status ?? null,
      error: info.error ?? null,
      at: info.at,
      n: this.modelRequests,
    });
  }

  private event(type: RunEvent['type'], message?: string, data?: Record<string, unknown>): void {
    this.log.event(type, message, data);
  }

  /**
   * Reads what stderr.log gained since the last scan for sandbox denials (one read at a time; the
   * supervisor never holds the run's output otherwise). Resolves when the scan reached the size known now.
   */
  private scanStderr(): Promise<void> {
    this.stderrScan = this.stderrScan.then(async () => {
      const end = this.log.output.committed.stderr;
      if (this.stderrScanned >= end || this.denials.found.length >= 20) return;
      const fh = await open(this.log.output.paths.stderr, 'r');
      try {
        const buf = Buffer.allocUnsafe(Math.min(256 * 1024, end - this.stderrScanned));
        while (this.stderrScanned < end && this.denials.found.length < 20) {
          const want = Math.min(buf.length, end - this.stderrScanned);
          const { bytesRead } = await fh.read(buf, 0, want, this.stderrScanned);
          if (bytesRead === 0) break;
          this.stderrScanned += bytesRead;
          this.denials.scan(buf.subarray(0, bytesRead));
        }
      } finally {
        await fh.close();
      }
    });
    this.stderrScan = this.stderrScan.catch(() => undefined); // a log dir gone: nothing to scan
    return this.stderrScan;
  }

  private onJailStatus(s: JailStatus): void {
    switch (s.event) {
      case 'output': {
        const stderrBefore = this.log.output.committed.stderr;
        this.log.output.sizes(s);
        this.liveness.output();
        if (this.log.output.committed.stderr > stderrBefore) void this.scanStderr();
        break;
      }
      case 'output-failed':
        this.log.output.failed(s.file, s.code, s.message);
        break;
      case 'started':
        this.workerPid = s.pid;
        this.result.pid = s.pid;
        this.result.containment = s.containment;
        this.event(
          'started',
          `${this.direct ? "the run's init" : 'worker'} started (pid ${s.pid}, containment: ${s.containment})`,
          s,
        );
        void this.writeMarker(this.child?.pid ?? 0); // the pids, once the run's first process exists
        if (s.memoryBytes && s.memoryLimit !== 'cgroup')
          this.event(
            'log',
            `this run has no memory limit: the jail could make no memory cgroup (${s.memoryError || 'unknown'}); sandbox.memory is not enforced on this machine`,
            { kind: 'memory-limit-off', level: 'warn' },
          );
        break;
      case 'sandbox':
        this.result.sandbox = {
          landlockAbi: s.landlockAbi,
          enforced: s.enforced,
          ...(s.fs ? { fs: s.fs } : {}),
        };
        this.event(
          'sandbox',
          s.fs === 'mounts'
            ? `filesystem confined by mounts (the agent's own sandbox runs inside)${s.landlockAbi ? `, Landlock ABI ${s.landlockAbi} for network and scopes` : ''}`
            : s.enforced
              ? `Landlock ABI ${s.landlockAbi} enforced`
              : 'running unsandboxed (allowed by the flow)',
          s,
        );
        if (
          this.spec.flow.runner === 'codex' &&
          this.spec.flow.sandbox?.agentSandbox === 'auto' &&
          s.fs !== 'mounts'
        )
          this.event(
            'log',
            `codex runs without its own sandbox: this machine gives runs no user namespaces${this.deps.useNamespaces ? '' : ' (RUNBOARD_NAMESPACES=off)'}; the jail alone confines it`,
            { kind: 'agent-sandbox-off', level: 'warn' },
          );
        if (this.direct) this.commandStarted(this.direct);
        break;
      case 'error':
        this.jailError = s.message;
        this.event('error', this.jailError);
        break;
      case 'exit':
        this.jailExit = s;
        if (this.direct && s.command) this.commandEnded(s.command, this.direct);
        break;
    }
  }

  /** The jail's init is starting the run's command: the run is running (as a worker's `ready`). */
  private commandStarted(argv: string[]): void {
    if (this.isActive && !this.endCause) this.state = RunState.running(this.workerPid ?? 0);
    this.event('ready', "command starting under the jail's init (no worker)");
    const shown = commandShown(argv);
    this.event('progress', `running ${shown.length > 200 ? shown.slice(0, 200) + '…' : shown}`, {
      fraction: 0,
    });
  }

  /** How the run's command ended, as the jail's init saw it: the run's report (as a worker's). */
  private commandEnded(c: NonNullable<JailExit['command']>, argv: string[]): void {
    const file = argv[0] === '/bin/sh' && argv[1] === '-c' ? '/bin/sh' : (argv[0] ?? '');
    const summary = c.execErrno
      ? c.execErrno === osConstants.errno.ENOENT
        ? `command not found: ${file}`
        : c.execErrno === osConstants.errno.EACCES
          ? `permission denied running ${file}`
          : `could not run ${file} (errno ${c.execErrno})`
      : c.code === 0
        ? 'command exited with code 0'
        : c.code === null
          ? `command killed by ${signalName(c.signal)}${this.endCause?.reason === 'cancelled' ? ' (cancelled)' : ''}`
          : `command exited with code ${c.code}`;
    this.finishedReport = {
      status: c.code === 0 && !c.execErrno ? 'succeeded' : 'failed',
      exitCode: c.execErrno ? 127 : c.code,
      summary,
      metrics: { commandMs: c.ms },
    };
    this.event('progress', summary, { fraction: 1 });
    this.event('finished', summary, {
      status: this.finishedReport.status,
      exitCode: this.finishedReport.exitCode,
    });
  }

  private serveEndpoint(stream: NodeJS.ReadWriteStream): void {
    this.conn = serveWorkerEndpoint(stream, {
      runId: this.id,
      token: this.token,
      onError: (m) => this.event('error', m),
      onReady: (p) => {
        if (this.isActive && !this.endCause) this.state = RunState.running(this.workerPid ?? p.pid);
        this.event('ready', `worker ready (version ${p.version})`);
        return {
          runId: this.id,
          runner: this.spec.flow.runner,
          flow: this.spec.flow,
          card: this.spec.card,
          workspace: this.workspace,
          command: this.spec.command,
          heartbeatIntervalMs: this.liveness.heartbeatIntervalMs,
          ...(this.artifactsDir ? { artifactsDir: this.artifactsDir } : {}),
          ...(this.resumed && this.spec.resumeFrom
            ? { resume: { session: this.spec.resumeFrom.session, note: this.spec.resumeFrom.note } }
            : {}),
          ...(this.paramSecrets ? { secrets: this.paramSecrets } : {}),
          ...(this.proxyGrant
            ? {
                model: {
                  provider: this.proxyGrant.provider,
                  baseUrl: this.proxyGrant.baseUrl,
                  token: this.proxyGrant.token,
                  ...(this.spec.flow.model ? { model: this.spec.flow.model } : {}),
                },
              }
            : {}),
          ...(this.visionGrant
            ? {
                vision: (({ provider, model, baseUrl, token }) => ({ provider, model, baseUrl, token }))(
                  this.visionGrant,
                ),
              }
            : {}),
        };
      },
      onHeartbeat: () => {
        this.liveness.beat();
        this.result.lastHeartbeat = this.liveness.lastHeartbeat;
      },
      onLog: (p) => {
        this.liveness.output();
        // an agent CLI's own permission refusal goes through the same ask as the sandbox's
        const agent = p.data?.agent as
          { kind?: unknown; tool?: unknown; detail?: unknown; id?: unknown } | undefined;
        if (
          agent?.kind === 'session' &&
          typeof agent.id === 'string' &&
          AgentSessionId.safeParse(agent.id).success
        )
          this.agentSession = agent.id;
        if (agent?.kind === 'permission-denied')
          this.denials.scanAgent(`${String(agent.tool)}: ${String(agent.detail).slice(0, 2000)}`);
        this.event('log', p.message, { level: p.level, ...(p.data ?? {}) });
      },
      onProgress: (p) => {
        this.liveness.output();
        this.event('progress', p.message, p.fraction !== undefined ? { fraction: p.fraction } : undefined);
      },
      onFinished: (p) => {
        this.finishedReport = p;
        this.event('finished', p.summary, { status: p.status, exitCode: p.exitCode });
      },
    });
  }

  private onLogWriteFailed(file: string, err: NodeJS.ErrnoException): void {
    this.deps.log.error({ runId: this.id, file, err: err.message }, 'run log write failed');
    this.stop(
      'log-write-failed',
      `could not write ${path.basename(file)}: ${err.code ?? err.message} (${err.code === 'ENOSPC' ? 'the disk holding the run logs is full; free space and run again' : err.message}); the run was stopped so that no output is lost silently`,
      0,
    );
  }

  private get markerPath(): string {
    return path.join(this.deps.supervisorDir, 'active', this.id);
  }

  /**
   * The active-run marker (what a supervisor started after a crash of this one finds: the run's
   * processes and folders), written off the event loop; the writes of one run are chained, in order.
   */
  private writeMarker(jailPid: number): Promise<unknown> {
    const marker = JSON.stringify({
      logDir: this.spec.logDir,
      jailPid,
      workerPid: this.workerPid,
      supervisorPid: process.pid,
      scratchDir: this.spec.scratchDir,
    });
    // Each version is a line appended (one write): a supervisor killed in the middle of one leaves the
    // lines before it whole, and the reader takes the last whole line (registry.ts). Not a new file
    // renamed over the old, which made and freed a file per version (what a launch waits on, on ext4).
    this.markerWrites = this.markerWrites
      .then(() => appendFile(this.markerPath, `${marker}\n`, { mode: 0o600 }))
      .catch((err: unknown) =>
        this.deps.log.warn(
          { runId: this.id, err: (err as Error).message },
          'could not write the active-run marker',
        ),
      );
    return this.markerWrites;
  }

  private async onJailExit(code: number | null, signal: string | null): Promise<void> {
    // The jail's last lines say how much output it moved into the files: nothing the run printed is lost.
    await this.streamEnd(this.child?.stdio[JAIL_STATUS_FD]);
    await this.scanStderr();
    const verdict = this.askFor(
      classifyEnd({
        endCause: this.endCause,
        jailExit: this.jailExit,
        jailError: this.jailError,
        jailProcess: { code, signal },
        report: this.finishedReport,
        denials: this.denials.found.map((d) => d.path ?? d.line),
      }),
    );
    recordEvidence(this.result, this.jailExit, this.finishedReport, signal);
    await this.finish(verdict.status, verdict.reason, verdict.detail);
  }

  private streamEnd(s: Readable | undefined): Promise<void> {
    if (!s || s.readableEnded || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      s.once('end', resolve);
      s.once('close', resolve);
      s.once('error', () => resolve());
    });
  }

  /**
   * Ends the run (idempotent) and writes its final record. Never rejects: a step of the record that
   * fails is logged and the others still happen, so no run is left that never ends.
   */
  private finish(
    status: Exclude<RunResult['status'], 'running'>,
    reason: TerminationReason,
    detail: string,
  ): Promise<void> {
    if (this.state.kind === 'ended') return Promise.resolve();
    this.state = RunState.ended(status, reason, detail);
    return this.finalize(status, reason, detail)
      .catch((err: unknown) => this.logStepFailure('the final record', err))
      .finally(() => {
        this.log.final = true;
        this.resolveEnded(this.result);
        void rm(this.goneScratch ?? this.spec.scratchDir, { recursive: true, force: true }).catch(
          () => undefined,
        );
      });
  }

  private logStepFailure(what: string, err: unknown): void {
    this.deps.log.error(
      { runId: this.id, err: err instanceof Error ? err.message : String(err) },
      `ending the run: ${what} failed`,
    );
  }

  private async step(what: string, f: () => unknown): Promise<void> {
    try {
      await f();
    } catch (err) {
      this.logStepFailure(what, err);
    }
  }

  private async finalize(
    status: Exclude<RunResult['status'], 'running'>,
    reason: TerminationReason,
    detail: string,
  ): Promise<void> {
    for (const t of this.killTimers) clearTimeout(t);
    this.liveness.clear();
    await this.step('closing the worker endpoint', () => this.conn?.dispose());
    if (this.proxyGrant) this.deps.proxy?.revoke(this.proxyGrant.token);
    if (this.visionGrant) this.deps.proxy?.revoke(this.visionGrant.token);
    const sink = (type: 'log' | 'error', message: string, data?: Record<string, unknown>): void =>
      this.event(type, message, data);
    const display = this.display;
    if (display)
      await this.step('the private display teardown', async () => {
        // the live view's frame (a worker that was killed did not remove it): only the steps stay
        rmSync(path.join(this.artifactsDir!, LIVE_FRAME_FILE), { force: true });
        await tearDownDisplay(display, this.result, sink);
      });
    if (this.modelRequests)
      this.result.metrics = { ...this.result.metrics, modelRequests: this.modelRequests };
    await this.step('recording the worktree', () => recordWorktree(this.result, this.spec.card.title, sink));
    // A claude run stopped at an ask keeps its session, to be continued once the person allows it.
    const session = this.agentSession;
    const cli = agentCli(this.spec.flow.runner);
    if (status === 'needs-input' && this.result.asks?.length && cli && session)
      await this.step('keeping the agent session', async () => {
        if (await keepSession(cli, this.spec.scratchDir, this.spec.logDir, session))
          this.result.session = { cli, id: session };
      });
    const endedAt = Date.now();
    Object.assign(this.result, {
      status,
      termination: { reason, detail },
      endedAt: new Date(endedAt).toISOString(),
      durationMs: endedAt - this.startedAt,
      summary: this.result.summary || detail,
    });
    this.event('ended', `${status}: ${detail}`, { status, reason });
    await this.step('closing the run logs', () => this.log.close());
    const { committed, dropped } = this.log.output;
    this.result.stdoutBytes = committed.stdout;
    this.result.stderrBytes = committed.stderr;
    if (dropped) this.result.metrics = { ...this.result.metrics, droppedOutputBytes: dropped };
    await this.step('writing result.json', () => this.log.writeResultAsync(this.result));
    // after the marker's last write (they are chained), so that none comes back once it is removed
    this.markerWrites = this.markerWrites.then(() => rm(this.markerPath, { force: true }));
    await this.step('removing the active-run marker', () => this.markerWrites);
    // Scratch is gone before the run is reported ended (a client may look right away): renamed out of
    // the way at once, its removal (a walk of the tree) done after the report.
    this.goneScratch = goneScratch(this.spec.scratchDir);
    this.log.final = true;
    await this.step('telling attached clients', () => this.signals.emit('final'));
    this.deps.log.info({ runId: this.id, status, reason }, 'run ended');
  }
}

/** The agent CLI of a runner whose sessions are kept across an ask, if any. */
const agentCli = (runner: string): AgentCli | undefined =>
  runner === 'claude' || runner === 'codex' ? runner : undefined;

/** A command line as a person would type it (for the run's progress line). */
function commandShown(argv: string[]): string {
  return argv[0] === '/bin/sh' && argv[1] === '-c' && argv.length === 3 ? argv[2]! : argv.join(' ');
}

/** Scratch dirs of ended runs that are still being removed (after a crash: by the next supervisor). */
export const GONE_SCRATCH_PREFIX = '.gone-';

/** Moves a run's scratch dir out of its name (one rename); returns where it went, to be removed. */
function goneScratch(dir: string): string {
  const gone = path.join(path.dirname(dir), GONE_SCRATCH_PREFIX + path.basename(dir));
  try {
    renameSync(dir, gone);
    return gone;
  } catch {
    return dir; // not there (a run that never started), or not movable: removed where it is
  }
}

/** Synchronous scratch cleanup for a run from a dead supervisor. */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
