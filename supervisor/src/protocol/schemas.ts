/**
 * The data that crosses process boundaries, one zod schema each; the TypeScript types are inferred
 * from them so a type and its validator cannot drift.
 */
import * as z from 'zod/mini';
import { PriceTable } from './prices.ts';

/**
 * A tmpfs size: a number, then k, m or g, or a share of the memory up to 100% (sandbox.tmpSize; tmpfs
 * would take 300% too, a /tmp that can hold more than the machine has).
 */
export const TMP_SIZE = /^(?:[1-9][0-9]{0,9}[kmg]?|(?:[1-9][0-9]?|100)%)$/;

/** A run's memory limit (sandbox.memory): a number with k, m or g, or a share of the machine's memory. */
export const MEMORY_SIZE = /^(?:[1-9][0-9]{0,9}[kmg]|(?:[1-9][0-9]?|100)%)$/;
/** Below this a run's worker cannot start (a Node worker alone takes ~50 MiB). */
export const MIN_MEMORY_BYTES = 64 << 20;

/** sandbox.memory in bytes (`totalBytes`: the machine's memory, for a share); undefined if malformed. */
export function memorySizeBytes(size: string, totalBytes: number): number | undefined {
  if (!MEMORY_SIZE.test(size)) return undefined;
  const n = Number.parseInt(size, 10);
  const unit = size.at(-1)!;
  if (unit === '%') return Math.floor((totalBytes * n) / 100);
  return n * (unit === 'k' ? 1024 : unit === 'm' ? 1024 ** 2 : 1024 ** 3);
}

/** `YYYYMMDD-HHMMSS-mmmrrr` (UTC; mmm: milliseconds in hex, rrr: random): sorts by start time, and names
 * its own date folder under logs/agents/. */
export const RunId = z
  .string()
  .check(z.regex(/^\d{8}-\d{6}-[0-9a-f]{6}$/, 'not a run id (YYYYMMDD-HHMMSS-xxxxxx)'));
export type RunId = z.infer<typeof RunId>;

const AbsPath = z.string().check(
  z.minLength(1),
  z.maxLength(4096),
  z.refine((p) => p.startsWith('/'), 'must be an absolute path'),
);

/**
 * A workspace grant: the Linux analogue of a security-scoped bookmark. Created only by the host from
 * a folder the user chose; signed with HMAC-SHA256 over every other field.
 */
export const Grant = z.object({
  /** Format version. */
  v: z.literal(1),
  /** Random id, also the file name in the host's grant store. */
  id: z.string().check(z.regex(/^[0-9a-f]{16,64}$/)),
  /** The folder as chosen, after realpath. */
  path: AbsPath,
  /** Device and inode of the folder when granted (decimal strings: they can exceed 2^53). */
  dev: z.string().check(z.regex(/^\d+$/)),
  ino: z.string().check(z.regex(/^\d+$/)),
  /** ISO time the user granted it. */
  createdAt: z.string(),
  /** Hex HMAC-SHA256 over the fields above. */
  sig: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
});
export type Grant = z.infer<typeof Grant>;

export const RunnerName = z.enum([
  'command',
  'codex',
  'claude',
  'computer-use',
  'replay',
  'reflect',
  'extract',
  'judge',
]);
export type RunnerName = z.infer<typeof RunnerName>;

/** Runners that drive a desktop (screenshots, input): the display, the addon and the artifacts folder are theirs. */
export function drivesDesktop(runner: RunnerName): boolean {
  return runner === 'computer-use' || runner === 'replay';
}

/** A provider name: also the first path segment of its route through the model proxy. */
export const ProviderName = z
  .string()
  .check(z.regex(/^[a-z][a-z0-9-]{0,39}$/, 'provider names are lowercase words'));
export type ProviderName = z.infer<typeof ProviderName>;

