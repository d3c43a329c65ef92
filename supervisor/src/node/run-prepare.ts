/**
 * The steps of a run before its jail starts, after preflight (run-preflight.ts) and the crash marker:
 * the worktree, the private display, the model and vision routes, a replay's secrets, the run's
 * folders and output files, the agent session it continues. Run.prepare (run.ts) calls them in turn;
 * each ends the run when it fails, undoes what it made when the run was cancelled meanwhile, and
 * leaves what it made in the run's `made` (the run keeps it: its jail, worker spec and end use it).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import {
  ARTIFACTS_DIR,
  type FlowSpec,
  type RunEvent,
  type RunResult,
  type TerminationReason,
  type WorkspaceCopy,
  type WorktreeInfo,
} from '../protocol/index.ts';
import { restoreSession, type AgentCli } from './agent-session.ts';
import { startPrivateDisplay, type PrivateDisplay } from './displays.ts';
import { SCRATCH_DIRS, userDisplay } from './jail-args.ts';
import { runnerApis, type ModelRequestInfo, type ProxyGrant, type VisionGrant } from './model-proxy.ts';
import type { JailOutput } from './output-files.ts';
import type { PreflightEnv } from './run-preflight.ts';
import type { LaunchSpec, RunDeps } from './run-deps.ts';
import type { ProxyTaps } from './proxy-debug.ts';
import { createWorktree, discardWorktree } from './worktrees.ts';
import { gatherJudgeInput } from './judge-input.ts';
import { createCopy, discardCopy } from './workspace-copy.ts';

/** What the steps made, kept by the run. */
export interface Prepared {
  /** Where the run works: its worktree when the flow asks for one. */
  workspace: string;
  /** The run's private virtual display (flow computerUse.privateDisplay). */
  display?: PrivateDisplay;
  proxyGrant?: ProxyGrant;
  visionGrant?: VisionGrant;
  /** A replay card's sensitive parameter values, for the worker's spec (never written anywhere). */
  paramSecrets?: Record<string, string>;
  /** The cookie file of the person's display made for this run (a user-display run). */
  xauthority?: string;
  /** This run continues an earlier run's agent session (restored into its HOME). */
  resumed: boolean;
}

/** What a step sees of the run (Run.preparing, run.ts). */
export interface Preparing {
  readonly id: string;
  readonly deps: RunDeps;
  readonly spec: LaunchSpec;
  readonly result: RunResult;
  readonly made: Prepared;
  /** What the supervisor knows of model providers and keys (as preflight saw it). */
  readonly env: PreflightEnv;
  /** The crash marker's first write (awaited with the run's folders). */
  readonly marked: Promise<unknown>;
  readonly artifactsDir: string | undefined;
  readonly output: JailOutput;
  isActive(): boolean;
  /** The run is ending (or ended) before it started: a step does not go on. */
  stopping(): boolean;
  event(type: RunEvent['type'], message: string, data?: Record<string, unknown>): void;
  /** Ends the run, failed. */
  fail(reason: TerminationReason, detail: string): Promise<void>;
  onModelRequest(info: ModelRequestInfo): void;
  /** The run's tally of model tokens and cost, its budget and debug log: the proxy fills them. */
  readonly taps?: ProxyTaps;
  /** The run's workspace moved (to its worktree): what was made for the old one is made again. */
  moved(): void;
}

const ARTIFACT_RUNNERS: ReadonlySet<string> = new Set([
  'computer-use',
  'reflect',
  'replay',
  'extract',
  'judge',
]);

/**
 * Runs that make files for the person write them into `<logDir>/artifacts`: computer-use (screenshots,
 * report.md), reflect and replay (the workflow, schema.json, that the host installs in the card),
 * extract (task.md, the model's answer, which the host gates before it writes the card).
 */
export function artifactsDirOf(flow: FlowSpec, logDir: string): string | undefined {
  return ARTIFACT_RUNNERS.has(flow.runner) ? path.join(logDir, ARTIFACTS_DIR) : undefined;
}

/** The run's log line (and its data) for a request through its model route (`n`: the run's how many). */
export function modelRequestLine(
  info: ModelRequestInfo,
  n: number,
): [message: string, data: Record<string, unknown>] {
  return [
    `model request ${info.method} ${info.path} → ${info.status ?? info.error}${info.rateLimitedUntil ? ` (rate limited until ${info.rateLimitedUntil})` : ''}`,
    {
      kind: 'model-request',
      provider: info.provider,
      path: info.path,
      status: info.status ?? null,
      error: info.error ?? null,
      ...(info.rateLimitedUntil ? { rateLimitedUntil: info.rateLimitedUntil } : {}),
      at: info.at,
      n,
    },
  ];
}

