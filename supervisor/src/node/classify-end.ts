/**
 * How a run ended, decided from the evidence alone (pure): why the supervisor stopped it, what the jail
 * reported about the worker's exit, what the worker reported itself, and what the sandbox denied.
 */
import type { ClarifyingQuestion, JailExit, RunResult, TerminationReason } from '../protocol/index.ts';

export type { JailExit };

/** What the worker said in `worker/finished`. */
export interface FinishedReport {
  status: 'succeeded' | 'failed' | 'needs-input';
  exitCode: number | null;
  summary: string;
  metrics: Record<string, unknown>;
  questions?: ClarifyingQuestion[] | undefined;
  cancelledBy?: 'person' | undefined;
}

export interface EndEvidence {
  /** Why the supervisor stopped the run, if it did (cancel, time limit, heartbeat, ...). */
  endCause: { reason: TerminationReason; detail: string } | null;
  /** The jail's exit line (null: the jail never reported one). */
  jailExit: JailExit | null;
  /** The jail's last `error` line. */
  jailError: string;
  /** How the jail process itself ended, as the supervisor saw it. */
  jailProcess: { code: number | null; signal: string | null };
  report: FinishedReport | null;
  /** Paths (or lines) the sandbox denied. */
  denials: string[];
}

export interface EndVerdict {
  status: Exclude<RunResult['status'], 'running'>;
  reason: TerminationReason;
  detail: string;
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
export const signalName = (n: number): string => SIGNAL_NAMES[n] ?? `signal ${n}`;

/** Signals a process gets from someone else (kill, the OOM killer, a session ending), not from a fault. */
const FROM_OUTSIDE = new Set([1, 2, 3, 9, 15]);
const SIGNAL_NUMBERS = new Map(Object.entries(SIGNAL_NAMES).map(([n, name]) => [name, Number(n)]));

export function classifyEnd(e: EndEvidence): EndVerdict {
  const { endCause, jailExit: exit, report: rep } = e;
  if (endCause) {
    const { reason, detail } = endCause;
    return {
      status: reason === 'cancelled' ? 'cancelled' : reason === 'timeout' ? 'timed-out' : 'failed',
      reason,
      detail,
    };
  }
  const jailSignal = e.jailProcess.signal;
  if (!exit && jailSignal && FROM_OUTSIDE.has(SIGNAL_NUMBERS.get(jailSignal) ?? 0))
    return {
      status: 'failed',
      reason: 'killed',
      detail: `the run's jail was killed by ${jailSignal} from outside Runboard (no cancel, no limit); the run's processes died with it`,
    };
  if (!exit || exit.code === 125 || exit.code === 126) {
    return {
      status: 'failed',
      reason:
        exit?.code === 125 || exit?.code === 126 || e.jailError.includes('sandbox')
          ? 'sandbox-failed'
          : 'spawn-failed',
      detail: e.jailError || `the run jail exited with ${e.jailProcess.code ?? e.jailProcess.signal}`,
    };
  }
  // The run met its memory limit: the kernel killed a process of it, and the whole run was ended.
  if (exit.memoryKills && exit.signal === 9) {
    const mib = (b: number | undefined): string => `${Math.round((b ?? 0) / 2 ** 20)} MiB`;
    return {
      status: 'failed',
      reason: 'memory-limit',
      detail: `killed: memory limit (${mib(exit.memoryMax)}), raise sandbox.memory in the flow if the run needs more`,
    };
  }
  const outside = FROM_OUTSIDE.has(exit.signal);
  if (!rep)
    return {
      status: 'failed',
      reason: outside ? 'killed' : 'crashed',
      detail: exit.signal
        ? `the worker was killed by ${signalName(exit.signal)}${outside ? ' from outside Runboard (no cancel, no limit)' : ''} before it reported`
        : `the worker exited with code ${exit.code} before it reported`,
    };
  if (exit.signal || exit.code !== 0)
    return {
      status: 'failed',
      reason: outside ? 'killed' : 'crashed',
      detail: `the worker reported "${rep.status}" but then ${exit.signal ? `was killed by ${signalName(exit.signal)}${outside ? ' from outside Runboard' : ''}` : `exited with code ${exit.code}`}`,
    };
  if (rep.cancelledBy === 'person') return { status: 'cancelled', reason: 'cancelled', detail: rep.summary };
  // A plain command (the jail's init reports it) killed by a signal from outside, with no cancel or limit
  const cmd = exit.command;
  if (cmd && cmd.code === null && !cmd.execErrno && FROM_OUTSIDE.has(cmd.signal))
    return {
      status: 'failed',
      reason: 'killed',
      detail: `the command was killed by ${signalName(cmd.signal)} from outside Runboard (no cancel, no limit)`,
    };
  if (rep.status === 'failed' && e.denials.length > 0)
    return {
      status: 'failed',
      reason: 'sandbox-denial',
      detail: `${rep.summary}; the sandbox denied: ${e.denials.join(', ')}`,
    };
  return { status: rep.status, reason: 'finished', detail: rep.summary };
}
