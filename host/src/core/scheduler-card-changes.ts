/**
 * What a change of a card means to the scheduler (scheduler.ts; the store's `cards` event): its own
 * write, or a person's change. The host is the only writer of a running card's state: an outside edit
 * cannot unlock a card whose run it follows, and a card that says running with no run going cannot
 * stay locked (scheduler-recovery.ts). A person who puts a card in Queued (a move, "answer & re-queue",
 * an edit) starts it afresh: its failures and backoff are cleared.
 */
import type { BoardStore } from './board-store.ts';
import { cardTransition, type CardWrite } from './card-lifecycle.ts';
import type { Card, CardStatus } from './project.ts';
import type { Recovery } from './scheduler-recovery.ts';
import type { CardWrites } from './scheduler-writes.ts';

export interface CardChangesHost {
  readonly store: BoardStore;
  readonly writes: CardWrites;
  readonly recovery: Recovery;
  idOf(card: Card): string;
  /** Whether the card's run is going (launching, running, or followed). */
  running(cardId: string): boolean;
  write(cardId: string, make: () => CardWrite): void;
  /** Look at the board again. */
  kick(): void;
}

export class CardChanges {
  /** Each card's status as last seen, to tell a person's re-queue from the scheduler's own. */
  private readonly lastStatus = new Map<string, CardStatus | undefined>();

  constructor(private readonly host: CardChangesHost) {
    for (const c of host.store.all()) this.lastStatus.set(host.idOf(c), c.front.status);
  }

  /** The card `id` was added, changed or removed (`external`: not by this host). */
  changed(id: string | undefined, external: boolean): void {
    if (!id) return;
    const { store, writes, recovery } = this.host;
    const card = store.get(id);
    const before = this.lastStatus.get(id);
    // a person's change of the card (or the card gone) comes after the write kept for it
    writes.changed(id, card?.front.status);
    if (card) this.lastStatus.set(id, card.front.status);
    else this.lastStatus.delete(id);
    // The host is the only writer of a running card's state: an outside edit cannot unlock it...
    if (card && external && this.host.running(id) && card.front.status !== 'running')
      this.host.write(id, () => ({
        patch: { status: cardTransition('followed', card.front.status, 'running') },
      }));
    // ...and a card that says running with no run going cannot stay locked
    else if (
      card &&
      external &&
      recovery.recovered &&
      card.front.status === 'running' &&
      !this.host.running(id)
    )
      void recovery.strayRunning(id);
    // a person put the card in Queued (a move, "answer & re-queue", an edit): it starts afresh
    else if (
      card &&
      !writes.writing &&
      card.front.status === 'queued' &&
      before !== 'queued' &&
      (card.front.failures !== undefined || card.front.nextTryAt !== undefined)
    )
      this.host.write(id, () => ({ patch: { failures: undefined, nextTryAt: undefined } }));
    this.host.kick();
  }
}