/** What a flow in config.yaml says about how its runs are run and confined. */
export const FlowSpec = z.object({
  name: z.string().check(z.minLength(1), z.maxLength(100)),
  runner: RunnerName,
  /** Whole-run time limit; the run ends `timed-out` after it. */
  timeoutMs: z.optional(z.int().check(z.positive(), z.maximum(7 * 24 * 3600_000))),
  /** A worker silent for this long is considered hung and killed. */
  heartbeatTimeoutMs: z.optional(z.int().check(z.minimum(200), z.maximum(3600_000))),
  /** Time between SIGTERM and SIGKILL when a run is cancelled or timed out. */
  killGraceMs: z.optional(z.int().check(z.minimum(0), z.maximum(60_000))),
  sandbox: z.optional(
    z.object({
      /** Extra trees the run may write (absolute, e.g. a shared package cache). */
      writable: z.optional(z.array(AbsPath).check(z.maxLength(64))),
      /**
       * Trees the run may read besides the system's, Runboard's and its own (workspace, scratch, card):
       * reads are an allow-list (docs/security-model.md). Never Runboard's state root.
       */
      read: z.optional(z.array(AbsPath).check(z.maxLength(64))),
      /** TCP ports the run may connect to (none by default). */
      tcpPorts: z.optional(z.array(z.int().check(z.minimum(1), z.maximum(65535))).check(z.maxLength(64))),
      /**
       * UDP sockets (DNS lookups of outside hosts, QUIC, ...) to any address and port: a filter cannot
       * tell DNS from other datagrams. Off by default (docs/security-model.md).
       */
      udp: z.optional(z.boolean()),
      /** Run even where the kernel cannot sandbox (no Landlock). Off by default. */
      allowUnsandboxed: z.optional(z.boolean()),
      /** Allow connecting to abstract unix sockets (X11 uses one). Off by default. */
      allowAbstractUnix: z.optional(z.boolean()),
      /**
       * The agent CLI runs its own OS sandbox inside the jail (runner codex: bubblewrap,
       * workspace-write, read-only for readOnly flows). The jail then confines the filesystem with a
       * private mount namespace instead of Landlock (whose filesystem rules forbid the agent's mounts);
       * Landlock still confines network and scopes. Needs user namespaces: `true` fails the run without
       * them, `'auto'` (the host's default for codex flows) then runs the agent in the jail alone.
       */
      agentSandbox: z.optional(z.union([z.boolean(), z.literal('auto')])),
      /** Most processes (threads count) the run may have at once; a fork bomb stops there. Default 1024. */
      maxProcesses: z.optional(z.int().check(z.minimum(16), z.maximum(1_000_000))),
      /**
       * The most memory the run's processes may use together (a memory cgroup; its /tmp's pages count):
       * a number and k, m or g, or a share of the machine's memory. Default 50%. Over it the run is
       * killed (termination `memory-limit`).
       */
      memory: z.optional(
        z
          .string()
          .check(z.regex(MEMORY_SIZE, 'a size such as 512m, 4g or 50% (of the memory, at most 100%)')),
      ),
      /**
       * The most the run's own /tmp (a tmpfs, in memory) may hold, as tmpfs takes it: a number and k, m or
       * g, or up to 100% (of the machine's memory). Default 1g. $TMPDIR is on disk (the run's scratch dir).
       */
      tmpSize: z.optional(
        z.string().check(z.regex(TMP_SIZE, 'a size such as 512m, 2g or 25% (at most 100%)')),
      ),
      /** Let the run write the project's config.yaml and cards/ (when they lie in its writable trees). */
      projectWritable: z.optional(z.boolean()),
      /**
       * Deletes in the workspace must be asked: the jail withholds Landlock's remove rights there
       * (so renames out of a folder fail too), and a refused delete makes the card ask the person.
       */
      askDeletes: z.optional(z.boolean()),
      /** With askDeletes: folders (relative to the workspace) where deletes are allowed without asking. */
      deletable: z.optional(
        z
          .array(
            z.string().check(
              z.minLength(1),
              z.maxLength(4096),
              z.refine(
                (p) => !p.startsWith('/') && !p.split('/').includes('..'),
                'a deletable folder is relative to the workspace and stays inside it',
              ),
            ),
          )
          .check(z.maxLength(64)),
      ),
    }),
  ),
  /** Environment variables passed to the run, on top of the trimmed base environment. */
  env: z.optional(
    z.record(z.string().check(z.regex(/^[A-Za-z_][A-Za-z0-9_]*$/)), z.string().check(z.maxLength(32_768))),
  ),
  // ── coding-agent runs (optional fields: a flow without them is a command flow) ──
  /** Model provider (openai, anthropic, …) whose key the supervisor's loopback proxy injects. */
  provider: z.optional(ProviderName),
  /** Model name passed to the agent CLI. */
  model: z.optional(z.string().check(z.minLength(1), z.maxLength(200))),
  /** A run with no output at all (stdout, stderr, worker log/progress) for this long is stalled: killed, failed. */
  stallTimeoutMs: z.optional(z.int().check(z.minimum(200), z.maximum(86_400_000))),
  /** How long a run waits at a live ask (worker/ask) for the person before it is denied (default 10 min). */
  askTimeoutMs: z.optional(z.int().check(z.minimum(100), z.maximum(86_400_000))),
  /** Run in a fresh git worktree + branch of the workspace's repository, created by the supervisor. */
  worktree: z.optional(z.boolean()),
  /**
   * Run in a copy of the workspace the supervisor makes under its state root (an attempt of a card whose
   * workspace is not a git repository): at most `maxBytes`; kept (applied back) or discarded like a worktree.
   */
  copyWorkspace: z.optional(z.object({ maxBytes: z.int().check(z.minimum(1)) })),
  /** The run may read the workspace but not write it (Landlock: the workspace is not passed as writable). */
  readOnly: z.optional(z.boolean()),
  /** Prompt folder (prompt.md + config.yaml), absolute; rendered by the agent runners. */
  prompt: z.optional(AbsPath),
  /** Give the coding agent the desktop as an MCP server (`desktop-cli serve`) for this run. */
  desktop: z.optional(z.boolean()),
  /** The document tools (read_document, export_document) for the run's agent; on unless false. */
  documents: z.optional(z.boolean()),
  /** The flow's vision profile (`visionProfile:`), which `analyze_media` asks through the run's proxy route. */
  vision: z.optional(
    z.object({
      profile: z.string().check(z.minLength(1), z.maxLength(100)),
      provider: ProviderName,
      model: z.string().check(z.minLength(1), z.maxLength(200)),
      maxTokens: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
    }),
  ),
  /**
   * What the run's model requests may spend, counted by the supervisor's model proxy from the answers'
   * usage: past either, further requests are refused and the run ends (termination `budget`).
   */
  budget: z.optional(
    z.object({
      maxTokens: z.optional(z.int().check(z.minimum(1), z.maximum(1e12))),
      /** USD, priced by `prices` (then the defaults, protocol/prices.ts); a model with no price counts as over. */
      maxCost: z.optional(z.number().check(z.positive(), z.maximum(1e6))),
    }),
  ),
  /**
   * Record every model request and response of the run (rendered prompt, raw answer; secrets redacted)
   * in its log folder as `model-debug.jsonl` (MODEL_DEBUG_FILE).
   */
  debug: z.optional(z.boolean()),
  /** Prices (USD per million tokens) that add to or override the defaults (config.yaml `prices:`). */
  prices: z.optional(PriceTable),
  // ── computer-use runs (optional fields) ──
  computerUse: z.optional(
    z.object({
      /** Wire format: OpenAI Responses, Chat Completions (any OpenAI-compatible server), Anthropic Messages. */
      api: z.optional(z.enum(['responses', 'chat', 'messages'])),
      /** Model turns before the run stops (failed, budget). */
      maxSteps: z.optional(z.int().check(z.minimum(1), z.maximum(10_000))),
      /** Wall time of the loop before it stops (failed, budget); the flow's timeoutMs is the hard limit. */
      maxDurationMs: z.optional(z.int().check(z.minimum(1000), z.maximum(7 * 24 * 3600_000))),
      /** Byte budget of one encoded screenshot sent to the model. */
      imageMaxBytes: z.optional(z.int().check(z.minimum(2_000), z.maximum(20_000_000))),
      /** Widest screenshot sent to the model (downscaled to fit). */
      imageMaxWidth: z.optional(z.int().check(z.minimum(64), z.maximum(8192))),
      /** The part of the screen the model sees and acts on, [x, y, w, h] (e.g. one monitor). */
      region: z.optional(
        z.tuple([z.int(), z.int(), z.int().check(z.positive()), z.int().check(z.positive())]),
      ),
      /** The monitor the model sees and acts on: its index in the server's order, or its output name (e.g. "DP-1"). */
      monitor: z.optional(
        z.union([z.int().check(z.minimum(0), z.maximum(63)), z.string().check(z.maxLength(200))]),
      ),
      /** Transient model errors (reset, 429, 5xx) retried per request. */
      maxRetries: z.optional(z.int().check(z.minimum(0), z.maximum(10))),
      /** A private virtual display (Xvfb + D-Bus + AT-SPI) for this run, started and ended by the supervisor. */
      privateDisplay: z.optional(z.boolean()),
      /** Its size, WxHxD (default 1280x800x24). */
      displaySize: z.optional(z.string().check(z.regex(/^\d{2,5}x\d{2,5}(x\d{1,2})?$/))),
      /** On the real display: an Escape pressed by the person cancels the run (default true there). */
      takeover: z.optional(z.boolean()),
      /** On a private display: ms between the live view's frames (default 1000; 0: no live view). */
      liveFrameMs: z.optional(z.union([z.literal(0), z.int().check(z.minimum(100), z.maximum(60_000))])),
      /** A program started on the private display before the worker (argv; PATH-resolved). */
      app: z.optional(z.array(z.string().check(z.maxLength(4096))).check(z.minLength(1), z.maxLength(64))),
      /** The card's `setup:` (sh -c), run on the private display in the workspace before the worker starts. */
      setup: z.optional(z.string().check(z.minLength(1), z.maxLength(65_536))),
    }),
  ),
  // ── judge runs (runner judge: picks one of a card's attempts; host/src/core/attempts.ts) ──
  judge: z.optional(
    z.object({
      /** The attempts' runs, in attempt order: their reports and final screenshots are what is judged. */
      runs: z.array(RunId).check(z.minLength(1), z.maxLength(16)),
    }),
  ),
  // ── extraction runs (runner extract: a recording or a video → task markdown; docs/extraction.md) ──
  extract: z.optional(
    z.object({
      /** What is read: a recording's folder (manifest.jsonl, video.mp4) or a video file (.mp4). Set by the host at launch. */
      input: z.optional(AbsPath),
      /** Wire format: gemini (the video itself, through the Files API), or frames + events for the others. */
      api: z.optional(z.enum(['gemini', 'responses', 'chat', 'messages'])),
      /** Frames sampled from the video for the frame-based APIs (default 12). */
      frames: z.optional(z.int().check(z.minimum(1), z.maximum(64))),
      /** Widest sampled frame (default 768 px). */
      frameWidth: z.optional(z.int().check(z.minimum(64), z.maximum(4096))),
      /** How long the video may take to become ACTIVE after its upload (default 5 minutes). */
      activeTimeoutMs: z.optional(z.int().check(z.minimum(1000), z.maximum(3600_000))),
    }),
  ),
});
export type FlowSpec = z.infer<typeof FlowSpec>;

