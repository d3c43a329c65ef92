/**
 * The scheduler's recovery: the runs a board did not launch itself but must follow (after a host
 * restart, a schedule's run started by the supervisor while no board was open, a card edited to
 * `status: running` from outside). Each found going is followed to its end; each that ended meanwhile
 * is recorded on its card as if this board had run it.
 */
import type { RunResult } from '@runboard/supervisor/protocol';
import type { BoardStore } from './board-store.ts';
import { cardTransition, type CardWrite } from './card-lifecycle.ts';
import type { Card } from './project.ts';
import type { SupervisorClient } from './supervisor-client.ts';

/** What recovery does through the scheduler (which keeps the runs it follows). */
export interface RecoveryHost {
  readonly store: BoardStore;
  readonly client: SupervisorClient;
  stopped(): boolean;
  idOf(card: Card): string;
  /** The run of the card the scheduler follows (or launches: `null` until it has an id), if any. */
  runOf(cardId: string): string | null | undefined;
  /** Writes the card (its status through the lifecycle); a failed write is a warning. */
  write(cardId: string, make: () => CardWrite): void;
  /** Holds a slot for a run going and follows it to its end. */
  adopt(cardId: string, flow: string, runId: string): void;
  /** Records a run's end on its card (the run-outcome decision). */
  finish(cardId: string, run: RunResult): void;
  /** A rank above every card's in the column (the card goes to its top). */
  topRank(status: 'failed'): number;
  changed(): void;
  kick(): void;
  /** The card's unsettled attempts, recorded on it, are followed again (scheduler-attempts.ts): true. */
  resumeAttempts(cardId: string, card: Card): boolean;
}

export class Recovery {
  /** recover() has run: from then on a card that says running must have a run this host follows. */
  recovered = false;
  /** Cards whose stray `running` is being looked into (one look at a time). */
  private readonly strays = new Set<string>();

  constructor(private readonly host: RecoveryHost) {}

  /**
   * After a host restart: runs still going are re-attached (not re-run); cards left `running` whose run
   * ended meanwhile get its outcome; queued cards are simply queued again by the next tick.
   */
  async recover(): Promise<void> {
    const { store, client } = this.host;
    const { runs: live } = await client.list({ activeOnly: true });
    // an extraction run names the card it fills, but it is not the card's run (extract.ts follows it)
    const liveByCard = new Map(live.filter((r) => r.runner !== 'extract').map((r) => [r.card.path, r]));
    for (const card of store.all()) {
      const id = this.host.idOf(card);
      if (this.host.resumeAttempts(id, card)) continue;
      const run = liveByCard.get(card.file);
      if (run) {
        if (card.front.status !== 'running' || card.front.lastRun !== run.runId)
          this.host.write(id, () => ({
            patch: { status: cardTransition('followed', card.front.status, 'running'), lastRun: run.runId },
          }));
        this.host.adopt(id, card.front.flow, run.runId);
        continue;
      }
      if (card.front.status !== 'running') continue;
      // The card's own runs, newest first: its last run is among the first unless many started since.
      const { runs: ofCard } = await client.list({ cardPath: card.file, limit: 50 });
      const ended = card.front.lastRun ? ofCard.find((r) => r.runId === card.front.lastRun) : undefined;
      if (ended && ended.status !== 'running') this.host.finish(id, ended);
      else if (!card.front.lastRun) this.notRunning(id, card);
      else
        this.host.write(id, () => ({
          patch: { status: cardTransition('lost-run', card.front.status, 'queued') },
        }));
    }
    this.recovered = true;
    this.host.kick();
  }

  /**
   * A run of the card started elsewhere (by the supervisor, for a schedule that fired while no board was
   * open): followed to its end when it is still going, else its outcome is recorded on the card as if
   * this board had run it. A card that has another run going keeps it (the other run's outcome stays
   * in the schedule's history).
   */
  async adoptRun(cardId: string, runId: string): Promise<void> {
    if (this.host.runOf(cardId) === runId) return;
    const card = this.host.store.get(cardId);
    if (!card || this.host.runOf(cardId) !== undefined) return;
    const { run } = await this.host.client.getRun(runId);
    if (this.host.stopped() || this.host.runOf(cardId) !== undefined) return;
    if (run.status === 'running') {
      this.host.write(cardId, () => ({
        patch: {
          status: cardTransition('followed', card.front.status, 'running'),
          lastRun: runId,
          lastError: undefined,
        },
      }));
      this.host.adopt(cardId, card.front.flow, runId);
      this.host.changed();
    } else this.host.finish(cardId, run);
  }

  /**
   * A card edited to `status: running` from outside (by hand, a script, a `git pull` from another
   * machine) while this host follows no run of it. A run of the card that the supervisor has going (a
   * board elsewhere started it) is followed; otherwise the card is put right, saying why.
   */
  async strayRunning(id: string): Promise<void> {
    if (this.strays.has(id)) return;
    this.strays.add(id);
    try {
      const { runs } = await this.host.client.list({ activeOnly: true });
      const card = this.host.store.get(id);
      if (
        this.host.stopped() ||
        !card ||
        card.front.status !== 'running' ||
        this.host.runOf(id) !== undefined
      )
        return;
      const run = runs.find((r) => r.card.path === card.file && r.runner !== 'extract');
      if (run) {
        if (card.front.lastRun !== run.runId) this.host.write(id, () => ({ patch: { lastRun: run.runId } }));
        this.host.adopt(id, card.front.flow, run.runId);
      } else this.notRunning(id, card);
      this.host.changed();
    } catch (err) {
      process.emitWarning(`runboard: could not check the runs of card ${id}: ${(err as Error).message}`);
    } finally {
      this.strays.delete(id);
    }
  }

  /** The card says running but no run of it is going: to Failed, saying so (a person moves it on). */
  private notRunning(id: string, card: Card): void {
    this.host.write(id, () => ({
      patch: {
        status: cardTransition('not-running', card.front.status, 'failed'),
        rank: this.host.topRank('failed'),
        lastError:
          'the card said "status: running" but no run of it was going (edited outside the board?); ' +
          'move it to Queued to run it',
      },
    }));
  }
}
