/**
 * The board's side of scheduled runs. The supervisor owns the timers (it outlives the board); the
 * host tells it the cards' schedules (`schedule/set`, again whenever a card's schedule changes) and
 * takes its pending fires: each queues its card through the board's own move into Queued, so a fired
 * schedule goes through the same scheduler, caps and backoff as a drag. Overlap is decided here as
 * well: a card that is queued or running does not get a second run (`overlap: skip` records the fire
 * as skipped, `queue` leaves it pending until the card's run is over). Runs the supervisor started
 * while no board was open are claimed (`schedule/claim`) once the board follows them or has recorded
 * their outcome on the card.
 */
import {
  call,
  ClaimScheduledRun,
  ListSchedules,
  on,
  ScheduleDidFire,
  SetSchedules,
  TakeScheduleFire,
  type ScheduleInfo,
  type ScheduleSpec,
} from '@runboard/supervisor/protocol';
import {
  nextFire,
  nextFires,
  resolveSchedule,
  type Parsed,
  type ResolvedSchedule,
} from '@runboard/project/schedule';
import type { CardSchedule, ScheduleEdit, SchedulePreview } from '../shared/board-types.ts';
import type { BoardStore } from './board-store.ts';
import type { Card } from './project.ts';
import type { SupervisorClient } from './supervisor-client.ts';

/** The zone of this machine: what a schedule without `timezone` means. */
export const localZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

export interface ScheduleHooks {
  /** Moves the card to the end of Queued, as a drag does; throws with the reason when it may not. */
  queue(cardId: string): void;
  /** Is the card queued or running (a second run would overlap)? */
  busy(cardId: string): 'queued' | 'running' | undefined;
  /** Fires were taken: cards show their next fire anew. */
  changed(): void;
  /** A run the supervisor started for the card (no board was open): follow it, or record its outcome. */
  adopt(cardId: string, runId: string): Promise<void>;
}

/** The front matter for an edit: the phrase alone when the rest are defaults, else the object form. */
export function scheduleFrontMatter(edit: ScheduleEdit): string | Record<string, string> {
  const extra = Object.fromEntries(
    (['timezone', 'missed', 'overlap'] as const).flatMap((k) => (edit[k] ? [[k, edit[k]]] : [])),
  );
  return Object.keys(extra).length ? { text: edit.text, ...extra } : edit.text;
}

const resolved = new WeakMap<Card, Parsed<ResolvedSchedule>>();

/** The card's schedule, parsed once per card version (cards are replaced, never mutated, on change). */
export function scheduleOf(card: Card, zone?: string): Parsed<ResolvedSchedule> | undefined {
  if (card.front.schedule === undefined || card.front.schedule === null) return undefined;
  let r = resolved.get(card);
  if (!r) {
    // the zone only when a card has a schedule: asking Intl costs ~0.1 ms, per card of every board view
    r = resolveSchedule(card.front.schedule, zone ?? localZone());
    resolved.set(card, r);
  }
  return r;
}

export class HostSchedules {
  private lastSent = '';
  /** Cards a person has just confirmed (changed outside the board): registered without `fromSave`. */
  private readonly confirmedNow = new Set<string>();
  private syncTimer: NodeJS.Timeout | undefined;
  private takeTimer: NodeJS.Timeout | undefined;
  private taking = false;
  private again = false;
  /** Some fire is left pending (overlap: queue): look again when the board changes. */
  private waiting = false;
  /**
   * Per card, fires that were pending behind one this board queued (a missed catch-up under
   * `missed: all`): they run after it, one at a time, whatever the overlap rule.
   */
  private readonly behind = new Map<string, Set<string>>();
  private closed = false;
  /** The supervisor's schedule clock minus ours (0 but in tests that inject its clock). */
  private offset = 0;

  constructor(
    private readonly store: BoardStore,
    private readonly client: SupervisorClient,
    private readonly hooks: ScheduleHooks,
  ) {
    this.listen();
    // A new supervisor (or connection) knows nothing of this board: register again, take its fires.
    client.on('reconnected', () => {
      this.listen();
      this.lastSent = '';
      void this.start().catch((err) => this.warn(err));
    });
    store.on('cards', () => this.syncSoon());
  }

  private listen(): void {
    on(this.client.conn, ScheduleDidFire, (p) => {
      if (p.project === this.store.projectDir) this.takeSoon(0);
    });
  }

