/**
 * Every message between host, supervisor and worker, declared once. Method names read `area/verb`.
 * Both sides import these; the receiver validates every payload with the schema declared here.
 */
import * as z from 'zod/mini';
import { notification, request } from './define.ts';
import {
  AgentSessionId,
  CardRef,
  ClarifyingQuestion,
  Command,
  FlowSpec,
  Grant,
  Metrics,
  Offsets,
  OutputStream,
  PermissionAsk,
  ProviderName,
  RunEvent,
  RunId,
  RunResult,
  WorkerStatus,
} from './schemas.ts';

// ─── host → supervisor (the supervisor socket) ────────────────────────────────────────────────────

/** launchWorker: validate the grant and paths, create the run's log dir, spawn its worker. */
export const LaunchRun = request(
  'run/launch',
  'host→supervisor',
  z.object({
    card: CardRef,
    flow: FlowSpec,
    /** The card's workspace, absolute; must resolve inside the grant. */
    workspace: z.string().check(z.minLength(1), z.maxLength(4096)),
    grant: Grant,
    /** For runner `command`. */
    command: z.optional(Command),
    /** Any other path the run is given (inputs, outputs); each must resolve inside the grant. */
    paths: z.optional(z.array(z.string().check(z.maxLength(4096))).check(z.maxLength(256))),
    /**
     * Asks of an earlier run of the same card that the person allowed once: the supervisor looks each
     * up in its own record of that run and extends this run's sandbox by exactly that, or refuses.
     */
    allow: z.optional(
      z.array(z.object({ runId: RunId, ask: PermissionAsk.shape.id })).check(z.minLength(1), z.maxLength(8)),
    ),
    /**
     * The launch's idempotency key (the board's: the card's queue generation). A launch of the same
     * card with a key the supervisor has seen starts nothing and answers with the first launch's run
     * (`again`), so a card is never run twice for one queueing (supervisor/src/node/launch-keys.ts).
     */
    key: z.optional(z.string().check(z.minLength(8), z.maxLength(128))),
  }),
  z.object({ runId: RunId, logDir: z.string(), again: z.optional(z.boolean()) }),
);

/** cancelWorker: idempotent. Cancelling an ended run reports its final status and changes nothing. */
export const CancelRun = request(
  'run/cancel',
  'host→supervisor',
  z.object({ runId: RunId }),
  z.object({ runId: RunId, alreadyEnded: z.boolean(), status: RunResult.shape.status }),
);

/** Runs this supervisor knows: active ones first, then ended ones from disk, newest first. */
export const ListRuns = request(
  'run/list',
  'host→supervisor',
  z.object({
    activeOnly: z.optional(z.boolean()),
    limit: z.optional(z.int().check(z.minimum(1), z.maximum(10_000))),
    /** Only the runs of this card (its path as given at launch); read through a per-day index. */
    cardPath: z.optional(z.string().check(z.minLength(1), z.maxLength(4096))),
  }),
  z.object({ runs: z.array(RunResult) }),
);

/** One run by id (the live state of an active run, else its result.json); RunNotFound when unknown. */
export const GetRun = request(
  'run/get',
  'host→supervisor',
  z.object({ runId: RunId }),
  z.object({ run: RunResult }),
);

/**
 * Attach to a run from an offset: the supervisor replays what was recorded after `from` (events by seq,
 * output by byte offset), then streams live, then sends `run/didEnd`. No line is lost or duplicated.
 * Output comes in the order the supervisor received it across stdout and stderr. With `bytes` it comes
 * as `run/didOutputBytes` (raw bytes frames), else as `run/didOutput` (JSON strings).
 */
export const AttachRun = request(
  'run/attach',
  'host→supervisor',
  z.object({
    runId: RunId,
    from: z.optional(Offsets),
    bytes: z.optional(z.boolean()),
    /** The client reads the output files itself: send their sizes only (run/didOutputSizes). */
    files: z.optional(z.boolean()),
  }),
  z.object({ run: RunResult }),
);

/** Stop streaming a run to this connection (the run goes on). */
export const DetachRun = request('run/detach', 'host→supervisor', z.object({ runId: RunId }), z.object({}));

