/**
 * A card's attempts (config `attempts: N`, issue 33): the card's run is N runs of the same task from the
 * same state, each on its own private display with its own copy of the workspace, and a judge run picks
 * one. This module is the pure state machine of one card's attempts; scheduler-attempts.ts carries it
 * out against the supervisor (launches, cancels, the judge's run, keep/discard), the scheduler's policy
 * decides when each pending attempt may start (each counts against the caps like a run).
 *
 *   attempt:  pending ──launching──▶ launching ──launched──▶ running ──ended──▶ ended
 *             pending | launching ──cancel──▶ ended(cancelled)       (no run, or its launch failed)
 *   card:     attempts ──(all ended, one succeeded) or (one succeeded + judgeAfter passed: the rest
 *             stopped, then all ended)──▶ judging ──judged──▶ settled(won | none | judge-failed)
 *             attempts ──(all ended, none succeeded)──▶ settled(none: each attempt's reason)
 *             any ──cancel──▶ (stop every run) ──all ended──▶ settled(cancelled)
 *
 * `next` says what to do now; `step` moves the state on an event; an event the state does not allow
 * throws IllegalAttemptEvent (a bug in the host, never a person's mistake).
 */
import type { RunStatus } from '@runboard/supervisor/protocol';

export type EndStatus = Exclude<RunStatus, 'running'>;

/** How an attempt ended, as far as the judge and the card are concerned. */
export interface AttemptEnd {
  status: EndStatus;
  /** The run's failure text (its end and last stderr line), or its summary. */
  text: string;
}

export type Attempt =
  | { readonly kind: 'pending' }
  | { readonly kind: 'launching' }
  | { readonly kind: 'running'; readonly runId: string }
  | { readonly kind: 'ended'; readonly runId?: string; readonly end: AttemptEnd };

export interface Verdict {
  /** The winning attempt (index from 0), or null: none succeeded. */
  winner: number | null;
  reasons: string;
}

export type Phase =
  | { readonly kind: 'attempts' }
  | { readonly kind: 'judging'; readonly runId?: string }
  | { readonly kind: 'settled'; readonly outcome: Outcome };

/** How the card's attempts ended; `discard`: the attempts' runs whose workspace changes go. */
export type Outcome =
  | { kind: 'won'; winner: number; runId: string; reasons: string; discard: string[] }
  | { kind: 'none'; text: string; discard: string[] }
  | { kind: 'judge-failed'; text: string; discard: string[] }
  | { kind: 'cancelled'; discard: string[] };

export interface AttemptsState {
  readonly attempts: readonly Attempt[];
  readonly phase: Phase;
  /** The person cancelled the card: every run is stopped, nothing more starts, no judge. */
  readonly cancelled: boolean;
  /** When the first attempt succeeded (epoch ms): judgeAfter counts from it. */
  readonly firstSuccessAt?: number;
  /** The attempts still going once judgeAfter passed were asked to stop. */
  readonly stragglersStopped: boolean;
  /** Ms after the first success before the judge decides without the attempts still going. */
  readonly judgeAfterMs?: number;
}

export type AttemptsEvent =
  | { type: 'launching'; index: number }
  | { type: 'launched'; index: number; runId: string }
  | { type: 'ended'; index: number; end: AttemptEnd; at: number }
  | { type: 'stragglers-stopped' }
  | { type: 'cancel' }
  | { type: 'judge-launched'; runId: string }
  /** The judge's verdict, or why there is none (its run failed). */
  | { type: 'judged'; verdict: Verdict }
  | { type: 'judge-failed'; text: string };

/** What to do now. */
export type Action =
  /** Attempts that may start (the scheduler's policy decides when, within the caps). */
  | { kind: 'launch'; indexes: number[] }
  /** Stop these runs (cancel, or judgeAfter passed); then wait for their ends. */
  | { kind: 'stop'; runIds: string[] }
  /** Launch the judge over these runs (every attempt that has a run, in attempt order). */
  | { kind: 'judge'; runs: { index: number; runId: string }[] }
  | { kind: 'settle'; outcome: Outcome }
  /** Nothing until an event, or until `until` (judgeAfter's end). */
  | { kind: 'wait'; until?: number };

export class IllegalAttemptEvent extends Error {
  constructor(event: AttemptsEvent, why: string) {
    super(
      `illegal attempts event ${event.type}: ${why} (a bug in Runboard's host: see host/src/core/attempts.ts)`,
    );
    this.name = 'IllegalAttemptEvent';
  }
}

export function initial(n: number, judgeAfterMs?: number): AttemptsState {
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`attempts must be a whole number of 1 or more (got ${n})`);
  return {
    attempts: Array.from({ length: n }, () => ({ kind: 'pending' }) as const),
    phase: { kind: 'attempts' },
    cancelled: false,
    stragglersStopped: false,
    ...(judgeAfterMs !== undefined ? { judgeAfterMs } : {}),
  };
}