/** What preflight and the vision step know of the kernel, the model providers and their keys. */
export function preflightEnv(deps: RunDeps): PreflightEnv {
  return {
    landlockAbi: deps.landlockAbi,
    landlockReason: deps.landlockReason,
    useNamespaces: deps.useNamespaces,
    knowsProvider: (p) => !!deps.proxy?.route(p),
    hasKey: (p) => !!deps.hasKey?.(p),
    missingKeyGuidance: deps.missingKeyGuidance,
  };
}

/** The agent CLI of a runner whose sessions are kept across an ask, if any. */
export const agentCli = (runner: string): AgentCli | undefined =>
  runner === 'claude' || runner === 'codex' ? runner : undefined;

/** The run's log line for its new worktree. */
export function worktreeLine(info: WorktreeInfo): string {
  return `worktree ${info.path} on branch ${info.branch} (from ${info.baseCommit.slice(0, 12)})`;
}

type ComputerUse = NonNullable<FlowSpec['computerUse']>;

/** A private display (Xvfb + D-Bus + AT-SPI + WM, and the flow's app) for the run, before the worker. */
export function startRunDisplay(
  deps: RunDeps,
  scratchDir: string,
  cu: ComputerUse,
  workspace?: string,
): Promise<PrivateDisplay> {
  for (const d of ['home', 'tmp']) mkdirSync(path.join(scratchDir, d), { recursive: true, mode: 0o700 });
  return startPrivateDisplay({
    jailPath: deps.jailPath,
    useNamespaces: deps.useNamespaces,
    dir: path.join(scratchDir, 'display'),
    size: cu.displaySize,
    app: cu.app,
    baseEnv: deps.baseEnv,
    appEnv: { HOME: path.join(scratchDir, 'home'), TMPDIR: path.join(scratchDir, 'tmp') },
    confine: deps.landlockAbi > 0 ? { hidden: deps.hiddenPaths } : null,
    setup: cu.setup,
    setupCwd: workspace,
  });
}

/** The run's log line (and its data) for a private display that started. */
export function displayLine(
  d: PrivateDisplay,
  cu: ComputerUse,
): [message: string, data: Record<string, unknown>] {
  return [
    `private display ${d.env.DISPLAY} started in ${Math.round(d.startMs)} ms`,
    { kind: 'display', display: d.env.DISPLAY, startMs: Math.round(d.startMs), app: cu.app ?? null },
  ];
}

export type VisionPlan =
  | { kind: 'none' }
  /** A provider the proxy knows, with no key: said before the run starts, not as a 401 at first use. */
  | { kind: 'no-key'; message: string; provider: string }
  | { kind: 'grant'; vision: NonNullable<FlowSpec['vision']> };

/**
 * Whether the run gets analyze_media's route to its vision profile's provider (`proxy`: what the
 * supervisor's model proxy knows; undefined when there is none).
 */
export function visionPlan(flow: FlowSpec, proxy: PreflightEnv | undefined): VisionPlan {
  const vision = flow.vision && flow.documents !== false ? flow.vision : undefined;
  if (!vision || !proxy) return { kind: 'none' };
  const p = vision.provider;
  if (proxy.knowsProvider(p) && !proxy.hasKey(p)) {
    const how = proxy.missingKeyGuidance?.(p) ?? `no API key for provider "${p}"`;
    return {
      kind: 'no-key',
      provider: p,
      message: `no vision route for this run (vision profile "${vision.profile}"): ${how}; analyze_media says so when it is used`,
    };
  }
  return { kind: 'grant', vision };
}

/**
 * The run's folders, made off the event loop (a mkdir on a busy disk takes a millisecond or more, and
 * every launch and attached client of the supervisor would wait for it); `also`: awaited with them.
 */
export async function makeRunFolders(
  scratchDir: string,
  artifactsDir: string | undefined,
  also: Promise<unknown>,
): Promise<void> {
  await mkdir(scratchDir, { recursive: true, mode: 0o700 });
  await Promise.all([
    ...SCRATCH_DIRS.map((d) => mkdir(path.join(scratchDir, d), { recursive: true, mode: 0o700 })),
    ...(artifactsDir ? [mkdir(artifactsDir, { recursive: true, mode: 0o700 })] : []),
    also,
  ]);
}

