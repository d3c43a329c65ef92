/**
 * One run, from launch to its final record. Owns the run's log dir, its jail + worker process, its
 * timers (heartbeat, time limit, kill grace) and decides, from evidence, how the run ended.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Socket } from 'node:net';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { execa } from 'execa';
import {
  connect,
  handle,
  on,
  ResponseError,
  ErrorCodes,
  RunState,
  WorkerFinished,
  WorkerHeartbeat,
  WorkerLog,
  WorkerProgress,
  WorkerReady,
  type ClarifyingQuestion,
  type Command,
  type CardRef,
  type FlowSpec,
  type MessageConnection,
  type RunEvent,
  type RunResult,
  type TerminationReason,
  type WorkerSpec,
} from '../protocol/index.ts';
import { AppendFile } from './append-file.ts';
import type { AttachSource } from './attach.ts';
import { DenialScanner } from './denials.ts';
import { ResultFile } from './result-file.ts';
import type { ModelProxy, ModelRequestInfo, ProxyGrant } from './model-proxy.ts';
import { commitWorktree, createWorktree, discardWorktree } from './worktrees.ts';
import { startPrivateDisplay, type PrivateDisplay } from './displays.ts';

export interface RunDeps {
  log: Logger;
  jailPath: string;
  /** The command line that starts a worker (node + snapshot or bundle). */
  workerArgv: string[];
  /** Trees no run may read: the state root (keys, grants, other runs' logs and scratch dirs). */
  hiddenPaths: string[];
  /** Landlock ABI of the kernel (0: none). */
  landlockAbi: number;
  landlockReason: string;
  useNamespaces: boolean;
  supervisorDir: string;
  baseEnv: NodeJS.ProcessEnv;
  // issue 6 (coding-agent runs): the loopback model proxy and where provider keys come from.
  proxy?: ModelProxy;
  hasKey?: (provider: string) => boolean;
  missingKeyGuidance?: (provider: string) => string;
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
}

function spawnJail(file: string, args: string[], cwd: string, env: Record<string, string>) {
  return execa(file, args, {
    cwd,
    env,
    extendEnv: false,
    // 0: nothing, 1/2: output into the run log, 3: the run endpoint (a socketpair), 4: jail status lines.
    stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
    buffer: false,
    reject: false,
    cleanup: false,
    encoding: 'buffer',
  });
}
type JailProcess = ReturnType<typeof spawnJail>;

const START_ALLOWANCE_MS = 30_000;
const DEFAULTS = { heartbeatIntervalMs: 1000, heartbeatTimeoutMs: 15_000, killGraceMs: 1000 };

interface JailExit {
  code: number | null;
  signal: number;
  rchar: number;
  wchar: number;
  readBytes: number;
  writeBytes: number;
  utimeMs: number;
  stimeMs: number;
  maxRssKb: number;
}

const SIGNAL_NAMES: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
};
const signalName = (n: number): string => SIGNAL_NAMES[n] ?? `signal ${n}`;

export class Run {
  readonly id: string;
  readonly token = randomBytes(24).toString('hex');
  readonly signals = new EventEmitter();
  state: RunState = RunState.launching();
  result: RunResult;

  private readonly events: AppendFile;
  private readonly stdout: AppendFile;
  private readonly stderr: AppendFile;
  private readonly resultFile: ResultFile;
  private readonly eventOffsets: number[] = [];
  private seq = 0;
  private child: JailProcess | undefined;
  private conn: MessageConnection | undefined;
  private workerPid: number | null = null;
  private finishedReport: {
    status: 'succeeded' | 'failed' | 'needs-input';
    exitCode: number | null;
    summary: string;
    metrics: Record<string, unknown>;
    questions?: ClarifyingQuestion[] | undefined;
    cancelledBy?: 'person' | undefined;
  } | null = null;
  private jailExit: JailExit | null = null;
  private jailError = '';
  private endCause: { reason: TerminationReason; detail: string } | null = null;
  private timers: NodeJS.Timeout[] = [];
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private filesFinal = false;
  private denials: DenialScanner;
  // issue 6: where the run works (its worktree when the flow asks for one), its proxy token, stall timer.
  private workspace: string;
  private proxyGrant: ProxyGrant | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  private modelRequests = 0;
  // issue 5: the run's private virtual display (flow computerUse.privateDisplay).
  private display: PrivateDisplay | undefined;
  private readonly startedAt = Date.now();
  private readonly ended: Promise<RunResult>;
  private resolveEnded!: (r: RunResult) => void;