  /** Registers the schedules, then takes what fired while no board was open. */
  async start(): Promise<void> {
    await this.sync();
    await this.takePending();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.syncTimer);
    clearTimeout(this.takeTimer);
  }

  /** The board changed (a run ended, a card moved): a fire left waiting may be taken now. */
  boardChanged(): void {
    if (this.waiting) this.takeSoon(200);
  }

  /** What the card shows: the schedule in words and its next fire, or why it cannot fire. */
  viewOf(card: Card): CardSchedule | undefined {
    const r = scheduleOf(card);
    if (!r) return undefined;
    if (!r.ok) {
      const raw = card.front.schedule as { text?: unknown; cron?: unknown } | string;
      const source = typeof raw === 'string' ? raw : String(raw?.text ?? raw?.cron ?? '');
      return { text: source, source, error: r.error };
    }
    const { text, source, timezone, missed, overlap, cron } = r.value;
    const next = nextFire(cron, timezone, Date.now() + this.offset);
    return {
      text,
      source,
      timezone,
      missed,
      overlap,
      ...(next !== null ? { next: new Date(next).toISOString() } : {}),
    };
  }

  /** What an edit would mean, shown before it is saved. */
  preview(edit: ScheduleEdit): SchedulePreview {
    const r = resolveSchedule(scheduleFrontMatter(edit), localZone());
    if (!r.ok) return { ok: false, error: r.error };
    const { text, cron, timezone } = r.value;
    const next = nextFires(cron, timezone, Date.now() + this.offset, 5).map((t) => new Date(t).toISOString());
    return { ok: true, text, cron, timezone, next };
  }

  /** The supervisor's record of the card's schedule (next fires, pending fires, history). */
  async infoOf(card: Card): Promise<ScheduleInfo | undefined> {
    return (await this.list()).find((s) => s.cardPath === card.file);
  }

  /** The supervisor's schedules of this project; its clock is the one fire times are shown in. */
  private async list(): Promise<ScheduleInfo[]> {
    const { now, schedules } = await call(this.client.conn, ListSchedules, {
      project: this.store.projectDir,
    });
    this.offset = Date.parse(now) - Date.now();
    return schedules;
  }

  private specs(): ScheduleSpec[] {
    const out: ScheduleSpec[] = [];
    for (const card of this.store.all()) {
      const r = scheduleOf(card);
      // a schedule changed outside the board is not registered until a person confirms the card
      if (!r?.ok || this.store.confirmation(card)) continue;
      const { cron, timezone, text, missed, overlap } = r.value;
      out.push({
        cardPath: card.file,
        cardId: String(card.front.id),
        title: card.front.title,
        cron,
        timezone,
        text,
        missed,
        overlap,
        // a fire since the card was saved is its own; one that came while it waited for a Confirm
        // is not run by the Confirm (decision 111)
        ...(this.confirmedNow.has(card.file) ? {} : { fromSave: true }),
      });
    }
    return out.sort((a, b) => (a.cardPath < b.cardPath ? -1 : 1));
  }

  private syncSoon(): void {
    if (this.closed) return;
    clearTimeout(this.syncTimer);
    this.syncTimer = setTimeout(() => void this.sync().catch((err) => this.warn(err)), 100);
  }

  /** Tells the supervisor the schedules, when they changed since last time. */
  async sync(): Promise<void> {
    const schedules = this.specs();
    const key = JSON.stringify(schedules);
    if (key === this.lastSent || this.client.isClosed) return;
    await call(this.client.conn, SetSchedules, { project: this.store.projectDir, schedules });
    this.lastSent = key;
    for (const s of schedules) this.confirmedNow.delete(s.cardPath); // registered from the Confirm on
  }

  /** A person confirmed the card (its text changed outside the board): it schedules from now on. */
  confirmed(file: string): void {
    this.confirmedNow.add(file);
  }

  private takeSoon(ms: number): void {
    if (this.closed) return;
    clearTimeout(this.takeTimer);
    this.takeTimer = setTimeout(() => void this.takePending().catch((err) => this.warn(err)), ms);
  }

  /** Takes the oldest pending fire of each card: queues the card, or decides the overlap. */
  async takePending(): Promise<void> {
    if (this.taking) {
      this.again = true;
      return;
    }
    this.taking = true;
    try {
      do {
        this.again = false;
        this.waiting = false;
        for (const s of await this.list()) {
          for (const r of s.started) if (!this.closed) await this.claim(s, r.runId);
          const fireAt = s.pending[0];
          if (fireAt && !this.closed) await this.takeOne(s, fireAt);
        }
      } while (this.again && !this.closed);
    } finally {
      this.taking = false;
      this.hooks.changed();
    }
  }

  /** Shows a run the supervisor started on its card, then tells the supervisor the board has it. */
  private async claim(s: ScheduleInfo, runId: string): Promise<void> {
    const card = this.store.all().find((c) => c.file === s.cardPath);
    // A run whose record cannot be read is still claimed: its id stays in the schedule's history.
    if (card) await this.hooks.adopt(String(card.front.id), runId).catch((err) => this.warn(err));
    await call(this.client.conn, ClaimScheduledRun, { cardPath: s.cardPath, runId });
  }

  private async takeOne(s: ScheduleInfo, fireAt: string): Promise<void> {
    const take = (decision: 'queued' | 'skipped', reason: string) =>
      call(this.client.conn, TakeScheduleFire, { cardPath: s.cardPath, fireAt, decision, reason });
    const card = this.store.all().find((c) => c.file === s.cardPath);
    if (!card) return void (await take('skipped', 'the card no longer exists'));
    const id = String(card.front.id);
    const unconfirmed = this.store.confirmation(card);
    if (unconfirmed) return void (await take('skipped', unconfirmed.reason));
    if (this.store.unreadableReason(card.file)) {
      this.waiting = true; // taken once its file reads again (a write going on)
      return;
    }
    const busy = this.hooks.busy(id);
    if (busy) {
      if (s.overlap === 'queue' || this.behind.get(s.cardPath)?.has(fireAt)) {
        this.waiting = true; // taken when the card's run is over
        return;
      }
      await take(
        'skipped',
        busy === 'running'
          ? 'overlap: the previous run is still running'
          : 'overlap: the card is already queued',
      );
      if (s.pending.length > 1) this.again = true;
      return;
    }
    try {
      this.hooks.queue(id);
    } catch (err) {
      return void (await take('skipped', `the board could not queue the card: ${(err as Error).message}`));
    }
    await take('queued', 'queued by the board');
    const rest = this.behind.get(s.cardPath) ?? new Set(s.pending.slice(1));
    rest.delete(fireAt);
    if (rest.size) this.behind.set(s.cardPath, rest);
    else this.behind.delete(s.cardPath);
    if (s.pending.length > 1) this.waiting = true; // the next one once this run is over
  }

  private warn(err: unknown): void {
    if (!this.closed && !this.client.isClosed)
      process.emitWarning(`runboard schedules: ${(err as Error).message}`);
  }
}
