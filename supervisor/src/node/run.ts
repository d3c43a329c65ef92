/**
 * One run, from launch to its final record. Owns the run's jail + worker process and its state; the
 * parts it composes live beside it: what it is given (run-deps.ts), its records (run-log.ts), preflight
 * (run-preflight.ts) and the other steps before its jail (run-prepare.ts), the jail's argv, environment
 * and process (jail-args.ts, run-jail.ts, run-start.ts), the jail's status lines (jail-status.ts), a
 * command run's report (run-command.ts), the worker endpoint and the worker's spec (worker-endpoint.ts,
 * worker-spec.ts), liveness timers (liveness.ts), its marker and stderr scan (run-files.ts), what it
 * may write and read, its denials and asks (run-permissions.ts), its model requests, usage and budget
 * (run-model-use.ts), how it ended (classify-end.ts) and its final record (run-finalize.ts).
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import {
  drivesDesktop,
  JAIL_STATUS_FD,
  RUN_ENDPOINT_FD,
  RunState,
  type MessageConnection,
  type RunEvent,
  type RunResult,
  type TerminationReason,
} from '../protocol/index.ts';
import type { AttachSource } from './attach.ts';
import { classifyEnd, type FinishedReport, type JailExit } from './classify-end.ts';
import { readJailStatus, type JailStatus } from './jail-status.ts';
import { Liveness } from './liveness.ts';
import { launchedResult } from './result-file.ts';
import { JailOutput } from './output-files.ts';
import { RunLog } from './run-log.ts';
import { RunModelUse } from './run-model-use.ts';
import { RunPermissions } from './run-permissions.ts';
import { recordEvidence, writeFinalRecord } from './run-finalize.ts';
import { startRunJail } from './run-start.ts';
import { preflight, type PreflightEnv } from './run-preflight.ts';
import { serveWorkerEndpoint } from './worker-endpoint.ts';
import { agentNote, workerSpec } from './worker-spec.ts';
import type { LaunchSpec, RunDeps } from './run-deps.ts';
import {
  artifactsDirOf,
  grantModel,
  preflightEnv,
  grantVision,
  loadParamSecrets,
  makeFolders,
  makeWorktree,
  gatherJudged,
  resumeSession,
  startDisplay,
  type Prepared,
  type Preparing,
} from './run-prepare.ts';
import {
  agentSandboxOff,
  killRun,
  memoryLimitOff,
  sandboxLine,
  streamEnd,
  type JailProcess,
} from './run-jail.ts';
import { commandReport, commandStartLine, directCommand } from './run-command.ts';
import { ActiveMarker, goneScratch, StderrScan } from './run-files.ts';
import { workerLogData } from './worker-log-data.ts';

const DEFAULT_KILL_GRACE_MS = 1000;

export class Run {
  readonly id: string;
  readonly token = randomBytes(24).toString('hex');
  readonly signals = new EventEmitter();
  state: RunState = RunState.launching();
  result: RunResult;

  private readonly log: RunLog<JailOutput>;
  /** The scan of stderr.log for sandbox denials. */
  private readonly stderrScan: StderrScan;
  /** The active-run marker (see writeMarker). */
  private readonly marker: ActiveMarker;
  private child: JailProcess | undefined;
  private conn: MessageConnection | undefined;
  private workerPid: number | null = null;
  private finishedReport: FinishedReport | null = null;
  private jailExit: JailExit | null = null;
  private jailError = '';
  private endCause: { reason: TerminationReason; detail: string } | null = null;
  private killTimers: NodeJS.Timeout[] = [];
  private readonly liveness: Liveness;
  /** What the run may write and read, its denials and its asks (run-permissions.ts). */
  private readonly perms: RunPermissions;
  /** What the steps before the jail made: its worktree, display, model routes (run-prepare.ts). */
  private readonly made: Prepared;
  /** Its model requests, their tokens and cost, its budget, its debug log (run-model-use.ts). */
  private readonly models: RunModelUse;
  private readonly startedAt = Date.now();
  /**
   * The run's command line, when the jail's init runs it with no worker (a `command` run: no Node
   * start, no endpoint); undefined for a run with a worker.
   */
  private readonly direct: string[] | undefined;
  /** Where the scratch dir went at the end, to be removed after the run is reported ended. */
  private goneScratch: string | undefined;
  /** The agent CLI's session id, as the worker reported it (claude's system/init). */
  private agentSession: string | undefined;
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
    this.made = { workspace: spec.workspace, resumed: false };
    this.models = new RunModelUse({
      flow: spec.flow,
      logDir: spec.logDir,
      secrets: () => Object.values(this.made.paramSecrets ?? {}),
      usage: (usage, spent) => {
        this.result.usage = usage;
        if (spent) this.stop('budget', spent);
      },
      log: (message, data) => this.event('log', message, data),
    });
    this.direct = directCommand(spec.flow, spec.command, !!deps.nodeCommandWorker);
    this.perms = new RunPermissions({
      deps,
      spec,
      result: this.result,
      made: this.made,
      artifactsDir: this.artifactsDir,
      event: (type, message, data) => this.event(type, message, data),
      writeResult: () => this.log.writeResult(this.result),
      keepAlive: () => this.liveness.output(),
      stop: (reason, detail) => this.stop(reason, detail),
      jail: () => this.child,
    });
    this.stderrScan = new StderrScan(this.log.output, () => this.perms.denials);
    this.marker = new ActiveMarker(path.join(deps.supervisorDir, 'active', this.id), (err) =>
      deps.log.warn({ runId: this.id, err: err.message }, 'could not write the active-run marker'),
    );
    this.liveness = new Liveness({
      heartbeatTimeoutMs: spec.flow.heartbeatTimeoutMs,
      stallTimeoutMs: spec.flow.stallTimeoutMs,
      timeoutMs: spec.flow.timeoutMs,
      live: () => this.isActive && !this.endCause,
      // A hung worker gets no grace: it would not wind down anyway.
      expire: (reason, detail) => this.stop(reason, detail, reason === 'heartbeat-timeout' ? 0 : undefined),
    });
  }

  /** Where the run writes files for the person, if its runner makes any (run-prepare.ts). */
  private get artifactsDir(): string | undefined {
    return artifactsDirOf(this.spec.flow, this.spec.logDir);
  }

  /** The person's answer to a live ask of this run (run/answer); false when none of that id waits. */
  answerAsk(id: string, choice: 'allow' | 'deny'): boolean {
    return this.perms.answer(id, choice);
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
    const env = preflightEnv(this.deps);
    const refused = preflight(this.spec.flow, env);
    if (refused) return this.finish('failed', refused.reason, refused.detail);
    // On disk before any process of the run exists: a supervisor started after a crash of this one
    // finds every run that was going (the jail's pid follows once there is one).
    const marked = this.writeMarker(0);
    const run = this.preparing(env, marked);
    for (const step of [
      makeWorktree,
      startDisplay,
      grantModel,
      grantVision,
      loadParamSecrets,
      makeFolders,
      gatherJudged,
      resumeSession,
    ])
      if (!(await step(run))) return;
    this.spawn();
  }

  /** What the steps before the jail see of the run (run-prepare.ts); they fill in `made`. */
  private preparing(env: PreflightEnv, marked: Promise<unknown>): Preparing {
    return {
      id: this.id,
      deps: this.deps,
      spec: this.spec,
      result: this.result,
      made: this.made,
      env,
      marked,
      artifactsDir: this.artifactsDir,
      output: this.log.output,
      isActive: () => this.isActive,
      stopping: () => !this.isActive || !!this.endCause,
      event: (type, message, data) => this.event(type, message, data),
      fail: (reason, detail) => this.finish('failed', reason, detail),
      onModelRequest: (info) => this.models.request(info),
      ...(this.models.taps ? { taps: this.models.taps } : {}),
      moved: () => this.perms.moved(),
    };
  }

  private spawn(): void {
    const started = startRunJail(
      {
        deps: this.deps,
        spec: this.spec,
        token: this.token,
        workspace: this.made.workspace,
        writable: this.perms.writable,
        direct: this.direct,
        proxyPort: this.made.proxyGrant?.port ?? this.made.visionGrant?.port,
        display: this.made.display,
        xauthority: this.made.xauthority,
      },
      this.log.output,
    );
    if ('failed' in started) {
      void this.finish('failed', started.failed, started.detail);
      return;
    }
    const child = (this.child = started.child);
    this.perms.readable = started.readable;
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
    this.killTimers.push(
      setTimeout(() => {
        const t = killRun(this.workerPid, this.child);
        if (t) this.killTimers.push(t);
      }, graceMs),
    );
  }

  attachSource(): AttachSource {
    return this.log.attachSource(this.id, this.signals, () => this.ended);
  }

  whenEnded(): Promise<RunResult> {
    return this.ended;
  }

  // ─── internals ────────────────────────────────────────────────────────────────────────────────

  private event(type: RunEvent['type'], message?: string, data?: Record<string, unknown>): void {
    this.log.event(type, message, data);
  }

  private onJailStatus(s: JailStatus): void {
    switch (s.event) {
      case 'output': {
        const stderrBefore = this.log.output.committed.stderr;
        this.log.output.sizes(s);
        this.liveness.output();
        if (this.log.output.committed.stderr > stderrBefore) void this.stderrScan.more();
        break;
      }
      case 'output-failed':
        this.log.output.failed(s.file, s.code, s.message);
        break;
      case 'started': {
        this.workerPid = s.pid;
        this.result.pid = s.pid;
        this.result.containment = s.containment;
        this.event(
          'started',
          `${this.direct ? "the run's init" : 'worker'} started (pid ${s.pid}, containment: ${s.containment})`,
          s,
        );
        void this.writeMarker(this.child?.pid ?? 0); // the pids, once the run's first process exists
        const noLimit = memoryLimitOff(s);
        if (noLimit) this.event('log', noLimit, { kind: 'memory-limit-off', level: 'warn' });
        break;
      }
      case 'sandbox': {
        this.result.sandbox = {
          landlockAbi: s.landlockAbi,
          enforced: s.enforced,
          ...(s.fs ? { fs: s.fs } : {}),
        };
        this.event('sandbox', sandboxLine(s), s);
        const off = agentSandboxOff(this.spec.flow, s, this.deps.useNamespaces);
        if (off) this.event('log', off, { kind: 'agent-sandbox-off', level: 'warn' });
        if (this.direct) this.commandStarted(this.direct);
        break;
      }
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
    this.event('progress', commandStartLine(argv), { fraction: 0 });
  }

  /** How the run's command ended, as the jail's init saw it: the run's report (as a worker's). */
  private commandEnded(c: NonNullable<JailExit['command']>, argv: string[]): void {
    const r = (this.finishedReport = commandReport(c, argv, this.endCause?.reason === 'cancelled'));
    this.event('progress', r.summary, { fraction: 1 });
    this.event('finished', r.summary, { status: r.status, exitCode: r.exitCode });
  }

  private serveEndpoint(stream: NodeJS.ReadWriteStream): void {
    this.conn = serveWorkerEndpoint(stream, {
      runId: this.id,
      token: this.token,
      onError: (m) => this.event('error', m),
      onReady: (p) => {
        if (this.isActive && !this.endCause) this.state = RunState.running(this.workerPid ?? p.pid);
        this.event('ready', `worker ready (version ${p.version})`);
        return workerSpec({
          runId: this.id,
          flow: this.spec.flow,
          card: this.spec.card,
          workspace: this.made.workspace,
          command: this.spec.command,
          heartbeatIntervalMs: this.liveness.heartbeatIntervalMs,
          artifactsDir: this.artifactsDir,
          resume: this.made.resumed ? this.spec.resumeFrom : undefined,
          secrets: this.made.paramSecrets,
          model: this.made.proxyGrant,
          vision: this.made.visionGrant,
        });
      },
      onHeartbeat: () => {
        this.liveness.beat();
        this.result.lastHeartbeat = this.liveness.lastHeartbeat;
      },
      onLog: (p) => {
        this.liveness.output();
        // an agent CLI's own permission refusal goes through the same ask as the sandbox's
        const note = agentNote(p.data);
        if (note.session) this.agentSession = note.session;
        if (note.refused) this.perms.denials.scanAgent(note.refused);
        this.event('log', p.message, { level: p.level, ...(workerLogData(p.data) ?? {}) });
      },
      onProgress: (p) => {
        this.liveness.output();
        this.event('progress', p.message, p.fraction !== undefined ? { fraction: p.fraction } : undefined);
      },
      onAsk: (p) => this.perms.ask(p.kind, p.path, p.tool),
      onFinished: (p) => {
        this.finishedReport = p;
        this.event('finished', p.summary, { status: p.status, exitCode: p.exitCode });
      },
    });
  }

  private onLogWriteFailed(file: string, err: NodeJS.ErrnoException): void {
    this.deps.log.error({ runId: this.id, file, err: err.message }, 'run log write failed');
    if (err.code === 'ENOSPC') this.deps.onDiskFull?.(file);
    this.stop(
      'log-write-failed',
      `could not write ${path.basename(file)}: ${err.code ?? err.message} (${err.code === 'ENOSPC' ? 'the disk holding the run logs is full; free space and run again' : err.message}); the run was stopped so that no output is lost silently`,
      0,
    );
  }

  /**
   * The active-run marker (what a supervisor started after a crash of this one finds: the run's
   * processes and folders), written off the event loop; the writes of one run are chained, in order.
   */
  private writeMarker(jailPid: number): Promise<unknown> {
    return this.marker.write({
      logDir: this.spec.logDir,
      jailPid,
      workerPid: this.workerPid,
      supervisorPid: process.pid,
      scratchDir: this.spec.scratchDir,
    });
  }

  private async onJailExit(code: number | null, signal: string | null): Promise<void> {
    // The jail's last lines say how much output it moved into the files: nothing the run printed is lost.
    await streamEnd(this.child?.stdio[JAIL_STATUS_FD]);
    await this.stderrScan.more();
    const verdict = this.perms.verdict(
      classifyEnd({
        endCause: this.endCause,
        jailExit: this.jailExit,
        jailError: this.jailError,
        jailProcess: { code, signal },
        report: this.finishedReport,
        denials: this.perms.denials.found.map((d) => d.path ?? d.line),
      }),
    );
    recordEvidence(this.result, this.jailExit, this.finishedReport, signal);
    await this.finish(verdict.status, verdict.reason, verdict.detail);
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
    this.perms.close();
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
    await this.models.close();
    if (this.made.proxyGrant) this.deps.proxy?.revoke(this.made.proxyGrant.token);
    if (this.made.visionGrant) this.deps.proxy?.revoke(this.made.visionGrant.token);
    await writeFinalRecord(
      {
        spec: this.spec,
        result: this.result,
        log: this.log,
        display: this.made.display,
        artifactsDir: this.artifactsDir,
        modelRequests: () => this.models.requests,
        agentSession: () => this.agentSession,
        startedAt: this.startedAt,
        event: (type, message, data) => this.event(type, message, data),
        step: (what, f) => this.step(what, f),
      },
      status,
      reason,
      detail,
    );
    await this.step('removing the active-run marker', () => this.marker.remove());
    // Scratch is gone before the run is reported ended (a client may look right away): renamed out of
    // the way at once, its removal (a walk of the tree) done after the report.
    this.goneScratch = goneScratch(this.spec.scratchDir);
    this.log.final = true;
    await this.step('telling attached clients', () => this.signals.emit('final'));
    this.deps.log.info({ runId: this.id, status, reason }, 'run ended');
  }
}
