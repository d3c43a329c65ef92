/**
 * The data that crosses process boundaries, one zod schema each; the TypeScript types are inferred
 * from them so a type and its validator cannot drift.
 */
import { z } from 'zod';

/** `YYYYMMDD-HHMMSS-xxxxxx`: sortable, and names its own date folder under logs/agents/. */
export const RunId = z.string().regex(/^\d{8}-\d{6}-[0-9a-f]{6}$/, 'not a run id (YYYYMMDD-HHMMSS-xxxxxx)');
export type RunId = z.infer<typeof RunId>;

const AbsPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith('/'), 'must be an absolute path');

/**
 * A workspace grant: the Linux analogue of a security-scoped bookmark. Created only by the host from
 * a folder the user chose; signed with HMAC-SHA256 over every other field.
 */
export const Grant = z.object({
  /** Format version. */
  v: z.literal(1),
  /** Random id, also the file name in the host's grant store. */
  id: z.string().regex(/^[0-9a-f]{16,64}$/),
  /** The folder as chosen, after realpath. */
  path: AbsPath,
  /** Device and inode of the folder when granted (decimal strings: they can exceed 2^53). */
  dev: z.string().regex(/^\d+$/),
  ino: z.string().regex(/^\d+$/),
  /** ISO time the user granted it. */
  createdAt: z.string(),
  /** Hex HMAC-SHA256 over the fields above. */
  sig: z.string().regex(/^[0-9a-f]{64}$/),
});
export type Grant = z.infer<typeof Grant>;

export const RunnerName = z.enum(['command', 'codex', 'claude', 'computer-use', 'replay', 'reflect']);
export type RunnerName = z.infer<typeof RunnerName>;

/** A provider name: also the first path segment of its route through the model proxy. */
export const ProviderName = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'provider names are lowercase words');
export type ProviderName = z.infer<typeof ProviderName>;

/** What a flow in config.yaml says about how its runs are run and confined. */
export const FlowSpec = z.object({
  name: z.string().min(1).max(100),
  runner: RunnerName,
  /** Whole-run time limit; the run ends `timed-out` after it. */
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3600_000)
    .optional(),
  /** A worker silent for this long is considered hung and killed. */
  heartbeatTimeoutMs: z.number().int().min(200).max(3600_000).optional(),
  /** Time between SIGTERM and SIGKILL when a run is cancelled or timed out. */
  killGraceMs: z.number().int().min(0).max(60_000).optional(),
  sandbox: z
    .object({
      /** Extra trees the run may write (absolute, e.g. a shared package cache). */
      writable: z.array(AbsPath).max(64).optional(),
      /** TCP ports the run may connect to (none by default). */
      tcpPorts: z.array(z.number().int().min(1).max(65535)).max(64).optional(),
      /** Run even where the kernel cannot sandbox (no Landlock). Off by default. */
      allowUnsandboxed: z.boolean().optional(),
      /** Allow connecting to abstract unix sockets (X11 uses one). Off by default. */
      allowAbstractUnix: z.boolean().optional(),
    })
    .optional(),
  /** Environment variables passed to the run, on top of the trimmed base environment. */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string().max(32_768)).optional(),
  // ── coding-agent runs (issue 6; additive) ──
  /** Model provider (openai, anthropic, …) whose key the supervisor's loopback proxy injects. */
  provider: ProviderName.optional(),
  /** Model name passed to the agent CLI. */
  model: z.string().min(1).max(200).optional(),
  /** A run with no output at all (stdout, stderr, worker log/progress) for this long is stalled: killed, failed. */
  stallTimeoutMs: z.number().int().min(200).max(86_400_000).optional(),
  /** Run in a fresh git worktree + branch of the workspace's repository, created by the supervisor. */
  worktree: z.boolean().optional(),
  /** The run may read the workspace but not write it (Landlock: the workspace is not passed as writable). */
  readOnly: z.boolean().optional(),
  /** Prompt folder (prompt.md + config.yaml), absolute; rendered by the agent runners. */
  prompt: AbsPath.optional(),
  /** Give the coding agent the desktop as an MCP server (`desktop-cli serve`) for this run. */
  desktop: z.boolean().optional(),
});
export type FlowSpec = z.infer<typeof FlowSpec>;

export const CardRef = z.object({
  /** Absolute path of the card file. */
  path: AbsPath,
  id: z.string().max(200).optional(),
  title: z.string().max(500).optional(),
});
export type CardRef = z.infer<typeof CardRef>;

/** What a `command` runner runs: a string for `sh -c`, or an argv list. */
export const Command = z.union([
  z.string().min(1).max(65_536),
  z.array(z.string().max(65_536)).min(1).max(4096),
]);
export type Command = z.infer<typeof Command>;