  constructor(
    private readonly deps: RunDeps,
    private readonly spec: LaunchSpec,
  ) {
    this.id = spec.runId;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    mkdirSync(spec.logDir, { recursive: true, mode: 0o700 });
    this.result = {
      runId: spec.runId,
      status: 'running',
      card: spec.card,
      flow: spec.flow.name,
      runner: spec.flow.runner,
      workspace: spec.workspace,
      logDir: spec.logDir,
      startedAt: new Date(this.startedAt).toISOString(),
      endedAt: null,
      durationMs: null,
      exitCode: null,
      signal: null,
      termination: null,
      lastHeartbeat: null,
      bytesRead: null,
      bytesWritten: null,
      storageBytesRead: null,
      storageBytesWritten: null,
      stdoutBytes: 0,
      stderrBytes: 0,
      summary: '',
      metrics: {},
      containment: null,
      sandbox: null,
      pid: null,
      supervisorPid: process.pid,
    };
    this.resultFile = new ResultFile(path.join(spec.logDir, 'result.json'));
    this.resultFile.init(this.result);
    this.events = new AppendFile(path.join(spec.logDir, 'events.jsonl'));
    this.stdout = new AppendFile(path.join(spec.logDir, 'stdout.log'));
    this.stderr = new AppendFile(path.join(spec.logDir, 'stderr.log'));
    for (const f of [this.events, this.stdout, this.stderr]) {
      f.on('grow', () => this.signals.emit('grow'));
      f.on('failed', (err) => this.onLogWriteFailed(f.path, err));
    }
    this.workspace = spec.workspace;
    this.denials = this.makeDenialScanner();
  }

  /** Trees the run may write: its workspace (unless the flow is read-only), its scratch dir, the flow's extras. */
  private get writable(): string[] {
    const { flow } = this.spec;
    return [
      ...(flow.readOnly ? [] : [this.workspace]),
      this.spec.scratchDir,
      ...(this.artifactsDir ? [this.artifactsDir] : []),
      ...(flow.sandbox?.writable ?? []),
    ];
  }

  /** issue 5: computer-use runs write screenshots and report.md into `<logDir>/artifacts`. */
  private get artifactsDir(): string | undefined {
    return this.spec.flow.runner === 'computer-use' ? path.join(this.spec.logDir, 'artifacts') : undefined;
  }

  private makeDenialScanner(): DenialScanner {
    return new DenialScanner(this.workspace, this.writable, (d) =>
      this.event('denial', `sandbox denied: ${d.path ?? d.line}`, { path: d.path, line: d.line }),
    );
  }

  get jailPid(): number | undefined {
    return this.child?.pid;
  }

  /** issue 5: a computer-use run on the user's (shared) display: at most one at a time. */
  get drivesRealDisplay(): boolean {
    return this.spec.flow.runner === 'computer-use' && !this.spec.flow.computerUse?.privateDisplay;
  }

  get isActive(): boolean {
    return this.state.kind !== 'ended';
  }

