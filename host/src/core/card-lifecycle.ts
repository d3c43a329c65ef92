/**
 * A card's lifecycle, as the host writes it into the card's `status:` (one column of the board each).
 * Every status change in host core asks `cardTransition` first; what a run's end does to its card is
 * the pure `runOutcome` below (the scheduler applies it).
 *
 *   (new card) ──created──▶ backlog ──moved (a person: drag, Run again; a schedule's fire)──▶ queued
 *   queued ──started──▶ running ──run-ended (runOutcome)──▶ done | needs-input | queued | failed | backlog
 *   running ──lost-run──▶ queued           (after a restart: its last run is not among the supervisor's)
 *   running ──not-running──▶ failed        (no run of it going: edited outside the board)
 *   needs-input ──asks-allowed──▶ queued   needs-input ──ask-denied──▶ failed
 *   any ──launch-failed──▶ queued | failed (could not launch, or the host lost the run: retry after backoff)
 *   any ──extracted──▶ backlog | needs-input (an extraction run filled the card with a task)
 *   any ──followed──▶ running              (a run of the card found going: restart, schedule, stray edit)
 *   any ──moved──▶ any                     (a person, within moveRefusal's rules)
 *
 * A run's end is recorded wherever the card is (`from` any): its file may have been edited meanwhile,
 * and a schedule's run that ended while no board was open is taken in as if this board had run it.
 * An illegal transition throws IllegalCardTransition: a bug in the host, never a person's mistake
 * (those are refused before, by moveRefusal and the callers' own checks, saying what to do).
 */
import type { ClarifyingQuestion, RunResult } from '@runboard/supervisor/protocol';
import { askNeeds } from '../shared/asks.ts';
import { CARD_STATUSES, type CardStatus } from './project.ts';
import { backoffDelay } from './scheduler-policy.ts';

/** Why a card's status changes: who changes it, on what. */
export type CardChange =
  /** A new card file: made by the board (editor, recording, extraction) or found without a status. */
  | 'created'
  /** A person moves the card (drag and drop, keyboard, Run again, a schedule's fire): moveRefusal's rules. */
  | 'moved'
  /** The scheduler launched the card's run. */
  | 'started'
  /** A run of the card is going and this host follows it (after a restart, a schedule's run, a stray edit). */
  | 'followed'
  /** The card's run ended: runOutcome says where the card goes. */
  | 'run-ended'
  /** The run could not be launched, or the host lost it: a failure (retried after backoff). */
  | 'launch-failed'
  /** After a restart: the card said running, its last run is not among the supervisor's runs. */
  | 'lost-run'
  /** The card says running but no run of it is going (edited outside the board): to Failed, saying so. */
  | 'not-running'
  /** The person allowed every permission ask of the card's last run: it runs again. */
  | 'asks-allowed'
  /** The person denied a permission ask of the card's last run. */
  | 'ask-denied'
  /** An extraction run filled the card with a task (questions: Needs input). */
  | 'extracted';

const ANY: readonly CardStatus[] = CARD_STATUSES;

/** Each change: the statuses it may start from (`undefined`: no status yet) and the ones it may write. */
export const CARD_TRANSITIONS: Readonly<
  Record<CardChange, { from: readonly (CardStatus | undefined)[]; to: readonly CardStatus[] }>
> = {
  created: { from: [undefined], to: ['backlog'] },
  moved: { from: ANY, to: ANY }, // narrowed by moveRefusal
  started: { from: ['queued'], to: ['running'] },
  followed: { from: [undefined, ...ANY], to: ['running'] },
  'run-ended': { from: [undefined, ...ANY], to: ['done', 'needs-input', 'queued', 'failed', 'backlog'] },
  'launch-failed': { from: [undefined, ...ANY], to: ['queued', 'failed'] },
  'lost-run': { from: ['running'], to: ['queued'] },
  'not-running': { from: ['running'], to: ['failed'] },
  'asks-allowed': { from: ['needs-input'], to: ['queued'] },
  'ask-denied': { from: ['needs-input'], to: ['failed'] },
  // any card with no run going (extract.ts refuses one that has)
  extracted: { from: ANY, to: ['backlog', 'needs-input'] },
};

/** A status change the lifecycle does not allow: a bug in the host (the card is not written). */
export class IllegalCardTransition extends Error {
  constructor(
    readonly change: CardChange,
    readonly from: CardStatus | undefined,
    readonly to: CardStatus,
    why: string,
  ) {
    super(
      `illegal card transition ${from ?? '(no status)'} → ${to} on "${change}": ${why} (a bug in Runboard's host: see host/src/core/card-lifecycle.ts)`,
    );
    this.name = 'IllegalCardTransition';
  }
}

/** The status to write for `change` from `from` to `to`: `to`, or IllegalCardTransition saying why not. */
export function cardTransition(change: CardChange, from: CardStatus | undefined, to: CardStatus): CardStatus {
  const t = CARD_TRANSITIONS[change];
  if (!t) throw new IllegalCardTransition(change, from, to, 'no such change');
  if (!t.from.includes(from))
    throw new IllegalCardTransition(change, from, to, `it starts only from ${t.from.map(name).join(', ')}`);
  if (!t.to.includes(to))
    throw new IllegalCardTransition(change, from, to, `it goes only to ${t.to.join(', ')}`);
  if (change === 'moved') {
    const refusal = moveRefusal(from ?? 'backlog', to, false);
    if (refusal) throw new IllegalCardTransition(change, from, to, refusal);
  }
  return to;
}

const name = (s: CardStatus | undefined): string => s ?? '(no status)';

