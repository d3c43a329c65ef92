/**
 * A run's jail: its command line and environment (from jail-args.ts, for this launch), its process
 * (the fds it is given), and what its status lines say about the sandbox, for the run's events.
 */
import { totalmem } from 'node:os';
import { mkdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { execa } from 'execa';
import {
  JAIL_CONTROL_FD,
  JAIL_ENV_FD,
  JAIL_OUTPUT_FDS,
  JAIL_WORKSPACE_FD,
  RunEnv,
  type FlowSpec,
} from '../protocol/index.ts';
import {
  buildJailArgs,
  buildRunEnv,
  projectFoldersToMake,
  projectReadOnly,
  runReadable,
  knownProjectsReadOnly,
  userDisplay,
  DEFAULT_TMP_SIZE,
  runMemoryBytes,
  serializeEnv,
} from './jail-args.ts';
import type { JailStatus } from './jail-status.ts';
import type { PrivateDisplay } from './displays.ts';
import type { LaunchSpec, RunDeps } from './run-deps.ts';

/** The jail's fds with the live-grant socket at JAIL_CONTROL_FD for a run with a worker (live-grant.ts). */
function withControl(stdio: (string | number)[], endpoint: boolean): (string | number)[] {
  while (stdio.length < JAIL_CONTROL_FD) stdio.push('ignore');
  stdio[JAIL_CONTROL_FD] = endpoint ? 'pipe' : 'ignore';
  return stdio;
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
    // run's environment, 6: the open workspace, 10: live-grant requests (a run with a worker).
    // (execa passes an fd number through at any index; its types admit one only for 0-2)
    stdio: withControl(
      [
        'ignore',
        'ignore',
        'ignore',
        endpoint ? 'pipe' : 'ignore',
        'pipe',
        'pipe',
        workspaceFd ?? 'ignore',
        ...outputFds,
      ],
      endpoint,
    ) as unknown as ['ignore', 'ignore', 'ignore', 'pipe', 'pipe', 'pipe', 'ignore'],
    buffer: false,
    reject: false,
    cleanup: false,
    encoding: 'buffer',
  });
}
export type JailProcess = ReturnType<typeof spawnJail>;

/** Starts the jail and hands it the run's environment (on JAIL_ENV_FD). Throws when it cannot start. */
export function startJail(
  file: string,
  j: JailCommand,
  cwd: string,
  workspaceFd: number | undefined,
  outputFds: number[],
  endpoint: boolean,
): JailProcess {
  const child = spawnJail(file, j.args, cwd, workspaceFd, outputFds, endpoint);
  const envPipe = (child.stdio as unknown as Writable[])[JAIL_ENV_FD]!;
  envPipe.on('error', () => undefined); // a jail that died early: its exit says why
  envPipe.end(serializeEnv(j.env));
  return child;
}

