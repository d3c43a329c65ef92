/**
 * The jail's side of the contract (native/src/linux/jail.cc): the fds it is given and the JSON status
 * lines it writes on its status fd, validated by the supervisor (node/jail-status.ts) as they arrive.
 */
import * as z from 'zod/mini';

/** fd 3 of the jail and the worker: the run endpoint (JSON-RPC, a socketpair with the supervisor). */
export const RUN_ENDPOINT_FD = 3;
/** The jail's status fd (`--status-fd`): one JSON object per line. */
export const JAIL_STATUS_FD = 4;
/**
 * The run's environment reaches the jail on this fd (`--env-fd`; NAME=VALUE entries, NUL-separated),
 * not as the jail's own: the jail starts with an empty environment, so a flow's LD_PRELOAD (or any
 * loader variable) acts only on the run, set by the jail's child right before exec.
 */
export const JAIL_ENV_FD = 5;
/** The run's workspace, an open directory (`--write-fd`): the jail starts the run in it. */
export const JAIL_WORKSPACE_FD = 6;
/**
 * The run's stdout.log, stderr.log and output.order, open for writing (`--output-fds 7,8,9`): the jail
 * moves the run's output into them itself; the run holds only pipes.
 */
export const JAIL_OUTPUT_FDS = [7, 8, 9] as const;
/**
 * Live grants (`--control-fd`, a socket; runs with a worker): the supervisor writes
 * `grant <id> <read|write> <real path>` lines, the jail answers each `ok <id> <where the run finds it>`
 * or `refused <id> <why>` (native/src/linux/live_grants.h, supervisor/src/node/live-grant.ts).
 */
export const JAIL_CONTROL_FD = 10;

const count = z.number();

export const JailStatusLine = z.discriminatedUnion('event', [
  /** The worker was forked (its pid as seen by the supervisor) and how its processes are contained. */
  z.object({
    event: z.literal('started'),
    pid: z.int().check(z.positive()),
    containment: z.string(),
    /** Why the namespaces could not be made, when containment fell back. */
    namespaceError: z.optional(z.string()),
    /** What limits the run's processes (`--max-procs`): a pids cgroup, RLIMIT_NPROC, or nothing. */
    pidsLimit: z.optional(z.enum(['cgroup', 'rlimit', 'none'])),
    maxProcs: z.optional(z.int()),
    /** Why no pids cgroup could be made, when none was. */
    cgroupError: z.optional(z.string()),
    /** What limits the run's memory (`--memory`): a memory cgroup, or nothing (no fallback). */
    memoryLimit: z.optional(z.enum(['cgroup', 'none'])),
    /** The limit asked for, bytes (0: none asked). */
    memoryBytes: z.optional(count),
    /** Why no memory cgroup could be made, when none was. */
    memoryError: z.optional(z.string()),
  }),
  /** The sandbox is in place (sent from the child just before exec). */
  z.object({
    event: z.literal('sandbox'),
    landlockAbi: z.int(),
    enforced: z.boolean(),
    fs: z.optional(z.enum(['landlock', 'mounts', 'none'])),
    /** The run has a read-only mount namespace of its own (under Landlock too, `--ro-mounts`). */
    mountNamespace: z.optional(z.boolean()),
  }),
  /**
   * The run's output moved into its log files so far (`--output-fds`): the sizes of stdout.log,
   * stderr.log and output.order at one moment, and the bytes dropped after a failed write.
   */
  z.object({
    event: z.literal('output'),
    stdout: count,
    stderr: count,
    order: count,
    dropped: z.optional(count),
  }),
  /** A write to a log file failed (e.g. ENOSPC): the run's further output is dropped, counted. */
  z.object({ event: z.literal('output-failed'), file: z.string(), code: z.string(), message: z.string() }),
  /** Something failed in the jail (before or instead of the worker). */
  z.object({ event: z.literal('error'), message: z.string() }),
  /** The worker ended (last line): its exit code or signal, and what the run used. */
  z.object({
    event: z.literal('exit'),
    /** null: killed by a signal. */
    code: z.nullable(z.int()),
    signal: z.int(),
    rchar: count,
    wchar: count,
    readBytes: count,
    writeBytes: count,
    utimeMs: count,
    stimeMs: count,
    maxRssKb: count,
    /** CPU time of the jail itself (moving the output, answering listen() calls), ms. */
    jailCpuMs: z.optional(count),
    /**
     * With a memory cgroup: its limit (bytes), the times the run met it and a process was killed for
     * it (by the kernel; the jail or memory.oom.group then ended the whole run), and the most the run
     * used (bytes).
     */
    memoryMax: z.optional(count),
    memoryKills: z.optional(count),
    memoryPeak: z.optional(count),
    /**
     * `--init`: how the run's command ended, as the jail's init saw it (code null: killed by
     * `signal`; execErrno: it could not be executed; ms: from its start to its end).
     */
    command: z.optional(
      z.object({ code: z.nullable(z.int()), signal: z.int(), execErrno: z.int(), ms: z.int() }),
    ),
  }),
]);
export type JailStatusLine = z.infer<typeof JailStatusLine>;
export type JailExit = Omit<Extract<JailStatusLine, { event: 'exit' }>, 'event'>;
