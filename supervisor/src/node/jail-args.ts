/**
 * Pure builders of what a run's jail is started with: its command line and the run's environment.
 * They take plain data and return plain arrays/objects, so what reaches `runboard-jail` (and so the
 * run) can be read and tested in one place.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  drivesDesktop,
  JAIL_ENV_FD,
  JAIL_STATUS_FD,
  memorySizeBytes,
  RunEnv,
  type CardRef,
  type FlowSpec,
} from '../protocol/index.ts';

/** Processes (threads count) a run may have at once unless its flow says otherwise. */
export const DEFAULT_MAX_PROCESSES = 1024;
/**
 * The most a run's own /tmp (a tmpfs, so memory) holds when its flow names no sandbox.tmpSize: room for
 * what tools put there (sockets, locks, small files); larger files belong in $TMPDIR, on disk. Its pages
 * count in the run's memory limit too.
 */
export const DEFAULT_TMP_SIZE = '1g';
/**
 * The most memory a run's processes use together when its flow names no sandbox.memory: half the
 * machine's, so one run (a leak, a bomb, a build gone wrong) cannot take the person's session with it,
 * and a build or a browser still has room. docs/security-model.md (Resources).
 */
export const DEFAULT_MEMORY = '50%';

/** The run's memory limit in bytes (the flow's sandbox.memory, else DEFAULT_MEMORY; `totalBytes`: the machine's). */
export function runMemoryBytes(flow: FlowSpec, totalBytes: number): number {
  return memorySizeBytes(flow.sandbox?.memory ?? DEFAULT_MEMORY, totalBytes) ?? 0;
}

/** NAME=VALUE entries, NUL-separated, as the jail reads them from JAIL_ENV_FD. */
export function serializeEnv(env: Readonly<Record<string, string>>): Buffer {
  return Buffer.from(
    Object.entries(env)
      .map(([k, v]) => `${k}=${v}\0`)
      .join(''),
  );
}

export interface WritableInput {
  flow: FlowSpec;
  workspace: string;
  scratchDir: string;
  artifactsDir?: string | undefined;
}

/** Trees the run may write: its workspace (unless the flow is read-only), its scratch dir, the flow's extras. */
export function runWritable({ flow, workspace, scratchDir, artifactsDir }: WritableInput): string[] {
  return [
    ...(flow.readOnly ? [] : [workspace]),
    scratchDir,
    ...(artifactsDir ? [artifactsDir] : []),
    ...(flow.sandbox?.writable ?? []),
  ];
}

export interface JailArgsInput {
  flow: FlowSpec;
  /** The run's workspace (its worktree when it has one). */
  workspace: string;
  /** From runWritable(). */
  writable: string[];
  /** Trees no run may read. */
  hiddenPaths: string[];
  /** Root-only files in the readable trees, covered in the run's mount namespace (rootOnlyEntries). */
  blanked?: string[] | undefined;
  /** The command line that starts a worker; with `init`, the run's own command. */
  workerArgv: string[];
  /** The run's command needs no worker: the jail's own init starts it (`--init`, the `command` runner). */
  init?: boolean | undefined;
  /** The supervisor's pid: the jail dies with it. */
  parentPid: number;
  landlockAbi: number;
  useNamespaces: boolean;
  /** The model proxy's port, when the run was given a proxy token. */
  proxyPort?: number | undefined;
  /** The run's private display (":N"), when it has one. */
  privateDisplay?: string | undefined;
  /** The person's display (":N") a desktop flow without a private one drives (userDisplay()). */
  userDisplay?: string | undefined;
  /**
   * The trees the run may read (an allow-list, each `--read`): the system's, Runboard's install, the
   * run's own (runReadable()). Nothing else is readable but the writable trees.
   */
  readable?: string[] | undefined;
  /** The user's XDG_RUNTIME_DIR (session bus, AT-SPI bus, Wayland). */
  userRuntimeDir?: string | undefined;
  /**
   * Where the jail makes a mount namespace the run gets a /tmp of its own, a tmpfs of at most this
   * (tmpfs's size=; the flow's sandbox.tmpSize, DEFAULT_TMP_SIZE when it names none).
   */
  privateTmpSize?: string | undefined;
  /** Paths inside the writable trees that stay read-only (projectReadOnly()). */
  readOnly?: string[] | undefined;
  /** The run's memory limit, bytes (runMemoryBytes()); 0: none. */
  memoryBytes?: number | undefined;
  /** The jail's fd of the open, checked workspace (workspace-fd.ts): its write rule comes from it. */
  workspaceFd?: number | undefined;
  /** The jail's fds of the run's stdout.log, stderr.log and output.order: it moves the output into them. */
  outputFds?: number[] | undefined;
  /** The jail's fd of the supervisor's live-grant requests (live-grant.ts): the run gets grant slots. */
  controlFd?: number | undefined;
}