const runIdOf = (a: Attempt): string | undefined =>
  a.kind === 'running' || a.kind === 'ended' ? a.runId : undefined;
const allEnded = (s: AttemptsState): boolean => s.attempts.every((a) => a.kind === 'ended');
const succeeded = (a: Attempt): boolean => a.kind === 'ended' && a.end.status === 'succeeded';

export function step(s: AttemptsState, e: AttemptsEvent): AttemptsState {
  const at = (i: number): Attempt => {
    const a = s.attempts[i];
    if (!a) throw new IllegalAttemptEvent(e, `no attempt ${i + 1} of ${s.attempts.length}`);
    return a;
  };
  const put = (i: number, a: Attempt): AttemptsState => ({
    ...s,
    attempts: s.attempts.map((x, j) => (j === i ? a : x)),
  });
  if (s.phase.kind === 'settled') throw new IllegalAttemptEvent(e, 'the attempts are settled');
  switch (e.type) {
    case 'launching':
      if (at(e.index).kind !== 'pending')
        throw new IllegalAttemptEvent(e, `attempt ${e.index + 1} is not pending`);
      if (s.cancelled || s.phase.kind !== 'attempts')
        throw new IllegalAttemptEvent(e, 'no attempt starts now');
      return put(e.index, { kind: 'launching' });
    case 'launched':
      if (at(e.index).kind !== 'launching')
        throw new IllegalAttemptEvent(e, `attempt ${e.index + 1} is not launching`);
      return put(e.index, { kind: 'running', runId: e.runId });
    case 'ended': {
      const a = at(e.index);
      if (a.kind === 'ended') throw new IllegalAttemptEvent(e, `attempt ${e.index + 1} has ended already`);
      const runId = runIdOf(a);
      const next = put(e.index, { kind: 'ended', ...(runId ? { runId } : {}), end: e.end });
      return e.end.status === 'succeeded' && s.firstSuccessAt === undefined
        ? { ...next, firstSuccessAt: e.at }
        : next;
    }
    case 'stragglers-stopped':
      // what has not started by then never does
      return {
        ...s,
        stragglersStopped: true,
        attempts: s.attempts.map((a) =>
          a.kind === 'pending'
            ? {
                kind: 'ended',
                end: {
                  status: 'cancelled',
                  text: 'not started: another attempt succeeded and judgeAfter passed',
                },
              }
            : a,
        ),
      };
    case 'cancel':
      // attempts that have no run yet end here; those going end when their runs do
      return {
        ...s,
        cancelled: true,
        attempts: s.attempts.map((a) =>
          a.kind === 'pending'
            ? { kind: 'ended', end: { status: 'cancelled', text: 'cancelled before it started' } }
            : a,
        ),
      };
    case 'judge-launched':
      if (s.phase.kind !== 'judging') throw new IllegalAttemptEvent(e, 'not judging');
      return { ...s, phase: { kind: 'judging', runId: e.runId } };
    case 'judged':
    case 'judge-failed':
      if (s.phase.kind !== 'judging') throw new IllegalAttemptEvent(e, 'not judging');
      return { ...s, phase: { kind: 'settled', outcome: judgedOutcome(s, e) } };
  }
}

/** The state once `next` said judge: the judge's run is being launched. */
export function judging(s: AttemptsState): AttemptsState {
  if (s.phase.kind !== 'attempts' || !allEnded(s) || s.cancelled || !s.attempts.some(succeeded))
    throw new Error('the judge starts once every attempt ended and one succeeded');
  return { ...s, phase: { kind: 'judging' } };
}

/** The state once `next` said settle (attempts that need no judge: all failed, or cancelled). */
export function settled(s: AttemptsState, outcome: Outcome): AttemptsState {
  return { ...s, phase: { kind: 'settled', outcome } };
}

/** Each attempt's reason, for a card whose attempts all failed. */
export function reasonsText(s: AttemptsState): string {
  return s.attempts
    .map(
      (a, i) => `attempt ${i + 1}: ${a.kind === 'ended' ? `${a.end.status}: ${a.end.text}` : 'did not end'}`,
    )
    .join('\n');
}

const runsOf = (s: AttemptsState, except?: number): string[] =>
  s.attempts.flatMap((a, i) => (i !== except && runIdOf(a) ? [runIdOf(a)!] : []));