  /** Spawns the jail and the worker. Errors here end the run (recorded), they do not throw. */
  start(): void {
    const { flow } = this.spec;
    const sandboxed = this.deps.landlockAbi > 0;
    this.event('launched', `launching ${flow.runner} run of ${this.spec.card.path}`, {
      flow: flow.name,
      workspace: this.spec.workspace,
    });
    if (!sandboxed && !flow.sandbox?.allowUnsandboxed) {
      this.finish(
        'failed',
        'sandbox-failed',
        `this kernel cannot sandbox runs (${this.deps.landlockReason}); set sandbox.allowUnsandboxed: true on flow "${flow.name}" to run it unconfined`,
      );
      return;
    }
    // issue 6: an agent's own sandbox inside the jail (the jail confines the filesystem by mounts).
    if (flow.sandbox?.agentSandbox === true) {
      const why =
        flow.runner !== 'codex'
          ? `sandbox.agentSandbox is for runner codex (its bubblewrap sandbox); flow "${flow.name}" uses runner ${flow.runner}`
          : !this.deps.useNamespaces
            ? `sandbox.agentSandbox needs user namespaces, which this supervisor runs without (RUNBOARD_NAMESPACES=off); set it to auto or false`
            : null;
      if (why) {
        this.finish('failed', 'sandbox-failed', why);
        return;
      }
    }
    // issue 6: a provider key is checked before anything starts; a worktree is made before the spawn.
    if (flow.provider) {
      if (!this.deps.proxy?.route(flow.provider)) {
        this.finish('failed', 'missing-key', `the supervisor knows no model provider "${flow.provider}"`);
        return;
      }
      if (!this.deps.hasKey?.(flow.provider)) {
        this.finish(
          'failed',
          'missing-key',
          this.deps.missingKeyGuidance?.(flow.provider) ?? `no API key for provider "${flow.provider}"`,
        );
        return;
      }
    }
    if (flow.worktree) {
      void createWorktree(this.spec.workspace, this.spec.grantPath ?? this.spec.workspace, this.id).then(
        (wt) => {
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
            {
              kind: 'worktree',
              ...wt.info,
            },
          );
          this.prepareDisplay();
        },
        (err: Error) =>
          this.finish('failed', 'worktree-failed', `could not create the run's worktree: ${err.message}`),
      );
      return;
    }
    this.prepareDisplay();
  }

  /** issue 5: a private display (Xvfb + D-Bus + AT-SPI + WM, and the flow's app) before the worker. */
  private prepareDisplay(): void {
    const cu = this.spec.flow.computerUse;
    if (!cu?.privateDisplay) {
      this.spawn();
      return;
    }
    const s = this.spec.scratchDir;
    for (const d of ['home', 'tmp']) mkdirSync(path.join(s, d), { recursive: true, mode: 0o700 });
    void startPrivateDisplay({
      jailPath: this.deps.jailPath,
      useNamespaces: this.deps.useNamespaces,
      dir: path.join(s, 'display'),
      size: cu.displaySize,
      app: cu.app,
      baseEnv: this.deps.baseEnv,
      appEnv: { HOME: path.join(s, 'home'), TMPDIR: path.join(s, 'tmp') },
    }).then(
      (d) => {
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
        this.spawn();
      },
      (err: Error) =>
        this.finish('failed', 'spawn-failed', `could not start the run's private display: ${err.message}`),
    );
  }

  /**
   * A run on its own display must not reach the user's: Landlock does not govern connect() on pathname
   * Unix sockets, so the jail masks the X socket dir (keeping the run's own socket) and the user's runtime
   * dir (session bus, AT-SPI bus, Wayland) with empty read-only mounts.
   */
  private displayMasks(d: PrivateDisplay): string[] {
    const args = ['--mask', '/tmp/.X11-unix', '--keep', `/tmp/.X11-unix/X${d.env.DISPLAY.slice(1)}`];
    const runtime = this.deps.baseEnv.XDG_RUNTIME_DIR;
    const inside = (p: string): boolean => !!runtime && (p + '/').startsWith(runtime.replace(/\/?$/, '/'));
    if (runtime && path.isAbsolute(runtime) && !this.writable.some(inside) && !inside(this.spec.workspace))
      args.push('--mask', runtime);
    return args;
  }

  private spawn(): void {
    const { flow } = this.spec;
    const sandboxed = this.deps.landlockAbi > 0;
    if (flow.provider && this.deps.proxy)
      this.proxyGrant = this.deps.proxy.grant(this.id, flow.provider, (info) => this.onModelRequest(info));
    for (const d of ['home', 'tmp', 'cache', 'config', 'data'])
      mkdirSync(path.join(this.spec.scratchDir, d), { recursive: true, mode: 0o700 });
    if (this.artifactsDir) mkdirSync(this.artifactsDir, { recursive: true, mode: 0o700 });
    const args = ['--status-fd', '4', '--parent-pid', String(process.pid)];
    for (const w of this.writable) args.push('--write', w);
    for (const p of flow.sandbox?.tcpPorts ?? []) args.push('--tcp', String(p));
    // The model proxy's port is the one TCP destination a model-using run gets from us.
    if (this.proxyGrant) args.push('--tcp', String(this.deps.proxy!.port));
    for (const h of this.deps.hiddenPaths) args.push('--hide', h);
    if (this.display) args.push(...this.displayMasks(this.display));
    // A private display needs no abstract sockets; the user's X server and buses listen on some.
    else if (flow.sandbox?.allowAbstractUnix) args.push('--allow-abstract-unix');
    // 'auto': the jail confines by mounts where it can make the namespaces, else by Landlock as usual.
    const agentSandbox = flow.runner === 'codex' ? flow.sandbox?.agentSandbox : undefined;
    if (agentSandbox === true) args.push('--fs-mounts');
    else if (agentSandbox === 'auto' && this.deps.useNamespaces) args.push('--fs-mounts-if-possible');
    // Where the jail gives the run a mount namespace, /tmp there is the run's own.
    args.push('--private-tmp', path.join(this.spec.scratchDir, 'root-tmp'));
    if (!sandboxed) args.push('--no-landlock');
    if (!this.deps.useNamespaces) args.push('--no-namespaces');
    args.push('--', ...this.deps.workerArgv);

    const s = this.spec.scratchDir;
    const env: Record<string, string> = {
      PATH: this.deps.baseEnv.PATH || '/usr/local/bin:/usr/bin:/bin',
      LANG: this.deps.baseEnv.LANG || 'C.UTF-8',
      HOME: path.join(s, 'home'),
      TMPDIR: path.join(s, 'tmp'),
      XDG_CACHE_HOME: path.join(s, 'cache'),
      XDG_CONFIG_HOME: path.join(s, 'config'),
      XDG_DATA_HOME: path.join(s, 'data'),
      npm_config_cache: path.join(s, 'cache', 'npm'),
      npm_config_update_notifier: 'false',
      RUNBOARD_RUN_ID: this.id,
      RUNBOARD_RUN_TOKEN: this.token,
      RUNBOARD_WORKSPACE: this.workspace,
      ...(this.deps.baseEnv.TZ ? { TZ: this.deps.baseEnv.TZ } : {}),
      // issue 5: a computer-use worker loads the desktop addon from the jail's folder.
      ...(flow.runner === 'computer-use' ? { RUNBOARD_NATIVE_DIR: path.dirname(this.deps.jailPath) } : {}),
      ...(flow.env ?? {}),
      // The private display wins over whatever the flow names.
      ...(this.display
        ? { ...this.display.env, ...(flow.computerUse?.app ? { RUNBOARD_DISPLAY_APP: '1' } : {}) }
        : {}),
    };
    let child: JailProcess;
    try {
      child = spawnJail(this.deps.jailPath, args, this.workspace, env);
    } catch (err) {
      this.finish('failed', 'spawn-failed', `could not start the worker: ${(err as Error).message}`);
      return;
    }
    this.child = child;
    this.pipeOutput(child.stdout as Readable, this.stdout, 'stdout');
    this.pipeOutput(child.stderr as Readable, this.stderr, 'stderr');
    this.readJailStatus(child.stdio[4] as Readable);
    this.serveEndpoint(child.stdio[3] as unknown as NodeJS.ReadWriteStream);
    this.writeMarker(child.pid ?? 0);
    void child.then((r) => this.onJailExit(r.exitCode ?? null, r.signal ?? null));

    this.armHeartbeat();
    this.armStall();
    if (flow.timeoutMs)
      this.timers.push(
        setTimeout(
          () => this.stop('timeout', `the flow's time limit of ${flow.timeoutMs} ms passed`),
          flow.timeoutMs,
        ),
      );
  }

  /** Cancel: idempotent. */
  cancel(): void {
    this.stop('cancelled', 'cancelled by the user');
  }

  /** Ends the run for `reason`: SIGTERM to the worker (via the jail), SIGKILL after the grace. */
  stop(
    reason: TerminationReason,
    detail: string,
    graceMs = this.spec.flow.killGraceMs ?? DEFAULTS.killGraceMs,
  ): void {
    if (!this.isActive || this.endCause) return;
    this.endCause = { reason, detail };
    this.event('cancel', detail, { reason });
    if (!this.child) {
      this.finish(reason === 'cancelled' ? 'cancelled' : 'failed', reason, detail);
      return;
    }
    if (graceMs > 0) this.child.kill('SIGTERM');
    this.timers.push(setTimeout(() => this.killNow(), graceMs));
  }

  attachSource(): AttachSource {
    const view = (f: AppendFile) => ({
      path: f.path,
      committed: () => f.committed,
      isFinal: () => this.filesFinal,
    });
    return {
      runId: this.id,
      events: view(this.events),
      stdout: view(this.stdout),
      stderr: view(this.stderr),
      eventOffset: (seq) => this.eventOffsets[seq],
      signals: this.signals,
      result: () => this.ended,
    };
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
      this.timers.push(setTimeout(() => this.child?.kill('SIGKILL'), 2000));
    } else {
      this.child?.kill('SIGKILL'); // no worker yet; the jail's parent-death signal covers a late fork
    }
  }

  /** issue 6: no output at all (not heartbeats) for the flow's stall timeout ends the run as stalled. */
  private armStall(): void {
    const ms = this.spec.flow.stallTimeoutMs;
    if (!ms || !this.isActive || this.endCause) return;
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(
      () =>
        this.stop(
          'stalled',
          `no output from the run for ${ms} ms (the flow's stall timeout); it was killed as stalled`,
        ),
      ms,
    );
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
    const e: RunEvent = {
      seq: this.seq++,
      ts: new Date().toISOString(),
      type,
      ...(message !== undefined ? { message } : {}),
      ...(data ? { data } : {}),
    };
    this.eventOffsets.push(this.events.committed + this.events.pendingBytes);
    this.events.append(Buffer.from(JSON.stringify(e) + '\n'));
  }

  private pipeOutput(stream: Readable, file: AppendFile, which: 'stdout' | 'stderr'): void {
    stream.on('data', (chunk: Buffer) => {
      this.armStall();
      if (which === 'stderr') this.denials.scan(chunk);
      if (!file.append(chunk)) {
        stream.pause();
        void file.drained().then(() => stream.resume());
      }
    });
    stream.on('error', () => undefined);
  }

  private readJailStatus(stream: Readable): void {
    const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
    rl.on('line', (line) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      switch (msg.event) {
        case 'started':
          this.workerPid = Number(msg.pid);
          this.result.pid = this.workerPid;
          this.result.containment = String(msg.containment);
          this.event(
            'started',
            `worker started (pid ${this.workerPid}, containment: ${msg.containment})`,
            msg,
          );
          this.writeMarker(this.child?.pid ?? 0);
          break;
        case 'sandbox':
          this.result.sandbox = {
            landlockAbi: Number(msg.landlockAbi),
            enforced: Boolean(msg.enforced),
            ...(msg.fs === 'landlock' || msg.fs === 'mounts' || msg.fs === 'none' ? { fs: msg.fs } : {}),
          };
          this.event(
            'sandbox',
            msg.fs === 'mounts'
              ? `filesystem confined by mounts (the agent's own sandbox runs inside)${Number(msg.landlockAbi) ? `, Landlock ABI ${msg.landlockAbi} for network and scopes` : ''}`
              : msg.enforced
                ? `Landlock ABI ${msg.landlockAbi} enforced`
                : 'running unsandboxed (allowed by the flow)',
            msg,
          );
          if (
            this.spec.flow.runner === 'codex' &&
            this.spec.flow.sandbox?.agentSandbox === 'auto' &&
            msg.fs !== 'mounts'
          )
            this.event(
              'log',
              `codex runs without its own sandbox: this machine gives runs no user namespaces${this.deps.useNamespaces ? '' : ' (RUNBOARD_NAMESPACES=off)'}; the jail alone confines it`,
              { kind: 'agent-sandbox-off', level: 'warn' },
            );
          break;
        case 'error':
          this.jailError = String(msg.message);
          this.event('error', this.jailError);
          break;
        case 'exit':
          this.jailExit = msg as unknown as JailExit;
          break;
      }
    });
    stream.on('error', () => undefined);
  }

  private serveEndpoint(stream: NodeJS.ReadWriteStream): void {
    const socket = stream as unknown as Socket;
    socket.on('error', () => undefined);
    const conn = connect(socket, socket, {
      maxMessageBytes: 4 * 1024 * 1024,
      onProtocolError: (e) => this.event('error', `bad message from worker: ${e.message}`),
      close: () => socket.destroy(),
    });
    this.conn = conn;
    let ready = false;
    handle(conn, WorkerReady, (p): WorkerSpec => {
      if (p.runId !== this.id || p.token !== this.token)
        throw new ResponseError(ErrorCodes.Unauthorized, 'wrong run token');
      if (ready) throw new ResponseError(ErrorCodes.Unauthorized, 'worker already reported ready');
      ready = true;
      if (this.isActive && !this.endCause) this.state = RunState.running(this.workerPid ?? p.pid);
      this.event('ready', `worker ready (version ${p.version})`);
      return {
        runId: this.id,
        runner: this.spec.flow.runner,
        flow: this.spec.flow,
        card: this.spec.card,
        workspace: this.workspace,
        command: this.spec.command,
        heartbeatIntervalMs: this.heartbeatIntervalMs,
        ...(this.artifactsDir ? { artifactsDir: this.artifactsDir } : {}),
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
      };
    });
    const onInvalid = (m: string): void => this.event('error', m);
    on(conn, WorkerHeartbeat, () => this.armHeartbeat(true), onInvalid);
    on(
      conn,
      WorkerLog,
      (p) => {
        this.armStall();
        this.event('log', p.message, { level: p.level, ...(p.data ?? {}) });
      },
      onInvalid,
    );
    on(
      conn,
      WorkerProgress,
      (p) => {
        this.armStall();
        this.event('progress', p.message, p.fraction !== undefined ? { fraction: p.fraction } : undefined);
      },
      onInvalid,
    );
    handle(conn, WorkerFinished, (p) => {
      if (!ready) throw new ResponseError(ErrorCodes.Unauthorized, 'worker finished before it was ready');
      this.finishedReport = p;
      this.event('finished', p.summary, { status: p.status, exitCode: p.exitCode });
      return {};
    });
    conn.listen();
  }

  private get heartbeatTimeoutMs(): number {
    return this.spec.flow.heartbeatTimeoutMs ?? DEFAULTS.heartbeatTimeoutMs;
  }

  /** Workers beat several times per timeout, so one late beat never kills a healthy worker. */
  private get heartbeatIntervalMs(): number {
    return Math.max(50, Math.min(DEFAULTS.heartbeatIntervalMs, Math.floor(this.heartbeatTimeoutMs / 4)));
  }

  private armHeartbeat(beat = false): void {
    if (beat) this.result.lastHeartbeat = new Date().toISOString();
    clearTimeout(this.heartbeatTimer);
    // Until its first heartbeat a worker is still starting (Node, the bundle, the sandbox): on a loaded
    // machine that can take longer than a tight heartbeat timeout, so it gets at least START_ALLOWANCE_MS.
    const timeout = this.result.lastHeartbeat
      ? this.heartbeatTimeoutMs
      : Math.max(this.heartbeatTimeoutMs, START_ALLOWANCE_MS);
    this.heartbeatTimer = setTimeout(() => {
      const last = this.result.lastHeartbeat
        ? `last heartbeat at ${this.result.lastHeartbeat}`
        : 'no heartbeat at all';
      this.stop(
        'heartbeat-timeout',
        `the worker sent no heartbeat for ${timeout} ms (${last}); it was killed as hung`,
        0,
      );
    }, timeout);
  }

  private onLogWriteFailed(file: string, err: NodeJS.ErrnoException): void {
    this.deps.log.error({ runId: this.id, file, err: err.message }, 'run log write failed');
    this.stop(
      'log-write-failed',
      `could not write ${path.basename(file)}: ${err.code ?? err.message} (${err.code === 'ENOSPC' ? 'the disk holding the run logs is full; free space and run again' : err.message}); the run was stopped so that no output is lost silently`,
      0,
    );
  }

  private writeMarker(jailPid: number): void {
    try {
      const file = path.join(this.deps.supervisorDir, 'active', this.id);
      writeFileSync(
        file,
        JSON.stringify({
          logDir: this.spec.logDir,
          jailPid,
          workerPid: this.workerPid,
          supervisorPid: process.pid,
          scratchDir: this.spec.scratchDir,
        }),
      );
    } catch (err) {
      this.deps.log.warn(
        { runId: this.id, err: (err as Error).message },
        'could not write the active-run marker',
      );
    }
  }

  private async onJailExit(_code: number | null, _signal: string | null): Promise<void> {
    // Let the output pipes drain into the files first: nothing the run printed is lost.
    await Promise.all([
      this.streamEnd(this.child?.stdout as Readable),
      this.streamEnd(this.child?.stderr as Readable),
      this.streamEnd(this.child?.stdio[4] as Readable | undefined),
    ]);
    const exit = this.jailExit;
    const rep = this.finishedReport;
    let status: Exclude<RunResult['status'], 'running'>;
    let reason: TerminationReason;
    let detail: string;
    if (this.endCause) {
      reason = this.endCause.reason;
      detail = this.endCause.detail;
      status = reason === 'cancelled' ? 'cancelled' : reason === 'timeout' ? 'timed-out' : 'failed';
    } else if (!exit || exit.code === 125 || exit.code === 126) {
      status = 'failed';
      reason =
        exit?.code === 125 || exit?.code === 126 || this.jailError.includes('sandbox')
          ? 'sandbox-failed'
          : 'spawn-failed';
      detail = this.jailError || `the run jail exited with ${_code ?? _signal}`;
    } else if (!rep) {
      status = 'failed';
      reason = 'crashed';
      detail = exit.signal
        ? `the worker was killed by ${signalName(exit.signal)} before it reported`
        : `the worker exited with code ${exit.code} before it reported`;
    } else if (exit.signal || exit.code !== 0) {
      status = 'failed';
      reason = 'crashed';
      detail = `the worker reported "${rep.status}" but then ${exit.signal ? `was killed by ${signalName(exit.signal)}` : `exited with code ${exit.code}`}`;
    } else if (rep.cancelledBy === 'person') {
      status = 'cancelled';
      reason = 'cancelled';
      detail = rep.summary;
    } else {
      status = rep.status;
      reason = 'finished';
      detail = rep.summary;
      if (status === 'failed' && this.denials.found.length > 0) {
        reason = 'sandbox-denial';
        detail = `${rep.summary}; the sandbox denied: ${this.denials.found.map((d) => d.path ?? d.line).join(', ')}`;
      }
    }
    if (exit) {
      this.result.bytesRead = exit.rchar;
      this.result.bytesWritten = exit.wchar;
      this.result.storageBytesRead = exit.readBytes;
      this.result.storageBytesWritten = exit.writeBytes;
      this.result.metrics = {
        ...this.result.metrics,
        cpuUserMs: exit.utimeMs,
        cpuSystemMs: exit.stimeMs,
        maxRssKb: exit.maxRssKb,
      };
      if (exit.signal) this.result.signal = signalName(exit.signal);
    }
    // The tool's exit code when the worker reported one (null: killed by a signal), else the worker's own.
    this.result.exitCode = rep ? rep.exitCode : (exit?.code ?? null);
    if (rep) {
      this.result.summary = rep.summary;
      if (rep.questions?.length) this.result.questions = rep.questions;
      this.result.metrics = { ...rep.metrics, ...this.result.metrics } as RunResult['metrics'];
    }
    await this.finish(status, reason, detail);
  }

  private streamEnd(s: Readable | undefined): Promise<void> {
    if (!s || s.readableEnded || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      s.once('end', resolve);
      s.once('close', resolve);
      s.once('error', () => resolve());
    });
  }

  private async finish(
    status: Exclude<RunResult['status'], 'running'>,
    reason: TerminationReason,
    detail: string,
  ): Promise<void> {
    if (this.state.kind === 'ended') return;
    this.state = RunState.ended(status, reason, detail);
    for (const t of this.timers) clearTimeout(t);
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.stallTimer);
    this.conn?.dispose();
    if (this.proxyGrant) this.deps.proxy?.revoke(this.proxyGrant.token);
    if (this.display) {
      // the live view's frame (a worker that was killed did not remove it): only the steps stay
      rmSync(path.join(this.artifactsDir!, 'live.jpg'), { force: true });
      const ms = await this.display.stop();
      this.event('log', `private display ${this.display.env.DISPLAY} torn down in ${Math.round(ms)} ms`, {
        kind: 'display-teardown',
        display: this.display.env.DISPLAY,
        teardownMs: Math.round(ms),
      });
      this.result.metrics = {
        ...this.result.metrics,
        displayStartMs: Math.round(this.display.startMs),
        displayTeardownMs: Math.round(ms),
      };
    }
    if (this.modelRequests)
      this.result.metrics = { ...this.result.metrics, modelRequests: this.modelRequests };
    // issue 6: what the run changed in its worktree becomes a commit on its branch and a diff summary.
    const wt = this.result.worktree;
    if (wt && wt.state === 'active') {
      try {
        wt.diff = await commitWorktree(
          wt,
          this.id,
          this.spec.card.title ?? path.basename(this.spec.card.path),
        );
        this.event(
          'log',
          `worktree diff: ${wt.diff.files.length} file(s), +${wt.diff.added} -${wt.diff.removed}`,
          {
            kind: 'diff',
            ...wt.diff,
          },
        );
      } catch (err) {
        this.event('error', `could not record the worktree's changes: ${(err as Error).message}`);
      }
    }
    const endedAt = Date.now();
    Object.assign(this.result, {
      status,
      termination: { reason, detail },
      endedAt: new Date(endedAt).toISOString(),
      durationMs: endedAt - this.startedAt,
      summary: this.result.summary || detail,
    });
    this.event('ended', `${status}: ${detail}`, { status, reason });
    await Promise.all([this.events.close(), this.stdout.close(), this.stderr.close()]);
    this.result.stdoutBytes = this.stdout.committed;
    this.result.stderrBytes = this.stderr.committed;
    if (this.stdout.dropped || this.stderr.dropped)
      this.result.metrics = {
        ...this.result.metrics,
        droppedOutputBytes: this.stdout.dropped + this.stderr.dropped,
      };
    try {
      this.resultFile.write(this.result);
    } catch (err) {
      this.deps.log.error({ runId: this.id, err: (err as Error).message }, 'could not write result.json');
    }
    try {
      unlinkSync(path.join(this.deps.supervisorDir, 'active', this.id));
    } catch {
      // no marker
    }
    // Scratch is gone before the run is reported ended (a client may look right away).
    await rm(this.spec.scratchDir, { recursive: true, force: true }).catch(() => undefined);
    this.filesFinal = true;
    this.signals.emit('final');
    this.deps.log.info({ runId: this.id, status, reason }, 'run ended');
    this.resolveEnded(this.result);
  }
}

/** Synchronous scratch cleanup for a run from a dead supervisor. */
export function removeScratch(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