/**
 * What of the card's project stays read-only to the run even when the project folder is (or contains)
 * its workspace: a run that could edit config.yaml or queue a card would widen its own sandbox.
 * The project is the card's `project`, else the folder around a card in `cards/`.
 */
export function projectReadOnly(card: CardRef, flow: FlowSpec): string[] {
  if (flow.sandbox?.projectWritable) return [];
  const project = projectOf(card);
  return project ? PROJECT_OWNED.map((n) => path.join(project, n)) : [];
}

/** The card's project folder: its `project`, else the folder around a card in `cards/`. */
export function projectOf(card: CardRef): string | undefined {
  const cardsDir = path.dirname(card.path);
  return card.project ?? (path.basename(cardsDir) === 'cards' ? path.dirname(cardsDir) : undefined);
}

/**
 * The same of every other project the supervisor knows (`projects`, from the schedule book) that lies
 * inside the run's writable trees (issue 27): a run whose workspace holds another project cannot plant
 * cards or flows there. (The board also keeps what a person confirmed: host/src/core/board-store.ts.)
 */
export function knownProjectsReadOnly(projects: string[], writable: string[], card: CardRef): string[] {
  const own = projectOf(card); // its own project is projectReadOnly's (sandbox.projectWritable)
  const dirs = writable.map((w) => w.replace(/\/+$/, '') || '/');
  const inside = (p: string): boolean => dirs.some((d) => p === d || p.startsWith(d === '/' ? '/' : `${d}/`));
  return [...new Set(projects)]
    .filter((p) => p !== own && inside(p))
    .flatMap((p) => PROJECT_OWNED.map((n) => path.join(p, n)));
}

/**
 * What the host alone writes in a project: its config, the cards (and their workflows), and the
 * recordings, which the host lists, serves and hands to extract and reflect runs as a person's own.
 */
const PROJECT_OWNED = ['config.yaml', 'cards', 'recordings'];

/**
 * The read-only folders that must exist before the jail starts: a missing read-only path is skipped,
 * and a run could then make it and fill it (a planted recording). Only in an existing project folder.
 */
export function projectFoldersToMake(readOnly: string[]): string[] {
  return readOnly.filter((p) => path.basename(p) === 'recordings' && existsSync(path.dirname(p)));
}

/**
 * The person's own display (":N") when the flow drives a desktop (runner computer-use or replay, or
 * `desktop: true`), has no private display, and names the display in its env: the only runs that get
 * the X socket folder, a cookie and the user's runtime dir (session bus, AT-SPI). Others get none.
 */
export function userDisplay(flow: FlowSpec): string | undefined {
  if (!(drivesDesktop(flow.runner) || flow.desktop) || flow.computerUse?.privateDisplay) return undefined;
  const m = /^:(\d+)(?:\.\d+)?$/.exec(flow.env?.DISPLAY ?? '');
  return m ? `:${m[1]}` : undefined;
}

export interface ReadableInput {
  /** The system's trees and Runboard's install (reads.ts), the same for every run. */
  base: readonly string[];
  flow: FlowSpec;
  workspace: string;
  card: CardRef;
  /** The run's display kind: its X socket folder (masked to its own socket) and the person's runtime dir. */
  privateDisplay?: boolean;
  /** The person's display (":N", userDisplay()) the run drives: what it needs of their runtime folder. */
  userDisplay?: string | undefined;
  /** The person's XDG_RUNTIME_DIR (a user-display run's session bus and AT-SPI bus). */
  userRuntimeDir?: string | undefined;
  /** The person's HOME: AT-SPI's bus socket is in ~/.cache/at-spi where there is no runtime dir. */
  userHome?: string | undefined;
}