/**
 * Where this supervisor's launches run: here (local, the default) or on the hosts of a fleet through
 * Redis (scheduler.backend: redis). The board sends its config's choice at each connection; runs
 * already going are not moved.
 */
export const SetBackend = request(
  'supervisor/backend',
  'host→supervisor',
  z.object({
    backend: z.enum(['local', 'redis']),
    redisUrl: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
    /** The name of the Redis password stored with the supervisor (`runboard fleet password set NAME`). */
    redisPasswordSecret: z.optional(z.string().check(z.regex(/^[a-z0-9][a-z0-9_-]{0,63}$/))),
    /** The board's scheduler.maxConcurrency: on a fleet, a cap for all its boards' runs together. */
    maxConcurrency: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
    /** Each flow's cap on the board (flows.<name>.cap ≥ 1): on a fleet, over all its boards' runs of it. */
    flowCaps: z.optional(
      z.record(z.string().check(z.maxLength(200)), z.int().check(z.minimum(1), z.maximum(100_000))),
    ),
  }),
  z.object({ backend: z.enum(['local', 'redis']) }),
);

export const SupervisorStatus = request(
  'supervisor/status',
  'host→supervisor',
  z.object({}),
  z.object({
    pid: z.int(),
    version: z.string(),
    startedAt: z.string(),
    stateRoot: z.string(),
    activeRuns: z.int(),
    landlockAbi: z.int(),
    landlockReason: z.string(),
    /** Its own log (stderr): bytes held unwritten, lines dropped, the error while writes fail (ENOSPC). */
    log: z.optional(z.object({ buffered: z.int(), dropped: z.int(), failing: z.optional(z.string()) })),
  }),
);

/** Stop the supervisor. Without `cancelRuns` it refuses while runs are active. */
export const Shutdown = request(
  'supervisor/shutdown',
  'host→supervisor',
  z.object({ cancelRuns: z.optional(z.boolean()) }),
  z.object({ stopping: z.boolean(), activeRuns: z.int() }),
);

// ── worktrees and provider keys (additive: older clients never send them) ──

/** Keep a run's worktree: merge its branch into the base branch, then remove the worktree and branch. */
export const KeepWorktree = request(
  'run/keepWorktree',
  'host→supervisor',
  z.object({ runId: RunId }),
  z.object({ run: RunResult }),
);

/** Discard a run's worktree: remove the worktree and delete its branch. */
export const DiscardWorktree = request(
  'run/discardWorktree',
  'host→supervisor',
  z.object({ runId: RunId }),
  z.object({ run: RunResult }),
);

/** Store a provider key with the supervisor (0600 under the state root's keys dir). Never echoed back. */
export const SetProviderKey = request(
  'provider/setKey',
  'host→supervisor',
  z.object({ provider: ProviderName, key: z.nullable(z.string().check(z.minLength(1), z.maxLength(4096))) }),
  z.object({ provider: ProviderName, hasKey: z.boolean() }),
);

/** Providers the proxy knows: where it forwards each, and whether a key is stored (never the key). */
export const ListProviders = request(
  'provider/list',
  'host→supervisor',
  z.object({}),
  z.object({
    providers: z.array(z.object({ name: ProviderName, baseUrl: z.string(), hasKey: z.boolean() })),
  }),
);

/**
 * Checks the stored key of a provider against the provider itself (one request to its model list, by
 * the supervisor, with the key): accepted, refused, or not reachable. The key is never sent back.
 */
export const CheckProviderKey = request(
  'provider/checkKey',
  'host→supervisor',
  z.object({ provider: ProviderName }),
  z.object({
    provider: ProviderName,
    /** The provider accepted the key. */
    ok: z.boolean(),
    /** The provider's HTTP status, when it answered. */
    status: z.optional(z.int()),
    /** In words: what the provider said, or why it could not be asked. */
    message: z.string(),
  }),
);

