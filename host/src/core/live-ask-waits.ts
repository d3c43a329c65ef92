/**
 * Asks that wait at the tool call, as the board sees them (issue 28): a card whose run is live and
 * waits at a tool call for the person shows in Needs input, without its run ending, until the ask is
 * answered (Allow once / Allow always / Deny: permission-asks.ts) or the supervisor's time limit
 * denies it. Kept from the run's own events (read by live-ask-events.ts, the one reader the CLI uses
 * too); what an answer allows is read from the supervisor's record of the run again (run/get), never
 * from these events.
 *
 * A card whose run is several attempts (scheduler-attempts.ts) has several live runs: each attempt's
 * asks are kept under its run, with the attempt they belong to, and the card shows the oldest waiting.
 */
import type { PermissionAsk, RunEvent } from '@runboard/supervisor/protocol';
import { liveAskEvent } from './live-ask-events.ts';

/** Which of a card's attempts a run is (from 1), when the card's run is attempts. */
export interface AttemptOf {
  n: number;
  of: number;
}

/** What one live run of a card waits for. */
export interface RunWaits {
  runId: string;
  attempt?: AttemptOf;
  asks: PermissionAsk[];
}

interface Entry {
  attempt?: AttemptOf;
  asks: Map<string, PermissionAsk>;
}

export class LiveAskWaits {
  /** card → its live runs that wait, in the order they started to wait. */
  private readonly byCard = new Map<string, Map<string, Entry>>();

  constructor(
    private readonly changed: () => void,
    /** An ask event Runboard cannot read (the run's log has it): said, never taken half. */
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** An event of the card's run `runId` (the scheduler follows every run and attempt it started or adopted). */
  event(cardId: string, runId: string, e: RunEvent, attempt?: AttemptOf): void {
    const ev = liveAskEvent(e);
    if (!ev) return;
    if (ev.type === 'malformed') return this.warn(`card ${cardId}, run ${runId}: ${ev.error}`);
    let runs = this.byCard.get(cardId);
    if (ev.type === 'waits') {
      if (!runs) this.byCard.set(cardId, (runs = new Map()));
      let entry = runs.get(runId);
      if (!entry) runs.set(runId, (entry = { ...(attempt ? { attempt } : {}), asks: new Map() }));
      for (const a of ev.asks) entry.asks.set(a.id, a);
    } else if (!this.drop(cardId, runId, ev.ask)) return;
    this.changed();
  }

  /**
   * The supervisor took the person's answer to the ask (run/answer): it waits no more, whether or not
   * the run's event saying so has come yet (that event then changes nothing). A card with several
   * attempts that wait shows each; an answered one must not show again meanwhile.
   */
  answered(cardId: string, runId: string, askId: string): void {
    if (this.drop(cardId, runId, askId)) this.changed();
  }

  private drop(cardId: string, runId: string, askId: string): boolean {
    const runs = this.byCard.get(cardId);
    const entry = runs?.get(runId);
    if (!entry?.asks.delete(askId)) return false;
    if (entry.asks.size === 0) runs!.delete(runId);
    if (runs!.size === 0) this.byCard.delete(cardId);
    return true;
  }

  /** The card's run ended (or was lost), or with `runId` one of its attempts' runs: nothing of it waits. */
  ended(cardId: string, runId?: string): void {
    const runs = this.byCard.get(cardId);
    if (!runs) return;
    if (runId === undefined) this.byCard.delete(cardId);
    else if (!runs.delete(runId)) return;
    else if (runs.size === 0) this.byCard.delete(cardId);
    this.changed();
  }

  /** What the card's live run `runId` waits for, oldest first. */
  waiting(cardId: string, runId: string | undefined): PermissionAsk[] {
    const entry = runId === undefined ? undefined : this.byCard.get(cardId)?.get(runId);
    return entry ? [...entry.asks.values()] : [];
  }

  /** The card's live runs that wait (those `live` says still go), the oldest waiting first. */
  waitingRuns(cardId: string, live: (runId: string) => boolean): RunWaits[] {
    const runs = this.byCard.get(cardId);
    if (!runs) return [];
    return [...runs]
      .filter(([runId]) => live(runId))
      .map(([runId, e]) => ({
        runId,
        ...(e.attempt ? { attempt: e.attempt } : {}),
        asks: [...e.asks.values()],
      }));
  }
}