/**
 * What a run on the person's display `display` (":N", or ":N.S" as the flow's DISPLAY names it) may
 * reach of their runtime folder `runtime`, an allow-list of entries (decision 122):
 * - the session bus (`buses`, the flow's DBUS_SESSION_BUS_ADDRESS; when it names none, the folder's
 *   `bus`, where systemd puts it and where libdbus and GDBus look);
 * - the display's AT-SPI bus (`at-spi/bus_N`: at-spi-bus-launcher names it by its own DISPLAY after the
 *   colon, screen included, so `bus_N.S` too when the flow names a screen; in `~/.cache/at-spi` where
 *   the launcher had no runtime folder);
 * - the spread budget's folder `runboard-atspi/` (read-only: decision 108).
 * Nothing else there: read-only does not stop connect() on a pathname socket, and the folder holds the
 * systemd user manager, agents (gpg, ssh), a rootless Docker or Podman socket, keyrings, other sessions'
 * buses. The apps' own AT-SPI sockets (`at-spi2-socket-<pid>`) are left out too: a run cannot write the
 * budget, so it never opens one (its reads go over the bus either way; docs/bench-desktop.md).
 */
export function userRuntimeReadable(
  runtime: string | undefined,
  display: string,
  buses: string[],
  home: string | undefined,
): string[] {
  const n = display.slice(1);
  const names = [...new Set([`bus_${n.replace(/\.\d+$/, '')}`, `bus_${n}`])];
  const inRuntime = runtime && path.isAbsolute(runtime) ? runtime : undefined;
  return [
    ...(inRuntime
      ? [
          ...(buses.length ? [] : [path.join(inRuntime, 'bus')]),
          ...names.map((b) => path.join(inRuntime, 'at-spi', b)),
          path.join(inRuntime, 'runboard-atspi'),
        ]
      : []),
    ...buses.filter((b) => path.isAbsolute(b)),
    ...(home && path.isAbsolute(home) ? names.map((b) => path.join(home, '.cache', 'at-spi', b)) : []),
  ];
}

/**
 * What a run may read besides its writable trees: the system and install trees, its workspace (read-only
 * flows too), its card (and the card's folder), its prompt, a reflect run's project recordings, the
 * flow's `sandbox.read`, and a desktop flow's display channels.
 */
export function runReadable(i: ReadableInput): string[] {
  const { flow } = i;
  const runtime = i.userDisplay ? (flow.env?.XDG_RUNTIME_DIR ?? i.userRuntimeDir) : undefined;
  // the session bus the flow names (`unix:path=/…/bus`), for AT-SPI
  const buses = i.userDisplay
    ? [...(flow.env?.DBUS_SESSION_BUS_ADDRESS ?? '').matchAll(/(?:^|[,;:])path=([^,;]+)/g)].map((m) => m[1]!)
    : [];
  // a reflect run reads the recording its card names, in its project's recordings/
  const project = i.card.project ?? path.dirname(path.dirname(i.card.path));
  return [
    ...i.base,
    i.workspace,
    i.card.path,
    // the card's own folder (its workflow, schema.json, which replay runs follow)
    i.card.path.replace(/\.md$/i, ''),
    ...(flow.runner === 'reflect' ? [path.join(project, 'recordings')] : []),
    ...(flow.prompt ? [flow.prompt] : []),
    ...(flow.sandbox?.read ?? []),
    ...(i.privateDisplay || i.userDisplay ? ['/tmp/.X11-unix'] : []),
    ...(i.userDisplay
      ? userRuntimeReadable(runtime, flow.env?.DISPLAY ?? i.userDisplay, buses, i.userHome)
      : []),
  ];
}

/**
 * A run on its own display must not reach the user's: Landlock does not govern connect() on pathname
 * Unix sockets, so the jail masks the X socket dir (keeping the run's own socket) and the user's runtime
 * dir (session bus, AT-SPI bus, Wayland) with empty read-only mounts.
 */
