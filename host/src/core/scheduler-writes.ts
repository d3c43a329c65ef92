/**
 * The scheduler's writes of cards (scheduler.ts). A write is made by `make` (a status through the card
 * lifecycle, card-lifecycle.ts, which may refuse it) and put on the card with its questions. One the
 * store cannot take (the disk holding the state root full) is kept and tried again, and the card starts
 * no run meanwhile: a run's end that was never saved left the card as it was before the run, and a
 * queued card then ran again, past its retries (the soak's c0133, run 3 times with `retries: 1`).
 */
import type { BoardStore } from './board-store.ts';
import { appendQuestions } from './board-questions.ts';
import type { CardWrite } from './card-lifecycle.ts';
import type { CardStatus } from './project.ts';

/** How often card writes the store could not take are tried again (the disk may have room again). */
export const UNSAVED_RETRY_MS = 1000;

export class CardWrites {
  /** Card writes the store could not take (a full disk), kept to be tried again; the card waits. */
  private readonly unsaved = new Map<
    string,
    { write: CardWrite; why: string; status: CardStatus | undefined }
  >();
  /** Set while a card is written: the change events it causes are the scheduler's own. */
  private writingNow = false;

  constructor(private readonly store: BoardStore) {}

  /** Whether the scheduler is writing a card now (the store's change event is its own). */
  get writing(): boolean {
    return this.writingNow;
  }

  /** Cards with a write kept to be tried again. */
  get waiting(): Iterable<string> {
    return this.unsaved.keys();
  }

  get anyUnsaved(): boolean {
    return this.unsaved.size > 0;
  }

  /** Writes the card; `make` gives the write (a status through the card lifecycle, which may refuse it). */
  write(cardId: string, make: () => CardWrite): void {
    let w: CardWrite;
    try {
      w = make();
    } catch (err) {
      process.emitWarning(`runboard: could not write card ${cardId}: ${(err as Error).message}`);
      return;
    }
    this.put(cardId, w);
  }

  /**
   * The card changed (its status now; undefined: gone). A person's change of the card (or the card
   * gone) comes after the write kept for it, which is then dropped.
   */
  changed(cardId: string, status: CardStatus | undefined): void {
    if (!this.writingNow && this.unsaved.get(cardId)?.status !== status) this.unsaved.delete(cardId);
  }

  /** Why the card waits, when a write of it could not be saved. */
  reason(cardId: string): string | undefined {
    const u = this.unsaved.get(cardId);
    return u && `its last change could not be saved (${u.why}); trying again`;
  }

  /** Tries the unsaved writes again (each tick, and at least every UNSAVED_RETRY_MS while any is left). */
  retry(): void {
    for (const [id, { write }] of this.unsaved) {
      if (this.store.get(id)) this.put(id, write);
      else this.unsaved.delete(id);
    }
  }

  /** Puts a write on the card; one the store cannot take is kept (see the file's comment). */
  private put(cardId: string, w: CardWrite): void {
    this.writingNow = true;
    try {
      this.store.update(
        cardId,
        w.patch,
        w.questions ? (body) => appendQuestions(body, w.questions!) : undefined,
      );
      this.unsaved.delete(cardId);
    } catch (err) {
      const why = (err as Error).message;
      if (!this.unsaved.has(cardId)) process.emitWarning(`runboard: could not write card ${cardId}: ${why}`);
      const kept = this.unsaved.get(cardId);
      this.unsaved.set(cardId, {
        write: w,
        why,
        status: kept?.status ?? this.store.get(cardId)?.front.status,
      });
    } finally {
      this.writingNow = false;
    }
  }
}