/** The path the jail will find (symlinks resolved), or the path itself when it does not exist. */
function realOrAsIs(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

export interface JailCommandInput {
  deps: RunDeps;
  spec: LaunchSpec;
  token: string;
  /** Where the run works (its worktree when it has one). */
  workspace: string;
  writable: string[];
  /** The command line the jail's init runs itself (a `command` run), else undefined: a worker runs. */
  direct: string[] | undefined;
  proxyPort: number | undefined;
  display: PrivateDisplay | undefined;
  xauthority: string | undefined;
  /** Whether the workspace goes to the jail open (JAIL_WORKSPACE_FD). */
  workspaceOpen: boolean;
}

export interface JailCommand {
  args: string[];
  env: Record<string, string>;
  /** What the run may read (its allow-list); undefined: everything but the hidden trees. */
  readable: string[] | undefined;
}

/** The jail's argv and the run's environment; makes the project's folders the run keeps read-only. */
export function jailCommand(i: JailCommandInput): JailCommand {
  const { deps, spec } = i;
  const { flow } = spec;
  const own = projectReadOnly(spec.card, flow);
  for (const d of projectFoldersToMake(own)) mkdirSync(d, { recursive: true, mode: 0o700 });
  const readOnly = [...own, ...knownProjectsReadOnly(deps.knownProjects?.() ?? [], i.writable, spec.card)];
  const display = i.display ? undefined : userDisplay(flow);
  const readable = deps.readTrees?.length
    ? runReadable({
        base: deps.readTrees,
        flow,
        workspace: i.workspace,
        card: spec.card,
        privateDisplay: !!i.display,
        userDisplay: display,
        userRuntimeDir: deps.baseEnv.XDG_RUNTIME_DIR,
        userHome: deps.baseEnv.HOME,
      })
    : undefined;
  const args = buildJailArgs({
    flow,
    workspace: i.workspace,
    writable: i.writable,
    hiddenPaths: deps.hiddenPaths,
    blanked: deps.blanked?.(),
    workerArgv: i.direct ?? deps.workerArgv,
    init: i.direct !== undefined,
    parentPid: process.pid,
    landlockAbi: deps.landlockAbi,
    useNamespaces: deps.useNamespaces,
    proxyPort: i.proxyPort,
    privateDisplay: i.display?.env.DISPLAY,
    userDisplay: display,
    readable,
    userRuntimeDir: deps.baseEnv.XDG_RUNTIME_DIR,
    privateTmpSize: flow.sandbox?.tmpSize ?? DEFAULT_TMP_SIZE,
    memoryBytes: runMemoryBytes(flow, totalmem()),
    readOnly: readOnly.map(realOrAsIs),
    workspaceFd: i.workspaceOpen ? JAIL_WORKSPACE_FD : undefined,
    outputFds: [...JAIL_OUTPUT_FDS],
    ...(i.direct === undefined ? { controlFd: JAIL_CONTROL_FD } : {}),
  });
  const env: Record<string, string> = buildRunEnv({
    flow,
    baseEnv: deps.baseEnv,
    runId: spec.runId,
    token: i.token,
    workspace: i.workspace,
    scratchDir: spec.scratchDir,
    nativeDir: path.dirname(deps.jailPath),
    displayEnv: i.display?.env,
    path: readable ? deps.runPath : undefined,
    xauthority: i.xauthority,
  });
  if (i.direct) delete env[RunEnv.token]; // no endpoint to prove anything to
  return { args, env, readable };
}

type Started = Extract<JailStatus, { event: 'started' }>;
type Sandbox = Extract<JailStatus, { event: 'sandbox' }>;

/** The warning for a run whose memory limit the jail could not enforce, or undefined. */
export function memoryLimitOff(s: Started): string | undefined {
  return s.memoryBytes && s.memoryLimit !== 'cgroup'
    ? `this run has no memory limit: the jail could make no memory cgroup (${s.memoryError || 'unknown'}); sandbox.memory is not enforced on this machine`
    : undefined;
}

/** The run's `sandbox` event: how the jail confined it. */
export function sandboxLine(s: Sandbox): string {
  return s.fs === 'mounts'
    ? `filesystem confined by mounts (the agent's own sandbox runs inside)${s.landlockAbi ? `, Landlock ABI ${s.landlockAbi} for network and scopes` : ''}`
    : s.enforced
      ? `Landlock ABI ${s.landlockAbi} enforced`
      : 'running unsandboxed (allowed by the flow)';
}

/** The warning for a codex run that asked for its own sandbox where none can be had, or undefined. */
export function agentSandboxOff(flow: FlowSpec, s: Sandbox, useNamespaces: boolean): string | undefined {
  return flow.runner === 'codex' && flow.sandbox?.agentSandbox === 'auto' && s.fs !== 'mounts'
    ? `codex runs without its own sandbox: this machine gives runs no user namespaces${useNamespaces ? '' : ' (RUNBOARD_NAMESPACES=off)'}; the jail alone confines it`
    : undefined;
}

/** Resolves when the stream (the jail's status lines) ended, or at once when it has or there is none. */
export function streamEnd(s: Readable | undefined): Promise<void> {
  if (!s || s.readableEnded || s.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    s.once('end', resolve);
    s.once('close', resolve);
    s.once('error', () => resolve());
  });
}

/**
 * Kills a run now. The worker is the init of the run's PID namespace: killing it kills every process of
 * the run, and the jail's wait for it returns only when they are all gone. So the jail is left to report
 * (and the run counts as ended only then); it is killed itself only if it does not, 2 s later (the
 * timer returned, cleared when the run ends).
 */
export function killRun(
  workerPid: number | null,
  child: JailProcess | undefined,
): NodeJS.Timeout | undefined {
  if (workerPid) {
    try {
      process.kill(workerPid, 'SIGKILL');
    } catch {
      // already gone
    }
    return setTimeout(() => child?.kill('SIGKILL'), 2000);
  }
  child?.kill('SIGKILL'); // no worker yet; the jail's parent-death signal covers a late fork
  return undefined;
}
