/**
 * The one reader of the supervisor's live-ask events (supervisor live-asks.ts), for the board
 * (live-ask-waits.ts) and the terminal (cli/answer.ts): `kind: 'ask'` with `live: true` when a run
 * starts to wait at a tool call, `kind: 'ask-answer'` when the wait ended (the person's answer, or the
 * flow's askTimeout). Validated with the protocol's own schemas; an event of either kind that does not
 * match them is `malformed`, with what is wrong in words, never a crash and never half taken.
 * Other events (and asks after the act, which have no `live`) are not live-ask events: undefined.
 */
import * as z from 'zod/mini';
import { PermissionAsk, type RunEvent } from '@runboard/supervisor/protocol';

const Waits = z.object({
  kind: z.literal('ask'),
  live: z.literal(true),
  asks: z.array(PermissionAsk).check(z.minLength(1), z.maxLength(8)),
});

const Answered = z.object({
  kind: z.literal('ask-answer'),
  ask: PermissionAsk.shape.id,
  choice: z.enum(['allow', 'deny', 'timeout']),
});

export type LiveAskEvent =
  /** The run waits at a tool call for these asks. */
  | { type: 'waits'; asks: PermissionAsk[] }
  /** The wait for `ask` ended: the person's answer, or the time limit. */
  | { type: 'answered'; ask: string; choice: 'allow' | 'deny' | 'timeout' }
  /** An ask event that does not say what it should: `error` says what is wrong. */
  | { type: 'malformed'; error: string };

/** The first problems zod found, as "asks.0.path: expected string". */
function problems(error: z.core.$ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`)
    .join('; ');
}

/** What `e` says of a live ask, or undefined when it is no live-ask event. */
export function liveAskEvent(e: RunEvent): LiveAskEvent | undefined {
  if (e.type !== 'log' || !e.data) return undefined;
  const kind = e.data.kind;
  if (kind === 'ask') {
    if (e.data.live === undefined) return undefined; // an ask after the act (the run ends needs-input)
    const w = Waits.safeParse(e.data);
    return w.success
      ? { type: 'waits', asks: w.data.asks }
      : {
          type: 'malformed',
          error: `a live ask event (#${e.seq}) Runboard cannot read: ${problems(w.error)}`,
        };
  }
  if (kind === 'ask-answer') {
    const a = Answered.safeParse(e.data);
    return a.success
      ? { type: 'answered', ask: a.data.ask, choice: a.data.choice }
      : {
          type: 'malformed',
          error: `an ask's answer event (#${e.seq}) Runboard cannot read: ${problems(a.error)}`,
        };
  }
  return undefined;
}