/**
 * Keeps a replay card's sensitive parameter value with the supervisor (0600 under the state root's keys
 * dir; docs/security-model.md, "Sensitive parameters") and answers its reference, which the card holds
 * instead of the value. Bound to the card file and parameter: only that card's runs get it. `replaces`:
 * the card's earlier reference, removed. A null value only removes. Never echoed back.
 */
export const SetParamSecret = request(
  'secret/setParam',
  'host→supervisor',
  z.object({
    card: CardRef.shape.path,
    param: z.string().check(z.minLength(1), z.maxLength(200)),
    value: z.nullable(z.string().check(z.minLength(1), z.maxLength(65_536))),
    replaces: z.optional(z.string().check(z.regex(/^s-[0-9a-f]{32}$/))),
  }),
  z.object({ ref: z.nullable(z.string()) }),
);

// ─── supervisor → host (on the connection that attached) ─────────────────────────────────────────

/** One event from events.jsonl. */
export const DidEvent = notification(
  'run/didEvent',
  'supervisor→host',
  z.object({ runId: RunId, event: RunEvent }),
);

/**
 * Output bytes [offset, offset+length) of stdout.log or stderr.log, decoded as UTF-8 (invalid bytes
 * become U+FFFD). Chunks end at a line end when they can; resume from offset+length.
 */
export const DidOutput = notification(
  'run/didOutput',
  'supervisor→host',
  z.object({
    runId: RunId,
    stream: OutputStream,
    offset: z.int().check(z.minimum(0)),
    length: z.int().check(z.minimum(0)),
    data: z.string(),
  }),
);

/**
 * Output bytes [offset, offset+bytes.length) of stdout.log or stderr.log as they are on disk, sent as a
 * bytes frame (see transport.ts): only to a client that attached with `bytes`.
 */
export const DidOutputBytes = notification(
  'run/didOutputBytes',
  'supervisor→host',
  z.object({
    runId: RunId,
    stream: OutputStream,
    offset: z.int().check(z.minimum(0)),
    bytes: z.custom<Uint8Array<ArrayBufferLike>>((v) => v instanceof Uint8Array),
  }),
);

/**
 * The sizes of stdout.log, stderr.log and output.order at one moment (the files read up to them are
 * consistent), for a client that attached with `files` and reads them itself from the run's logDir;
 * `dev`/`ino`: stdout.log's, so the client can tell it opened the same file (else it attaches again
 * with `bytes`). Sent when they grew, the last time before run/didEnd.
 */
export const DidOutputSizes = notification(
  'run/didOutputSizes',
  'supervisor→host',
  z.object({
    runId: RunId,
    /** The run's log dir, holding the three files. */
    dir: z.string(),
    stdout: z.int().check(z.minimum(0)),
    stderr: z.int().check(z.minimum(0)),
    order: z.int().check(z.minimum(0)),
    dev: z.number(),
    ino: z.number(),
  }),
);

/** The run has ended and everything recorded was sent. */
export const DidEnd = notification(
  'run/didEnd',
  'supervisor→host',
  z.object({ runId: RunId, result: RunResult }),
);

// ─── worker → supervisor (the run endpoint: fd 3 of the worker) ──────────────────────────────────

/** What a worker gets when it reports ready: everything it needs to run. */
export const WorkerSpec = z.object({
  runId: RunId,
  runner: FlowSpec.shape.runner,
  flow: FlowSpec,
  card: CardRef,
  workspace: z.string(),
  command: z.optional(Command),
  heartbeatIntervalMs: z.int().check(z.positive()),
  /** How the run reaches its model: the supervisor's loopback proxy and this run's token. */
  model: z.optional(
    z.object({
      provider: ProviderName,
      /** e.g. http://127.0.0.1:PORT/openai/v1 (OpenAI) or http://127.0.0.1:PORT/anthropic (Anthropic). */
      baseUrl: z.string(),
      token: z.string(),
      model: z.optional(z.string()),
    }),
  ),
  /**
   * The flow's vision route (its vision profile, `flow.vision`): a second token on the run's proxy
   * listener that makes one request only, the vision request of the profile's provider with the
   * profile's model (protocol/vision.ts), whatever the run's own provider is.
   */
  vision: z.optional(
    z.object({
      provider: ProviderName,
      model: z.string(),
      /** e.g. http://127.0.0.1:PORT/anthropic: the run's own listener, the vision provider's route. */
      baseUrl: z.string(),
      token: z.string(),
    }),
  ),
  /** A folder under the run's log dir the worker may write (screenshots, report.md). */
  artifactsDir: z.optional(z.string()),
  /**
   * Continue an agent session that stopped at a permission ask the person has allowed: the CLI's
   * session (its transcript is in the run's HOME) and what to tell the agent instead of the prompt.
   */
  resume: z.optional(z.object({ session: AgentSessionId, note: z.string().check(z.maxLength(4000)) })),
  /**
   * Replay runs: the card's sensitive parameter values by name, from the supervisor's store (the card
   * holds references). Only in memory: the worker types them and redacts them from all it sends.
   */
  secrets: z.optional(z.record(z.string(), z.string())),
});
export type WorkerSpec = z.infer<typeof WorkerSpec>;