export const RunStatus = z.enum(['running', 'succeeded', 'failed', 'needs-input', 'cancelled', 'timed-out']);
export type RunStatus = z.infer<typeof RunStatus>;
/** The status a worker may claim; the supervisor decides the final one from evidence. */
export const WorkerStatus = z.enum(['succeeded', 'failed', 'needs-input']);
export type WorkerStatus = z.infer<typeof WorkerStatus>;

/** Why a run ended: one of these, always recorded. */
export const TerminationReason = z.enum([
  'finished', // the worker reported and exited
  'cancelled', // the user cancelled
  'crashed', // the worker died without reporting (signal or exit), e.g. kill -9
  'heartbeat-timeout', // the worker stopped sending heartbeats and was killed
  'timeout', // the flow's time limit passed
  'sandbox-denial', // the run failed after the sandbox refused it an access
  'sandbox-failed', // the sandbox could not be set up
  'spawn-failed', // the worker could not be started
  'supervisor-died', // the supervisor died while the run was going; its processes died with it
  'log-write-failed', // the run's log could not be written (disk full): stopped to lose nothing silently
  // issue 6 (additive):
  'stalled', // no output at all for the flow's stall timeout: killed as stalled
  'missing-key', // the flow's provider has no key: nothing was started
  'worktree-failed', // the run's git worktree could not be created
]);
export type TerminationReason = z.infer<typeof TerminationReason>;

export const Metrics = z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.null()]));
export type Metrics = z.infer<typeof Metrics>;

/** What a run changed in its worktree, against the commit it started from. */
export const DiffSummary = z.object({
  files: z.array(
    z.object({ path: z.string(), added: z.number().int().nullable(), removed: z.number().int().nullable() }),
  ),
  /** Lines added / removed over all files (binary files count 0). */
  added: z.number().int(),
  removed: z.number().int(),
  /** The commit on the run's branch holding the changes (null: nothing changed). */
  commit: z.string().nullable(),
});
export type DiffSummary = z.infer<typeof DiffSummary>;

/** The git worktree + branch an `implement`-style run worked in (flow `worktree: true`). */
export const WorktreeInfo = z.object({
  /** The repository's main working tree (the user's checkout). */
  repo: z.string(),
  path: z.string(),
  branch: z.string(),
  /** The branch the user's checkout was on (null: detached HEAD), and the commit the run started from. */
  baseBranch: z.string().nullable(),
  baseCommit: z.string(),
  state: z.enum(['active', 'kept', 'discarded']),
  diff: DiffSummary.nullable(),
  /** Merge commit when kept. */
  mergeCommit: z.string().nullable().optional(),
});
export type WorktreeInfo = z.infer<typeof WorktreeInfo>;

/** result.json: the record of a run, rewritten as it goes and final when status is not `running`. */
export const RunResult = z.object({
  runId: RunId,
  status: RunStatus,
  card: CardRef,
  flow: z.string(),
  runner: RunnerName,
  workspace: z.string(),
  logDir: z.string(),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  durationMs: z.number().nullable(),
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  termination: z.object({ reason: TerminationReason, detail: z.string() }).nullable(),
  lastHeartbeat: z.string().nullable(),
  /** Bytes the run's processes read and wrote through I/O syscalls (rchar/wchar), and at the storage layer. */
  bytesRead: z.number().nullable(),
  bytesWritten: z.number().nullable(),
  storageBytesRead: z.number().nullable(),
  storageBytesWritten: z.number().nullable(),
  /** Output sizes as recorded in stdout.log / stderr.log. */
  stdoutBytes: z.number(),
  stderrBytes: z.number(),
  summary: z.string(),
  metrics: Metrics,
  containment: z.string().nullable(),
  sandbox: z.object({ landlockAbi: z.number(), enforced: z.boolean() }).nullable(),
  pid: z.number().int().nullable(),
  supervisorPid: z.number().int(),
  /** issue 6 (additive): the run's worktree and what it changed there. */
  worktree: WorktreeInfo.nullable().optional(),
});
export type RunResult = z.infer<typeof RunResult>;

/** One line of events.jsonl. `seq` starts at 0 and has no gaps: it is the replay offset for events. */
export const RunEvent = z.object({
  seq: z.number().int().min(0),
  ts: z.string(),
  type: z.enum([
    'launched',
    'started',
    'sandbox',
    'ready',
    'log',
    'progress',
    'finished',
    'cancel',
    'denial',
    'ended',
    'error',
  ]),
  message: z.string().optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});
export type RunEvent = z.infer<typeof RunEvent>;

export const OutputStream = z.enum(['stdout', 'stderr']);
export type OutputStream = z.infer<typeof OutputStream>;

/** A replay position: next event seq, and byte offsets into stdout.log / stderr.log. */
export const Offsets = z.object({
  events: z.number().int().min(0).default(0),
  stdout: z.number().int().min(0).default(0),
  stderr: z.number().int().min(0).default(0),
});
export type Offsets = z.infer<typeof Offsets>;