export const CardRef = z.object({
  /** Absolute path of the card file. */
  path: AbsPath,
  /**
   * The project folder the card belongs to (absolute). Its config.yaml and cards/ are read-only to the
   * run, also when the run works in that folder, unless the flow sets `sandbox.projectWritable`.
   */
  project: z.optional(AbsPath),
  id: z.optional(z.string().check(z.maxLength(200))),
  title: z.optional(z.string().check(z.maxLength(500))),
});
export type CardRef = z.infer<typeof CardRef>;

/** What a `command` runner runs: a string for `sh -c`, or an argv list. */
export const Command = z.union([
  z.string().check(z.minLength(1), z.maxLength(65_536)),
  z.array(z.string().check(z.maxLength(65_536))).check(z.minLength(1), z.maxLength(4096)),
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
  'crashed', // the worker died without reporting (a fault such as SIGSEGV, or a non-zero exit)
  'killed', // the jail or the worker was killed by a signal from outside (kill -9, the OOM killer), not by Runboard
  'heartbeat-timeout', // the worker stopped sending heartbeats and was killed
  'timeout', // the flow's time limit passed
  'sandbox-denial', // the run failed after the sandbox refused it an access
  'sandbox-failed', // the sandbox could not be set up
  'spawn-failed', // the worker could not be started
  'supervisor-died', // the supervisor died while the run was going; its processes died with it
  'log-write-failed', // the run's log could not be written (disk full): stopped to lose nothing silently
  'stalled', // no output at all for the flow's stall timeout: killed as stalled
  'memory-limit', // the run used all the memory its flow allows (sandbox.memory): the kernel ended it
  'missing-key', // the flow's provider has no key: nothing was started
  'worktree-failed', // the run's git worktree could not be created
  'budget', // the run spent its token or cost budget (maxTokens / maxCost): the proxy refused more requests
]);
export type TerminationReason = z.infer<typeof TerminationReason>;

