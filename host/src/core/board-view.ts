/**
 * The board as the renderer sees it: each card's view (column, lock, run, progress, why it waits,
 * open questions) and the rest of the board (caps, running counts, config errors), from the store
 * and the scheduler. Reads only.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import {
  COLUMNS,
  type BoardView,
  type CardView,
  type Column,
  type FirstScreenView,
} from '../shared/board-types.ts';
import { Arrivals, compareCards, type Ranked } from './board-model.ts';
import { parseQuestions } from './board-questions.ts';
import type { BoardStore } from './board-store.ts';
import type { Card } from './project.ts';
import type { Scheduler } from './scheduler.ts';
import type { CardSchedule } from '../shared/board-types.ts';
import type { GrantStatus } from './grant-store.ts';
import { askNeeds } from '../shared/asks.ts';
import type { RunWaits } from './live-ask-waits.ts';

export class BoardViews {
  /** Cards are new objects when their file changes, so the count is parsed once per version. */
  private readonly openCount = new WeakMap<Card, number>();
  /** Each version of a card (a new object) has its own number: `CardView.rev`. */
  private readonly revs = new WeakMap<Card, number>();
  private lastRev = 0;
  /** When each card file was first seen: the order of cards without a rank. */
  readonly arrivals = new Arrivals((file) => statSync(file).mtimeMs);

  constructor(
    private readonly store: BoardStore,
    private readonly scheduler: Scheduler,
    private readonly schedules?: { viewOf(card: Card): CardSchedule | undefined },
    private readonly grants?: { status(workspace: string): GrantStatus },
    /**
     * What a card's live runs (its run, or its attempts') wait for at a tool call (live-ask-waits.ts):
     * shown in Needs input, the oldest first.
     */
    private readonly liveAsks?: (id: string) => RunWaits[],
  ) {}

  /** What a card is ordered by in its column (compareCards). */
  ranked(card: Card): Ranked {
    const rank = card.front.rank;
    return {
      id: String(card.front.id),
      file: card.file,
      rank,
      ...(rank === undefined ? { arrival: this.arrivals.of(card.file) } : {}),
    };
  }

  columnOf(id: string, card: Card): Column {
    if (!this.scheduler.isActive(id)) return card.front.status ?? 'backlog';
    // a live run waiting for the person's answer: Needs input, its run going on (locked)
    return this.liveAsks?.(id).length ? 'needs-input' : 'running';
  }

  private openQuestions(card: Card): number {
    let n = this.openCount.get(card);
    if (n === undefined) {
      n = parseQuestions(card.body).filter((q) => !q.answered).length;
      this.openCount.set(card, n);
    }
    return n;
  }

  private revOf(card: Card): number {
    let n = this.revs.get(card);
    if (n === undefined) this.revs.set(card, (n = ++this.lastRev));
    return n;
  }

  cardView(card: Card): CardView {
    const id = String(card.front.id);
    const f = card.front;
    const column = this.columnOf(id, card);
    const v: CardView = {
      id,
      file: path.relative(this.store.projectDir, card.file),
      title: f.title,
      flow: f.flow,
      column,
      locked: this.scheduler.isActive(id),
      rev: this.revOf(card),
    };
    if (f.rank !== undefined) v.rank = f.rank;
    else v.arrival = this.arrivals.of(card.file);
    const runId = this.scheduler.runIdOf(id) ?? f.lastRun;
    if (runId) v.runId = runId;
    const progress = this.scheduler.progress(id);
    if (progress && column === 'running') v.progress = progress;
    const waiting = this.scheduler.waitingReason(id);
    // a running card waits too: some of its attempts wait for a slot (scheduler-attempts.ts), or its
    // run's end could not be saved (scheduler.ts `unsaved`)
    if (waiting && (column === 'queued' || column === 'running')) v.waiting = waiting;
    if (f.failures) v.failures = f.failures;
    if (f.nextTryAt && f.failures) v.nextTryAt = f.nextTryAt;
    if (f.lastError) v.lastError = f.lastError;
    if (f.needs) v.needs = f.needs;
    if (column === 'needs-input' && v.locked) {
      const [first] = this.liveAsks!(id);
      const attempt = first!.attempt ? ` (attempt ${first!.attempt.n} of ${first!.attempt.of})` : '';
      v.needs = askNeeds(first!.asks) + attempt;
    }
    const open = this.openQuestions(card);
    if (open) v.openQuestions = open;
    const schedule = this.schedules?.viewOf(card);
    if (schedule) v.schedule = schedule;
    const grant = this.grants?.status(card.workspace);
    if (grant?.state === 'none')
      v.grant = {
        state: 'none',
        folder: card.workspace,
        reason: grant.revoked
          ? `its folder ${card.workspace} is not granted to runs: the grant of ${grant.revoked.path} was revoked (${grant.revoked.why})`
          : `its folder ${card.workspace} is not granted to runs`,
      };
    else if (grant?.state === 'stale')
      v.grant = { state: 'stale', folder: grant.grant, reason: grant.reason };
    const confirm = this.store.confirmation(card);
    if (confirm) v.confirm = confirm;
    const unreadable = this.store.unreadableReason(card.file);
    if (unreadable) v.unreadable = unreadable;
    return v;
  }

  /** The whole board (without its delta version, which the caller adds). */
  view(): Omit<BoardView, 'version'> {
    return this.viewOf(this.sorted().map((c) => this.cardView(c)));
  }

  /**
   * What a first screen shows: every column's count, and only its first `perColumn` cards (the views
   * of the others, most of a big board's cost, are not made).
   */
  firstScreen(perColumn: number): Omit<FirstScreenView, 'version'> {
    const counts = Object.fromEntries(COLUMNS.map((c) => [c, 0])) as Record<Column, number>;
    const cards: CardView[] = [];
    for (const c of this.sorted()) {
      const column = this.columnOf(String(c.front.id), c);
      if (counts[column]++ < perColumn) cards.push(this.cardView(c));
    }
    const board = this.viewOf(cards);
    for (const c of board.cards) if (c.broken) counts.backlog++;
    return { ...board, counts };
  }

  /** The cards in board order (compareCards). */
  private sorted(): Card[] {
    return this.store
      .all()
      .map((c) => ({ ...this.ranked(c), card: c }))
      .sort(compareCards)
      .map((c) => c.card);
  }

  /** The board of these card views (broken cards added at the end of Backlog). */
  private viewOf(cards: CardView[]): Omit<BoardView, 'version'> {
    const cfg = this.store.config;
    for (const b of this.store.brokenCards()) {
      const file = path.relative(this.store.projectDir, b.file);
      cards.push({
        id: `broken:${file}`,
        file,
        title: path.basename(b.file),
        flow: '',
        column: 'backlog',
        locked: true,
        broken: b.error,
      });
    }
    // what the caps count (a run that waits for the person holds its slot), not the Running column
    const counted = this.scheduler.runsCounted();
    const runningPerFlow = new Map<string, number>();
    for (const r of counted) runningPerFlow.set(r.flow, (runningPerFlow.get(r.flow) ?? 0) + 1);
    let waitingForYou = 0;
    for (const c of this.store.all()) {
      const id = String(c.front.id);
      if (this.scheduler.isActive(id)) waitingForYou += this.liveAsks?.(id).length ?? 0;
    }
    return {
      project: this.store.projectDir,
      cards,
      maxConcurrency: cfg.scheduler.maxConcurrency,
      running: counted.length,
      waitingForYou,
      flows: Object.entries(cfg.flows).map(([name, f]) => ({
        name,
        runner: f.runner,
        cap: f.cap,
        running: runningPerFlow.get(name) ?? 0,
        ...(this.scheduler.parked.has(name)
          ? { parkedUntil: new Date(this.scheduler.parked.get(name)!).toISOString() }
          : {}),
      })),
      columnLimits: cfg.scheduler.columnLimits,
      ...(this.store.configError ? { configError: this.store.configError } : {}),
      ...(this.store.configChange
        ? {
            configChange: {
              digest: this.store.configChange.digest,
              changes: this.store.configChange.changes,
            },
          }
        : {}),
    };
  }
}