function judgedOutcome(
  s: AttemptsState,
  e: Extract<AttemptsEvent, { type: 'judged' | 'judge-failed' }>,
): Outcome {
  if (s.cancelled) return { kind: 'cancelled', discard: runsOf(s) };
  // what did not succeed goes; successes are kept for the person when the judge could not decide
  const failedRuns = s.attempts.flatMap((a) => (!succeeded(a) && runIdOf(a) ? [runIdOf(a)!] : []));
  if (e.type === 'judge-failed')
    return {
      kind: 'judge-failed',
      text: `the judge failed: ${e.text}\n${reasonsText(s)}`,
      discard: failedRuns,
    };
  const w = e.verdict.winner;
  if (w === null)
    return {
      kind: 'none',
      text: `the judge found no attempt successful: ${e.verdict.reasons}\n${reasonsText(s)}`,
      discard: runsOf(s),
    };
  const a = s.attempts[w];
  if (!a || !succeeded(a) || !runIdOf(a))
    return {
      kind: 'judge-failed',
      text: `the judge picked attempt ${w + 1}, which did not succeed: not followed\n${reasonsText(s)}`,
      discard: failedRuns,
    };
  return { kind: 'won', winner: w, runId: runIdOf(a)!, reasons: e.verdict.reasons, discard: runsOf(s, w) };
}

/** What to do now (`now`: epoch ms, for judgeAfter). */
export function next(s: AttemptsState, now: number): Action {
  if (s.phase.kind === 'settled') return { kind: 'settle', outcome: s.phase.outcome };
  if (s.phase.kind === 'judging') return { kind: 'wait' };
  const going = s.attempts.flatMap((a) => (a.kind === 'running' ? [a.runId] : []));
  if (allEnded(s)) {
    if (s.cancelled) return { kind: 'settle', outcome: { kind: 'cancelled', discard: runsOf(s) } };
    if (!s.attempts.some(succeeded))
      return {
        kind: 'settle',
        outcome: { kind: 'none', text: `no attempt succeeded\n${reasonsText(s)}`, discard: runsOf(s) },
      };
    return {
      kind: 'judge',
      runs: s.attempts.flatMap((a, index) => (runIdOf(a) ? [{ index, runId: runIdOf(a)! }] : [])),
    };
  }
  if (s.cancelled) return going.length ? { kind: 'stop', runIds: going } : { kind: 'wait' };
  if (s.firstSuccessAt !== undefined && s.judgeAfterMs !== undefined && !s.stragglersStopped) {
    const until = s.firstSuccessAt + s.judgeAfterMs;
    if (now < until) {
      const pending = pendingIndexes(s);
      return pending.length ? { kind: 'launch', indexes: pending } : { kind: 'wait', until };
    }
    // past the bound: what has not started never will; what is going is stopped
    return { kind: 'stop', runIds: going };
  }
  const pending = s.stragglersStopped ? [] : pendingIndexes(s);
  return pending.length ? { kind: 'launch', indexes: pending } : { kind: 'wait' };
}

function pendingIndexes(s: AttemptsState): number[] {
  return s.attempts.flatMap((a, i) => (a.kind === 'pending' ? [i] : []));
}

/** Attempts that hold a run slot now (launching or running), and the judge's run while it goes. */
export function slotsHeld(s: AttemptsState): number {
  if (s.phase.kind === 'judging') return 1;
  if (s.phase.kind === 'settled') return 0;
  return s.attempts.filter((a) => a.kind === 'launching' || a.kind === 'running').length;
}

/** What the supervisor says of a recorded run after a host restart. */
export type RunSeen =
  | { kind: 'running'; runId: string }
  | { kind: 'ended'; runId: string; end: AttemptEnd; at: number }
  /** The supervisor has no record of it (its log removed): the attempt counts as failed. */
  | { kind: 'lost'; runId: string };

/**
 * The state of a card's attempts rebuilt after a host restart from what the card recorded (each
 * attempt's run, null for one not started) and what the supervisor says of those runs. An attempt
 * that had no run starts again as pending; the judge's run, if it had one, is the caller's to follow.
 */
export function resumed(
  runs: readonly (RunSeen | null)[],
  judgeAfterMs: number | undefined,
  judging: boolean,
): AttemptsState {
  let s = initial(runs.length, judgeAfterMs);
  runs.forEach((r, index) => {
    if (!r) return;
    s = step(s, { type: 'launching', index });
    s = step(s, { type: 'launched', index, runId: r.runId });
    if (r.kind === 'ended') s = step(s, { type: 'ended', index, end: r.end, at: r.at });
    if (r.kind === 'lost')
      s = step(s, {
        type: 'ended',
        index,
        end: { status: 'failed', text: 'the supervisor has no record of this attempt’s run' },
        at: 0,
      });
  });
  // the judge is launched only once every attempt ended and one succeeded (next(): 'judge')
  return judging && allEnded(s) && s.attempts.some(succeeded) ? { ...s, phase: { kind: 'judging' } } : s;
}