export const Metrics = z.record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.null()]));
export type Metrics = z.infer<typeof Metrics>;

/**
 * A question a run asks the person: plain text, or with choices (a structured clarification:
 * `options`, one of them `recommended`; the person may still answer in their own words).
 */
export const ClarifyingQuestion = z.union([
  z.string().check(z.maxLength(4096)),
  z.object({
    question: z.string().check(z.minLength(1), z.maxLength(4096)),
    options: z.optional(z.array(z.string().check(z.minLength(1), z.maxLength(500))).check(z.maxLength(20))),
    recommended: z.optional(z.string().check(z.maxLength(500))),
  }),
]);
export type ClarifyingQuestion = z.infer<typeof ClarifyingQuestion>;

/** What a run changed in its worktree, against the commit it started from. */
export const DiffSummary = z.object({
  files: z.array(z.object({ path: z.string(), added: z.nullable(z.int()), removed: z.nullable(z.int()) })),
  /** Lines added / removed over all files (binary files count 0). */
  added: z.int(),
  removed: z.int(),
  /** The commit on the run's branch holding the changes (null: nothing changed). */
  commit: z.nullable(z.string()),
});
export type DiffSummary = z.infer<typeof DiffSummary>;

/** The git worktree + branch an `implement`-style run worked in (flow `worktree: true`). */
export const WorktreeInfo = z.object({
  /** The repository's main working tree (the user's checkout). */
  repo: z.string(),
  path: z.string(),
  branch: z.string(),
  /** The branch the user's checkout was on (null: detached HEAD), and the commit the run started from. */
  baseBranch: z.nullable(z.string()),
  baseCommit: z.string(),
  state: z.enum(['active', 'kept', 'discarded']),
  diff: z.nullable(DiffSummary),
  /** Merge commit when kept. */
  mergeCommit: z.optional(z.nullable(z.string())),
});
export type WorktreeInfo = z.infer<typeof WorktreeInfo>;