/** workerReady: the worker proves it is the run's worker (token) and receives its spec. */
export const WorkerReady = request(
  'worker/ready',
  'worker→supervisor',
  z.object({
    runId: RunId,
    token: z.string().check(z.minLength(16), z.maxLength(128)),
    pid: z.int(),
    version: z.string(),
  }),
  WorkerSpec,
);

/** A structured log line of the worker itself (not the tool's output, which flows through stdout/stderr). */
export const WorkerLog = notification(
  'worker/log',
  'worker→supervisor',
  z.object({
    level: z.enum(['debug', 'info', 'warn', 'error']),
    message: z.string().check(z.maxLength(65_536)),
    data: z.optional(z.record(z.string(), z.unknown())),
  }),
);

export const WorkerProgress = notification(
  'worker/progress',
  'worker→supervisor',
  z.object({
    fraction: z.optional(z.number().check(z.minimum(0), z.maximum(1))),
    message: z.optional(z.string().check(z.maxLength(4096))),
  }),
);

export const WorkerHeartbeat = notification(
  'worker/heartbeat',
  'worker→supervisor',
  z.object({ at: z.number() }),
);

/**
 * A tool of the run asks, before the act, for a path outside the run's sandbox (an agent CLI's
 * permission hook through the worker's ask socket). The supervisor refuses what it never offers at
 * once, else the run waits for the person (run/answer) or the flow's `askTimeoutMs` (a denial).
 */
export const WorkerAsk = request(
  'worker/ask',
  'worker→supervisor',
  z.object({
    kind: z.enum(['write', 'read']),
    path: z.string().check(z.minLength(1), z.maxLength(4096)),
    tool: z.optional(z.string().check(z.maxLength(200))),
  }),
  z.object({
    decision: z.enum(['allow', 'deny']),
    message: z.string(),
    /**
     * Allowed while the run lives: where the run finds the folder when that is not its own path (the
     * folder's path is then a link to it; native/src/linux/live_grants.h). Tools that check where a
     * file really is count this folder as the allowed one.
     */
    at: z.optional(z.string()),
  }),
);

/** The person's answer to a run's live ask (WorkerAsk): the run waiting at that tool call goes on. */
export const AnswerAsk = request(
  'run/answer',
  'host→supervisor',
  z.object({
    runId: RunId,
    ask: z.string().check(z.regex(/^a[0-9]{1,2}$/)),
    choice: z.enum(['allow', 'deny']),
  }),
  z.object({ answered: z.boolean() }),
);

/** workerFinished: the worker's own account. The supervisor checks it against what it saw. */
export const WorkerFinished = request(
  'worker/finished',
  'worker→supervisor',
  z.object({
    status: WorkerStatus,
    exitCode: z.nullable(z.int()),
    summary: z.string().check(z.maxLength(65_536)),
    metrics: Metrics,
    /** Questions for the person (status needs-input): the host appends them to the card's `## Questions`. */
    questions: z.optional(z.array(ClarifyingQuestion).check(z.maxLength(50))),
    /** The person took over (Escape on the real display): the run counts as cancelled. */
    cancelledBy: z.optional(z.literal('person')),
  }),
  z.object({}),
);