/** Why the run ends when its output files could not be made (`err`: the error opening them). */
export function outputFilesRefusal(err: unknown, logDir: string): string {
  const e = err as NodeJS.ErrnoException;
  return `could not create the run's output files in ${logDir}: ${e.code ?? e.message}${e.code === 'ENOSPC' ? ' (the disk holding the run logs is full; free space and run again)' : ''}`;
}

/**
 * The person's display's cookie alone, extracted (`xauth extract`) from their authority file into the
 * run's scratch dir: the run never reads the person's .Xauthority. undefined when there is none to
 * take (a display without cookies needs none; the run's X clients then try without); `warn`: why not.
 */
export async function displayCookie(
  baseEnv: NodeJS.ProcessEnv,
  scratchDir: string,
  display: string,
  warn: (message: string) => void,
): Promise<string | undefined> {
  const source = baseEnv.XAUTHORITY || (baseEnv.HOME ? path.join(baseEnv.HOME, '.Xauthority') : undefined);
  if (!source) return undefined;
  const file = path.join(scratchDir, 'xauthority');
  try {
    await execa('xauth', ['-f', source, 'extract', file, display], {
      env: { PATH: baseEnv.PATH ?? '' },
      timeout: 10_000,
    });
  } catch (err) {
    warn(`no cookie for display ${display}: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
  return existsSync(file) ? file : undefined;
}

/** Takes back the run's model routes (a run cancelled before its jail started). */
function revokeGrants(run: Preparing): void {
  for (const g of [run.made.proxyGrant, run.made.visionGrant]) if (g) run.deps.proxy?.revoke(g.token);
}

export async function makeWorktree(run: Preparing): Promise<boolean> {
  if (run.spec.flow.copyWorkspace) return makeCopy(run, run.spec.flow.copyWorkspace.maxBytes);
  if (!run.spec.flow.worktree) return true;
  let wt: Awaited<ReturnType<typeof createWorktree>>;
  try {
    wt = await createWorktree(run.spec.workspace, run.spec.grantPath ?? run.spec.workspace, run.id);
  } catch (err) {
    await run.fail('worktree-failed', `could not create the run's worktree: ${(err as Error).message}`);
    return false;
  }
  if (!run.isActive()) {
    // Cancelled while the worktree was being made: nothing ran in it, so it goes.
    void discardWorktree(wt.info).catch(() => undefined);
    return false;
  }
  run.result.worktree = wt.info;
  run.made.workspace = wt.workspace;
  run.result.workspace = wt.workspace;
  run.moved();
  run.event('log', worktreeLine(wt.info), { kind: 'worktree', ...wt.info });
  return true;
}

/** The run's copy of its workspace (flow `copyWorkspace`: workspace-copy.ts), under the supervisor's folder. */
async function makeCopy(run: Preparing, maxBytes: number): Promise<boolean> {
  let copy: WorkspaceCopy;
  try {
    copy = await createCopy(
      run.spec.workspace,
      path.join(run.deps.supervisorDir, 'copies', run.id),
      maxBytes,
      run.deps.hiddenPaths,
    );
  } catch (err) {
    await run.fail('worktree-failed', `could not copy the run's workspace: ${(err as Error).message}`);
    return false;
  }
  if (!run.isActive()) {
    void discardCopy(copy).catch(() => undefined); // cancelled meanwhile: nothing ran in it
    return false;
  }
  run.result.copy = copy;
  run.made.workspace = copy.path;
  run.result.workspace = copy.path;
  run.moved();
  run.event(
    'log',
    `workspace ${copy.source} copied to ${copy.path} (${copy.files} files, ${copy.bytes} bytes)`,
    {
      kind: 'copy',
      ...copy,
    },
  );
  return true;
}

export async function startDisplay(run: Preparing): Promise<boolean> {
  const cu = run.spec.flow.computerUse;
  if (!cu?.privateDisplay) return true;
  let d: PrivateDisplay;
  try {
    d = await startRunDisplay(run.deps, run.spec.scratchDir, cu, run.made.workspace);
  } catch (err) {
    await run.fail('spawn-failed', `could not start the run's private display: ${(err as Error).message}`);
    return false;
  }
  if (run.stopping()) {
    void d.stop(); // cancelled while the display was starting: nothing ran on it
    return false;
  }
  run.made.display = d;
  run.event('log', ...displayLine(d, cu));
  return true;
}

export async function grantModel(run: Preparing): Promise<boolean> {
  const { flow } = run.spec;
  const proxy = run.deps.proxy;
  if (!flow.provider || !proxy) return true;
  try {
    run.made.proxyGrant = await proxy.grant(
      run.id,
      flow.provider,
      (info) => run.onModelRequest(info),
      {
        runner: flow.runner,
        apis: runnerApis(flow),
      },
      run.taps,
    );
  } catch (err) {
    await run.fail('spawn-failed', `could not open the run's model proxy: ${(err as Error).message}`);
    return false;
  }
  if (run.stopping()) {
    proxy.revoke(run.made.proxyGrant.token); // cancelled meanwhile: nothing uses it
    return false;
  }
  return true;
}

export async function grantVision(run: Preparing): Promise<boolean> {
  const proxy = run.deps.proxy;
  const plan = visionPlan(run.spec.flow, proxy ? run.env : undefined);
  if (plan.kind === 'no-key')
    run.event('log', plan.message, { kind: 'vision', reason: 'no-key', provider: plan.provider });
  if (plan.kind !== 'grant' || !proxy) return true;
  // analyze_media's route to the vision profile's provider, on the run's own listener
  try {
    run.made.visionGrant = await proxy.grantVision(
      run.id,
      plan.vision,
      run.made.proxyGrant,
      (info) => run.onModelRequest(info),
      run.taps,
    );
  } catch (err) {
    run.event('log', `no vision route for this run: ${(err as Error).message}`, { kind: 'vision' });
  }
  if (run.stopping()) {
    revokeGrants(run);
    return false;
  }
  return true;
}

export async function loadParamSecrets(run: Preparing): Promise<boolean> {
  if (run.spec.flow.runner !== 'replay' || !run.deps.paramSecrets) return true;
  // handed to the worker in its spec (memory only), never written to the run's folder
  run.made.paramSecrets = await run.deps.paramSecrets(run.spec.card.path);
  if (run.stopping()) {
    revokeGrants(run);
    return false;
  }
  return true;
}

/** A judge run: the attempts it judges, copied into its artifacts folder (judge-input.ts). */
export async function gatherJudged(run: Preparing): Promise<boolean> {
  const runs = run.spec.flow.judge?.runs;
  if (!runs || !run.artifactsDir) return true;
  const logsDir = path.dirname(path.dirname(run.spec.logDir)); // <logs>/<yyyymmdd>/<run id>
  try {
    await gatherJudgeInput(
      runs,
      (id) => path.join(logsDir, id.slice(0, 8), id),
      run.spec.card.path,
      run.artifactsDir,
    );
  } catch (err) {
    revokeGrants(run);
    await run.fail('spawn-failed', `could not gather the attempts to judge: ${(err as Error).message}`);
    return false;
  }
  return true;
}

/** The run's folders and output files (the jail gets them open), and the display's cookie. */
export async function makeFolders(run: Preparing): Promise<boolean> {
  const outputFiles = run.output.open();
  outputFiles.catch(() => undefined); // looked at below, after the folders
  await makeRunFolders(run.spec.scratchDir, run.artifactsDir, run.marked);
  const display = run.made.display ? undefined : userDisplay(run.spec.flow);
  if (display)
    run.made.xauthority = await displayCookie(run.deps.baseEnv, run.spec.scratchDir, display, (m) =>
      run.event('log', m, { kind: 'display', level: 'warn' }),
    );
  try {
    await outputFiles;
  } catch (err) {
    revokeGrants(run);
    if (!run.stopping()) await run.fail('log-write-failed', outputFilesRefusal(err, run.spec.logDir));
    return false;
  }
  return true;
}

/** Continues the agent session an earlier run of the card kept at an ask the person allowed. */
export async function resumeSession(run: Preparing): Promise<boolean> {
  const from = run.spec.resumeFrom;
  const cli = agentCli(run.spec.flow.runner);
  if (from && cli)
    await restoreSession(cli, from.logDir, from.session, run.spec.scratchDir, run.made.workspace).then(
      () => {
        run.made.resumed = true;
        run.result.session = { cli, id: from.session, resumed: true };
        run.event('log', `continuing agent session ${from.session} (the person allowed what it asked)`, {
          kind: 'resume',
          session: from.session,
        });
      },
      (err: unknown) =>
        run.event(
          'log',
          `the agent starts afresh: its session could not be restored (${(err as Error).message})`,
          {
            kind: 'resume-failed',
            level: 'warn',
          },
        ),
    );
  if (run.stopping()) {
    revokeGrants(run);
    return false;
  }
  return true;
}