/** The copy of a workspace a run worked in (flow `copyWorkspace`; supervisor/src/node/workspace-copy.ts). */
export const WorkspaceCopy = z.object({
  /** The workspace the copy was made of (a realpath), and the copy. */
  source: z.string(),
  path: z.string(),
  files: z.int(),
  bytes: z.number(),
  state: z.enum(['active', 'kept', 'discarded']),
  /** When kept: the paths (relative) written into, or removed from, the workspace. */
  applied: z.optional(z.array(z.string())),
});
export type WorkspaceCopy = z.infer<typeof WorkspaceCopy>;

/**
 * A permission the sandbox refused a run, as the supervisor derived it (never as the run worded it):
 * the person may allow it once, always for the flow, or deny it. `path` is the folder a write or a
 * delete would be allowed in (a realpath the supervisor checked), `port` the TCP port to connect to.
 */
export const PermissionAsk = z.object({
  id: z.string().check(z.regex(/^a[0-9]{1,2}$/)),
  /** `read`: a folder the run's read allow-list hides (granted as `sandbox.read`, never writable). */
  kind: z.enum(['write', 'read', 'connect', 'delete']),
  path: z.optional(z.string().check(z.minLength(1), z.maxLength(4096))),
  port: z.optional(z.int().check(z.minimum(1), z.maximum(65535))),
  /** The line of the run's output that showed the refusal: the run's own words, shown as such. */
  evidence: z.string().check(z.maxLength(500)),
  /** Who refused: the jail, or the agent CLI's own permission system (then the jail would refuse too). */
  source: z.enum(['sandbox', 'agent']),
});
export type PermissionAsk = z.infer<typeof PermissionAsk>;

/** result.json: the record of a run, rewritten as it goes and final when status is not `running`. */
/** An agent CLI's session id (claude's are UUIDs). */
export const AgentSessionId = z.string().check(z.regex(/^[0-9a-f-]{8,64}$/, 'not an agent session id'));