/** Why a person may not move a card from one column to another, or undefined when they may. */
export function moveRefusal(from: CardStatus, to: CardStatus, isRunning: boolean): string | undefined {
  if (isRunning || from === 'running') {
    return to === 'running' ? undefined : 'a running card is locked: cancel its run to move it';
  }
  if (to === 'running') return 'cards enter Running when the scheduler starts them: drop it in Queued';
  // Done and Failed say how a run ended: a card that has not run since it was put back cannot go there
  if ((to === 'done' || to === 'failed') && (from === 'backlog' || from === 'queued'))
    return `a card reaches ${to === 'done' ? 'Done' : 'Failed'} when its run ends: drop it in Queued to run it`;
  return undefined;
}

/** The card's retry policy (config.yaml `scheduler.backoff`). */
export interface Backoff {
  retries: number;
  base: number;
  max: number;
}

/** A card write: the front matter patch (undefined removes a field) and questions for `## Questions`. */
export interface CardWrite {
  patch: Record<string, unknown>;
  /** Appended to the card's `## Questions` in the same write. */
  questions?: readonly ClarifyingQuestion[];
}

/** What the outcome decision needs besides the run's result; all of it read before, no I/O in here. */
export interface OutcomeContext {
  /** The card's status now (a run's end is recorded wherever the card is). */
  from: CardStatus | undefined;
  /** The card's failures so far (`failures:`). */
  failures: number;
  backoff: Backoff;
  now: number;
  /** A rank above every card's in `status`'s column (the card goes to its top). */
  topRank: (status: CardStatus) => number;
  /**
   * Why a succeeded run counts as failed after all: what its runner made could not be kept (a reflect
   * run's workflow that is not valid and whole; run-settle.ts). Undefined: the run's result stands.
   */
  notKept?: string | undefined;
  /** A run refused for a missing API key waits for the key in Queued (its flow names a provider). */
  waitsForKey?: boolean;
  /** The failure's text (its status, end and last stderr line); asked only for a failure. */
  failureText: () => string;
}

/** The run's end, as far as the card is concerned. */
export type RunEnd = Pick<RunResult, 'runId' | 'status' | 'termination' | 'summary' | 'asks' | 'questions'>;

/**
 * What a run's end does to its card:
 *   succeeded            → done (top of the column; failures and backoff cleared), unless `notKept`: failed
 *   needs-input          → needs-input (top), with the run's permission asks as `needs:`, or else its
 *                          questions (or its summary) appended to `## Questions`
 *   failed (missing key) → queued where it was, when `waitsForKey`: nothing ran, no failure counted
 *   cancelled            → backlog (top), lastError "cancelled"
 *   failed, timed-out    → failure(): queued again after backoff, or failed once the retries are spent
 */
export function runOutcome(result: RunEnd, ctx: OutcomeContext): CardWrite {
  const to = (s: CardStatus): CardStatus => cardTransition('run-ended', ctx.from, s);
  switch (result.status) {
    case 'succeeded':
      if (ctx.notKept !== undefined) return runFailure(ctx, ctx.failures + 1, ctx.notKept, result.runId);
      return {
        patch: {
          status: to('done'),
          rank: ctx.topRank('done'),
          lastRun: result.runId,
          failures: undefined,
          nextTryAt: undefined,
          lastError: undefined,
        },
      };
    case 'needs-input': {
      // permissions the sandbox refused are asked on the card instead of questions (permission-asks.ts)
      const questions = result.asks?.length
        ? []
        : result.questions?.length
          ? result.questions
          : result.summary
            ? [result.summary]
            : [];
      return {
        patch: {
          status: to('needs-input'),
          rank: ctx.topRank('needs-input'),
          ...(result.asks?.length ? { needs: askNeeds(result.asks) } : {}),
          lastRun: result.runId,
          failures: undefined,
          nextTryAt: undefined,
          lastError: undefined,
        },
        questions,
      };
    }
    case 'failed':
      if (result.termination?.reason === 'missing-key' && ctx.waitsForKey)
        // nothing was started: no failure, no backoff; the card waits in Queued where it was
        return { patch: { status: to('queued'), lastRun: result.runId, lastError: undefined } };
      if (result.termination?.reason === 'budget')
        // a retry would spend the budget again: to Failed at once, saying so
        return runFailure(
          ctx,
          Math.max(ctx.failures + 1, ctx.backoff.retries + 1),
          ctx.failureText(),
          result.runId,
        );
      return runFailure(ctx, ctx.failures + 1, ctx.failureText(), result.runId);
    case 'cancelled':
      return { patch: { status: to('backlog'), rank: ctx.topRank('backlog'), lastError: 'cancelled' } };
    default:
      return runFailure(ctx, ctx.failures + 1, ctx.failureText(), result.runId);
  }
}

function runFailure(ctx: OutcomeContext, failures: number, message: string, runId: string): CardWrite {
  return failure({ ...ctx, change: 'run-ended' }, failures, message, runId);
}

/**
 * A failure of the card's run (it ended failed, or it could not be launched, or the host lost it):
 * queued again after a backoff while `failures` is within the retries, else to the top of Failed.
 */
export function failure(
  ctx: Pick<OutcomeContext, 'from' | 'backoff' | 'now' | 'topRank'> & {
    change: 'run-ended' | 'launch-failed';
  },
  failures: number,
  message: string,
  runId?: string,
): CardWrite {
  const b = ctx.backoff;
  const retry = failures <= b.retries;
  const status = cardTransition(ctx.change, ctx.from, retry ? 'queued' : 'failed');
  return {
    patch: {
      status,
      rank: retry ? undefined : ctx.topRank('failed'),
      failures,
      nextTryAt: new Date(ctx.now + backoffDelay(failures, b.base, b.max)).toISOString(),
      lastError: message.slice(0, 2000),
      ...(runId ? { lastRun: runId } : {}),
    },
  };
}