export function displayMasks(
  display: string,
  userRuntimeDir: string | undefined,
  writable: string[],
  workspace: string,
): string[] {
  const args = ['--mask', '/tmp/.X11-unix', '--keep', `/tmp/.X11-unix/X${display.slice(1)}`];
  const runtime = userRuntimeDir;
  const inside = (p: string): boolean => !!runtime && (p + '/').startsWith(runtime.replace(/\/?$/, '/'));
  if (runtime && path.isAbsolute(runtime) && !writable.some(inside) && !inside(workspace))
    args.push('--mask', runtime);
  return args;
}

/**
 * The machine's sockets every run may connect to in the subreaper fallback, where the jail makes a run's
 * connections itself (decision 133): name lookups that read only what the files would give (nscd's
 * cache of passwd, group and hosts) and systemd-resolved's varlink socket, which `nss-resolve` asks for
 * host names (a run with `sandbox.tcpPorts` reaches hosts by name through it, without UDP). Not the
 * journal or syslog (`/dev/log`: a run's output is its log, and it would write as the person), not the
 * system bus. With namespaces these are not needed: the jail's mounts hide nothing of /run's that a run
 * reaches (its read allow-list does not include /run).
 */
export const SYSTEM_SOCKETS = ['/run/nscd/socket', '/run/systemd/resolve/io.systemd.Resolve'] as const;

/** The jail's argv (without the jail's own path): its options, `--`, then the worker's command line. */
export function buildJailArgs(i: JailArgsInput): string[] {
  const { flow } = i;
  const args = ['--status-fd', String(JAIL_STATUS_FD), '--parent-pid', String(i.parentPid)];
  args.push('--env-fd', String(JAIL_ENV_FD));
  if (i.outputFds) args.push('--output-fds', i.outputFds.join(','));
  if (i.controlFd !== undefined) args.push('--control-fd', String(i.controlFd));
  args.push('--max-procs', String(flow.sandbox?.maxProcesses ?? DEFAULT_MAX_PROCESSES));
  if (i.memoryBytes) args.push('--memory', String(i.memoryBytes));
  for (const w of i.writable) {
    if (i.workspaceFd !== undefined && w === i.workspace) args.push('--write-fd', String(i.workspaceFd));
    else args.push('--write', w);
  }
  // Deletes that must be asked: the workspace's rule without the remove rights, given back (by the
  // jail, without following links) in the flow's deletable folders.
  if (flow.sandbox?.askDeletes && i.workspaceFd !== undefined) {
    args.push('--ask-deletes');
    for (const d of flow.sandbox.deletable ?? []) args.push('--remove', d);
  }
  for (const p of flow.sandbox?.tcpPorts ?? []) args.push('--tcp', String(p));
  // The model proxy's port is the one TCP destination a model-using run gets from us.
  if (i.proxyPort !== undefined) args.push('--tcp', String(i.proxyPort));
  if (flow.sandbox?.udp) args.push('--udp');
  for (const h of i.hiddenPaths) args.push('--hide', h);
  for (const r of i.readable ?? []) args.push('--read', r);
  if (i.privateDisplay)
    args.push(...displayMasks(i.privateDisplay, i.userRuntimeDir, i.writable, i.workspace));
  // A private display needs no abstract sockets; the user's X server and buses listen on some.
  else if (flow.sandbox?.allowAbstractUnix) args.push('--allow-abstract-unix');
  // the person's display alone of the X sockets
  if (!i.privateDisplay && i.userDisplay && i.useNamespaces)
    args.push('--mask', '/tmp/.X11-unix', '--keep', `/tmp/.X11-unix/X${i.userDisplay.slice(1)}`);
  // X clients (libxcb) try the display's abstract name first and take its path socket only when that
  // connect says ECONNREFUSED: the jail answers so for an abstract name the run may not reach (it does in
  // the subreaper fallback already), so X works without opening every abstract socket (decision 134).
  if (!i.privateDisplay && i.userDisplay && i.useNamespaces && !flow.sandbox?.allowAbstractUnix)
    args.push('--abstract-absent');
  // 'auto': the jail confines by mounts where it can make the namespaces, else by Landlock as usual.
  const agentSandbox = flow.runner === 'codex' ? flow.sandbox?.agentSandbox : undefined;
  if (agentSandbox === true) args.push('--fs-mounts');
  else if (agentSandbox === 'auto' && i.useNamespaces) args.push('--fs-mounts-if-possible');
  // Every run the jail can give a mount namespace gets one: read-only outside the writable trees (so
  // metadata changes fail too, which Landlock does not cover), the hidden trees covered, its own /tmp.
  // Not for a run the flow lets go unsandboxed on a kernel without Landlock: that one is unconfined.
  if (i.useNamespaces && i.landlockAbi > 0) args.push('--ro-mounts');
  // What only root may read in the readable trees, for a root run (DAC keeps other users' runs out).
  if (i.useNamespaces && i.readable?.length) for (const b of i.blanked ?? []) args.push('--blank', b);
  if (i.privateTmpSize) args.push('--private-tmp', i.privateTmpSize);
  for (const r of i.readOnly ?? []) args.push('--read-only', r);
  if (i.landlockAbi <= 0) args.push('--no-landlock');
  // What the run may connect to by path where the jail has no namespaces to hide the rest (the
  // subreaper fallback, which the jail may also fall into at run time): besides its writable trees and
  // the sockets its read allow-list names (the session and AT-SPI buses, decision 122), the display's X
  // socket and the machine's lookups.
  if (i.landlockAbi > 0) {
    if (!i.privateDisplay && i.userDisplay)
      args.push('--connect', `/tmp/.X11-unix/X${i.userDisplay.slice(1)}`);
    for (const s of SYSTEM_SOCKETS) args.push('--connect', s);
  }
  if (!i.useNamespaces) args.push('--no-namespaces');
  if (i.init) args.push('--init');
  args.push('--', ...i.workerArgv);
  return args;
}

