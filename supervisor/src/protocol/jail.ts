/**
 * The jail's side of the contract (native/src/linux/jail.cc): the fds it is given and the JSON status
 * lines it writes on its status fd, validated by the supervisor (node/jail-status.ts) as they arrive.
 */
import * as z from 'zod/mini';

/** fd 3 of the jail and the worker: the run endpoint (JSON-RPC, a socketpair with the supervisor). */
export const RUN_ENDPOINT_FD = 3;
/** The jail's status fd (`--status-fd`): one JSON object per line. */
export const JAIL_STATUS_FD = 4;

const count = z.number();

export const JailStatusLine = z.discriminatedUnion('event', [
  /** The worker was forked (its pid as seen by the supervisor) and how its processes are contained. */
  z.object({
    event: z.literal('started'),
    pid: z.int().check(z.positive()),
    containment: z.string(),
    /** Why the namespaces could not be made, when containment fell back. */
    namespaceError: z.optional(z.string()),
  }),
  /** The sandbox is in place (sent from the child just before exec). */
  z.object({
    event: z.literal('sandbox'),
    landlockAbi: z.int(),
    enforced: z.boolean(),
    fs: z.optional(z.enum(['landlock', 'mounts', 'none'])),
  }),
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
  }),
]);
export type JailStatusLine = z.infer<typeof JailStatusLine>;
export type JailExit = Omit<Extract<JailStatusLine, { event: 'exit' }>, 'event'>;