/** The model tokens a run used, counted by the model proxy, and what they cost (null: a model with no price). */
export const ModelUsage = z.object({
  requests: z.int(),
  inputTokens: z.int(),
  outputTokens: z.int(),
  costUsd: z.nullable(z.number()),
  /** The same per model, as the answers named it. */
  models: z.record(
    z.string(),
    z.object({
      requests: z.int(),
      inputTokens: z.int(),
      outputTokens: z.int(),
      costUsd: z.nullable(z.number()),
    }),
  ),
});
export type ModelUsage = z.infer<typeof ModelUsage>;

export const RunResult = z.object({
  runId: RunId,
  status: RunStatus,
  card: CardRef,
  flow: z.string(),
  runner: RunnerName,
  workspace: z.string(),
  logDir: z.string(),
  startedAt: z.string(),
  endedAt: z.nullable(z.string()),
  durationMs: z.nullable(z.number()),
  exitCode: z.nullable(z.int()),
  signal: z.nullable(z.string()),
  termination: z.nullable(z.object({ reason: TerminationReason, detail: z.string() })),
  lastHeartbeat: z.nullable(z.string()),
  /** Bytes the run's processes read and wrote through I/O syscalls (rchar/wchar), and at the storage layer. */
  bytesRead: z.nullable(z.number()),
  bytesWritten: z.nullable(z.number()),
  storageBytesRead: z.nullable(z.number()),
  storageBytesWritten: z.nullable(z.number()),
  /** Output sizes as recorded in stdout.log / stderr.log. */
  stdoutBytes: z.number(),
  stderrBytes: z.number(),
  summary: z.string(),
  metrics: Metrics,
  /** Model tokens and cost (runs with a provider; absent in records of older versions). */
  usage: z.optional(ModelUsage),
  containment: z.nullable(z.string()),
  sandbox: z.nullable(
    z.object({
      landlockAbi: z.number(),
      enforced: z.boolean(),
      /** What confines the filesystem: Landlock (default), mounts (agentSandbox flows), none. */
      fs: z.optional(z.enum(['landlock', 'mounts', 'none'])),
    }),
  ),
  pid: z.nullable(z.int()),
  supervisorPid: z.int(),
  /** The run's worktree and what it changed there (runs with `worktree: true`). */
  worktree: z.optional(z.nullable(WorktreeInfo)),
  /** The copy of the workspace the run worked in (flow `copyWorkspace`), until kept or discarded. */
  copy: z.optional(WorkspaceCopy),
  /** Questions the run asks the person (with status needs-input), in the order asked. */
  questions: z.optional(z.array(ClarifyingQuestion)),
  /** Permissions the sandbox refused that the person may allow (status needs-input). */
  asks: z.optional(z.array(PermissionAsk).check(z.maxLength(8))),
  /** Asks of earlier runs the person allowed once for this run (`run/launch` `allow`). */
  allowed: z.optional(z.array(PermissionAsk).check(z.maxLength(8))),
  /**
   * The agent session this run kept to be continued (a claude or codex run that stopped at an ask: its
   * transcript is kept in the run's log dir), or the one it continued (`resumed`).
   */
  session: z.optional(
    z.object({ cli: z.enum(['claude', 'codex']), id: AgentSessionId, resumed: z.optional(z.boolean()) }),
  ),
});
export type RunResult = z.infer<typeof RunResult>;

/** One line of events.jsonl. `seq` starts at 0 and has no gaps: it is the replay offset for events. */
export const RunEvent = z.object({
  seq: z.int().check(z.minimum(0)),
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
  message: z.optional(z.string()),
  data: z.optional(z.record(z.string(), z.unknown())),
});
export type RunEvent = z.infer<typeof RunEvent>;

export const OutputStream = z.enum(['stdout', 'stderr']);
export type OutputStream = z.infer<typeof OutputStream>;

/** A replay position: next event seq, and byte offsets into stdout.log / stderr.log. */
export const Offsets = z.object({
  events: z._default(z.int().check(z.minimum(0)), 0),
  stdout: z._default(z.int().check(z.minimum(0)), 0),
  stderr: z._default(z.int().check(z.minimum(0)), 0),
});
export type Offsets = z.infer<typeof Offsets>;
