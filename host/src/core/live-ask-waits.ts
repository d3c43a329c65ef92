/**
 * Asks that wait at the tool call, as the board sees them (issue 28): a card whose run is live and
 * waits at a tool call for the person shows in Needs input, without its run ending, until the ask is
 * answered (Allow once / Allow always / Deny: permission-asks.ts) or the supervisor's time limit
 * denies it. Kept from the run's own events, which the supervisor writes (`kind: 'ask'` with
 * `live: true` when an ask starts to wait, `kind: 'ask-answer'` when it was answered or timed out:
 * supervisor live-asks.ts); what an answer allows is read from the supervisor's record of the run
 * again (run/get), never from these events.
 */
import type { PermissionAsk, RunEvent } from '@runboard/supervisor/protocol';

export class LiveAskWaits {
  private readonly byCard = new Map<string, { runId: string; asks: Map<string, PermissionAsk> }>();

  constructor(private readonly changed: () => void) {}

  /** An event of the card's run `runId` (the scheduler follows every run it started or adopted). */
  event(cardId: string, runId: string, e: RunEvent): void {
    if (e.type !== 'log' || !e.data) return;
    const d = e.data as { kind?: unknown; live?: unknown; asks?: unknown; ask?: unknown };
    if (d.kind === 'ask' && d.live === true && Array.isArray(d.asks)) {
      let entry = this.byCard.get(cardId);
      if (entry?.runId !== runId) this.byCard.set(cardId, (entry = { runId, asks: new Map() }));
      for (const a of d.asks as PermissionAsk[])
        if (typeof a?.id === 'string' && typeof a.kind === 'string') entry.asks.set(a.id, a);
    } else if (d.kind === 'ask-answer' && typeof d.ask === 'string') {
      const entry = this.byCard.get(cardId);
      if (entry?.runId !== runId || !entry.asks.delete(d.ask)) return;
      if (entry.asks.size === 0) this.byCard.delete(cardId);
    } else return;
    this.changed();
  }

  /** The card's run ended (or was lost): nothing of it waits any more. */
  ended(cardId: string): void {
    if (this.byCard.delete(cardId)) this.changed();
  }

  /** What the card's live run `runId` (its active run) waits for, oldest first. */
  waiting(cardId: string, runId: string | undefined): PermissionAsk[] {
    const entry = this.byCard.get(cardId);
    return entry && entry.runId === runId ? [...entry.asks.values()] : [];
  }
}