/**
 * The per-run folders inside its scratch dir that the environment points at (HOME, TMPDIR). The XDG
 * folders lie in HOME and are made by the programs that write there, as the XDG spec has them do: each
 * folder made and removed per run costs the launch (docs/benchmarks.md).
 */
export const SCRATCH_DIRS = ['home', 'tmp'] as const;

export interface RunEnvInput {
  flow: FlowSpec;
  /** The supervisor's environment: only PATH, LANG and TZ are taken from it. */
  baseEnv: Readonly<Record<string, string | undefined>>;
  runId: string;
  token: string;
  workspace: string;
  scratchDir: string;
  /** Where the native addon lives (computer-use workers load the desktop addon from there). */
  nativeDir: string;
  /** The private display's variables (DISPLAY, buses), when the run has one. */
  displayEnv?: Readonly<Record<string, string>> | undefined;
  /** The PATH to give (readablePath(): the supervisor's without what the run cannot read). */
  path?: string | undefined;
  /** The cookie file of the person's display made for this run (a user-display run). */
  xauthority?: string | undefined;
}

/** The run's whole environment (the jail starts with nothing else). */
export function buildRunEnv(i: RunEnvInput): Record<string, string> {
  const { flow } = i;
  const s = i.scratchDir;
  return {
    PATH: i.path ?? (i.baseEnv.PATH || '/usr/local/bin:/usr/bin:/bin'),
    LANG: i.baseEnv.LANG || 'C.UTF-8',
    HOME: path.join(s, 'home'),
    TMPDIR: path.join(s, 'tmp'),
    XDG_CACHE_HOME: path.join(s, 'home', '.cache'),
    XDG_CONFIG_HOME: path.join(s, 'home', '.config'),
    XDG_DATA_HOME: path.join(s, 'home', '.local', 'share'),
    npm_config_cache: path.join(s, 'home', '.cache', 'npm'),
    npm_config_update_notifier: 'false',
    [RunEnv.runId]: i.runId,
    [RunEnv.token]: i.token,
    [RunEnv.workspace]: i.workspace,
    ...(i.baseEnv.TZ ? { TZ: i.baseEnv.TZ } : {}),
    ...(drivesDesktop(flow.runner) ? { [RunEnv.nativeDir]: i.nativeDir } : {}),
    ...(flow.env ?? {}),
    // The run's own cookie of the person's display, never the person's .Xauthority.
    ...(i.xauthority ? { XAUTHORITY: i.xauthority } : {}),
    // The private display wins over whatever the flow names.
    ...(i.displayEnv
      ? { ...i.displayEnv, ...(flow.computerUse?.app ? { [RunEnv.displayApp]: '1' } : {}) }
      : {}),
  };
}
