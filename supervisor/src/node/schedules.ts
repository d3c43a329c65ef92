/**
 * The supervisor's schedule book: the cards' schedules (told by hosts), one timer for the next due fire
 * of all of them, and a record of every fire and decision in `<state>/supervisor/schedules.json`.
 *
 * A fire becomes a *pending fire*. While a board of the card's project is connected, the board takes
 * it into its scheduler (the same queue, caps and backoff as a drag; see docs/decisions.md). While none
 * is, the book starts the run itself through the launcher (the project's config read as the board reads
 * it, within its maxConcurrency and the flow's cap; a fire that meets a full cap waits) and keeps the
 * run as *started* until a board opens and claims it: the board then follows it or records its outcome
 * on the card, so the run shows there and is never started twice.
 *
 * Missed fires (the supervisor was down, the machine slept) are decided by the card's policy:
 * `skip` (none), `latest_once` (the newest one, the default) or `all` (at most MAX_MISSED_RUNS, the
 * newest); every fire, taken or not, leaves a decision in the card's history.
 */
import { EventEmitter } from 'node:events';
import { readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import {
  ClaimScheduledRun,
  handle,
  JsonRpcCodes,
  ListSchedules,
  notify,
  ResponseError,
  ScheduleDidFire,
  SetSchedules,
  TakeScheduleFire,
  type MessageConnection,
  type ScheduleDecision,
  type ScheduleInfo,
  type ScheduleSpec,
} from '../protocol/index.ts';
import { checkCron, firesBetween, MAX_MISSED_RUNS, nextFire, nextFires } from '@runboard/project/schedule';

/** A fire handled this late (the event loop was blocked, a short suspend) still counts as on time. */
const ON_TIME_MS = 60_000;
/** The timer looks at the clock at least this often: timers do not run while the machine sleeps. */
const MAX_SLEEP_MS = 60_000;
const HISTORY = 100;

interface Entry {
  spec: ScheduleSpec;
  project: string;
  /** Fires at or before this time are decided. */
  through: number;
  lastFire?: number;
  pending: number[];
  history: ScheduleDecision[];
  /** Runs the book started (no board open) that no board has claimed yet. */
  started: { fireAt: number; runId: string }[];
  /** Cached: the first fire after `through` (null: never again). */
  next?: number | null;
  /** Why the oldest pending fire waits (no board open: a cap, the card's previous run). */
  waiting?: string;
}

interface BookFile {
  version: 1;
  entries: Omit<Entry, 'next' | 'waiting'>[];
}

/** What became of an attempt to start a card's run: started, must wait (why), or cannot (why). */
export type LaunchOutcome = { runId: string } | { wait: string } | { refuse: string };

/** How the book starts runs while no board of the project is open (schedule-launcher.ts). */
export interface ScheduleLauncher {
  launch(project: string, cardPath: string): LaunchOutcome;
  /**
   * A check that needs an answer from elsewhere before the launch (a fleet: can any host run this
   * card?): why not, or undefined; no promise when there is nothing to ask (the launch goes on at once).
   */
  precheck?(project: string, cardPath: string): Promise<string | undefined> | undefined;
  /** Resolves when the run has ended (undefined: not a run of this supervisor). */
  whenEnded(runId: string): Promise<unknown> | undefined;
}

export interface ScheduleBookOptions {
  file: string;
  log: Logger;
  /** Injected for tests (RUNBOARD_SCHEDULE_CLOCK); Date.now otherwise. */
  now?: () => number;
  /** Does this card have a run going (the overlap rule)? */
  isRunning?: (cardPath: string) => boolean;
  /** Starts runs of fires while no board of their project is connected (none: fires wait for a board). */
  launcher?: ScheduleLauncher;
  /**
   * When the card file was last saved, on the book's clock (schedule-clock.ts `cardSavedAt`): a
   * schedule a connected board registers fires from then, not only from its registration.
   */
  savedAt?: (cardPath: string) => number | undefined;
}

const iso = (t: number): string => new Date(t).toISOString();
const sameSchedule = (a: ScheduleSpec, b: ScheduleSpec): boolean =>
  a.cron === b.cron && a.timezone === b.timezone;

export class ScheduleBook extends EventEmitter<{
  fired: [{ project: string; cardPath: string; fireAt: string }];
}> {
  private readonly entries = new Map<string, Entry>();
  /** Card → the fire whose precheck is asking (`checking`) or has passed (`admitted`). */
  private readonly checking = new Map<string, number>();
  private readonly admitted = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private stopped = false;
  /** Projects with a board connected (it registered their schedules): how many connections. */
  private readonly boards = new Map<string, number>();
  /** When the first of those connections registered the project's schedules (the book's clock). */
  private readonly attachedAt = new Map<string, number>();

  constructor(private readonly opts: ScheduleBookOptions) {
    super();
    this.now = opts.now ?? Date.now;
  }

  /** Loads the book and decides what was missed while the supervisor was down; arms the timer. */
  start(): void {
    let saved: BookFile | undefined;
    try {
      saved = JSON.parse(readFileSync(this.opts.file, 'utf8')) as BookFile;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        // Kept aside, not overwritten: a person can read what it held.
        const aside = `${this.opts.file}.unreadable-${Date.now()}`;
        try {
          renameSync(this.opts.file, aside);
        } catch {
          // already gone
        }
        this.opts.log.error(
          { err: (err as Error).message, file: this.opts.file, keptAs: aside },
          'schedule book unreadable; starting empty (the hosts register their schedules again)',
        );
      }
    }
    for (const e of saved?.entries ?? []) {
      if (checkCron(e.spec.cron, e.spec.timezone)) continue; // a zone this runtime no longer knows
      this.entries.set(e.spec.cardPath, {
        ...e,
        pending: e.pending ?? [],
        history: e.history ?? [],
        started: e.started ?? [],
      });
    }
    this.catchUp(true);
    this.startPending();
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The clock was moved (a test's file clock, schedule-clock.ts): what is due now is decided at once. */
  clockMoved(): void {
    if (this.stopped) return;
    this.catchUp(false);
    this.startPending();
    this.arm();
  }

  /** The book's clock (injected in tests). */
  clock(): number {
    return this.now();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Replaces one project's schedules. Returns the error of the first bad one (nothing changes then). */
  set(project: string, specs: ScheduleSpec[]): string | null {
    for (const s of specs) {
      const err = checkCron(s.cron, s.timezone);
      if (err) return `${s.cardPath}: ${err}`;
    }
    const now = this.now();
    const wanted = new Map(specs.map((s) => [s.cardPath, s]));
    for (const [cardPath, e] of this.entries)
      if (e.project === project && !wanted.has(cardPath)) this.entries.delete(cardPath);
    for (const spec of specs) {
      const old = this.entries.get(spec.cardPath);
      if (old && sameSchedule(old.spec, spec)) {
        old.spec = spec; // title, policies, text may change without resetting the schedule
        old.project = project;
        continue;
      }
      // New or changed: it fires from when the card was saved, or from now when no board was there.
      this.entries.set(spec.cardPath, {
        spec,
        project,
        through: this.firesFrom(project, spec, now, old?.lastFire),
        pending: old?.pending ?? [],
        history: old?.history ?? [],
        started: old?.started ?? [],
        ...(old?.lastFire !== undefined ? { lastFire: old.lastFire } : {}),
      });
    }
    this.save();
    this.arm();
    return null;
  }

  /**
   * Where a new or changed schedule starts (`through`: fires at or before it are not its own). Its
   * card was saved before the board could register it (the board reads the file, then sends it): a
   * fire due in between is the card's and fires once, unless the card's old schedule already fired it
   * (`lastFire`). Only while a board of the project was connected when the card was saved, and when
   * the board says so (`fromSave`: not a card that waited for a Confirm); otherwise it fires from now
   * on (nothing before counts as missed), as before (decision 111).
   */
  private firesFrom(project: string, spec: ScheduleSpec, now: number, lastFire: number | undefined): number {
    const attached = this.attachedAt.get(project);
    const saved = attached === undefined || !spec.fromSave ? undefined : this.opts.savedAt?.(spec.cardPath);
    // `saved - 1`: a fire at the very instant of the save is after it (fires are in (through, now])
    let from = saved === undefined ? now : Math.min(now, Math.max(saved - 1, attached!));
    if (lastFire !== undefined) from = Math.max(from, lastFire);
    return from;
  }

  list(project?: string): ScheduleInfo[] {
    const now = this.now();
    return [...this.entries.values()]
      .filter((e) => project === undefined || e.project === project)
      .map((e) => ({
        ...e.spec,
        project: e.project,
        next: nextFires(e.spec.cron, e.spec.timezone, Math.max(now, e.through), 5).map(iso),
        ...(e.lastFire !== undefined ? { lastFire: iso(e.lastFire) } : {}),
        pending: e.pending.map(iso),
        history: e.history,
        started: e.started.map((r) => ({ fireAt: iso(r.fireAt), runId: r.runId })),
        ...(e.waiting !== undefined ? { waiting: e.waiting } : {}),
      }));
  }

  /** The project folders of the schedules in the book (each as real a path as it can be resolved). */
  projects(): string[] {
    const out = new Set<string>();
    for (const e of this.entries.values()) {
      out.add(e.project);
      try {
        out.add(realpathSync(e.project));
      } catch {
        // gone: its own path is enough
      }
    }
    return [...out];
  }

  /** Is a board of `project` connected (it, not the cards' files, tells the project's schedules)? */
  hasBoard(project: string): boolean {
    return this.boards.has(project);
  }

  /** A board of `project` connected: from now on it takes the project's fires. */
  attach(project: string): void {
    if (!this.boards.has(project)) this.attachedAt.set(project, this.now());
    this.boards.set(project, (this.boards.get(project) ?? 0) + 1);
    for (const e of this.entries.values()) if (e.project === project) delete e.waiting;
  }

  /** A board of `project` went away: when it was the last, the book starts the fires it left pending. */
  detach(project: string): void {
    const n = (this.boards.get(project) ?? 0) - 1;
    if (n > 0) return void this.boards.set(project, n);
    this.boards.delete(project);
    this.attachedAt.delete(project);
    this.startPending();
  }

  /** A board took over a run the book started: it shows it on the card from now on. */
  claim(cardPath: string, runId: string): boolean {
    const e = this.entries.get(cardPath);
    const i = e ? e.started.findIndex((r) => r.runId === runId) : -1;
    if (!e || i < 0) return false;
    e.started.splice(i, 1);
    this.save();
    return true;
  }

  /**
   * Starts the pending fires of projects no board has open, oldest first, each card's one at a time (a
   * `queue` fire waits for the card's run to end); a fire that meets a full cap waits for a run to end.
   */
  private startPending(): void {
    const launcher = this.opts.launcher;
    if (!launcher || this.stopped) return;
    let changed = false;
    for (const e of this.entries.values()) {
      if (this.boards.has(e.project)) continue;
      delete e.waiting;
      while (e.pending.length) {
        if (this.opts.isRunning?.(e.spec.cardPath)) {
          e.waiting = 'the previous run of the card is still going';
          break;
        }
        const t = e.pending[0]!;
        const card = e.spec.cardPath;
        if (this.checking.get(card) === t) {
          e.waiting = 'asking the fleet whether a host can run it';
          break;
        }
        const check = this.admitted.get(card) === t ? undefined : launcher.precheck?.(e.project, card);
        if (check) {
          e.waiting = 'asking the fleet whether a host can run it';
          this.checking.set(card, t);
          void check
            .catch((err: Error) => {
              this.opts.log.warn({ card, err: err.message }, 'schedule precheck');
              return undefined; // the launch itself says why, if it cannot go
            })
            .then((why) => this.prechecked(e, t, why));
          break;
        }
        this.admitted.delete(card);
        const out = launcher.launch(e.project, card);
        if ('wait' in out) {
          e.waiting = out.wait;
          break;
        }
        e.pending.shift();
        changed = true;
        if ('refuse' in out) {
          this.decide(
            e,
            t,
            'skipped',
            `no board was open and the supervisor could not start the run: ${out.refuse}`,
          );
          continue;
        }
        e.started.push({ fireAt: t, runId: out.runId });
        if (e.started.length > HISTORY) e.started.splice(0, e.started.length - HISTORY);
        this.decide(e, t, 'started', 'no board was open: the supervisor started the run', out.runId);
        this.opts.log.info({ card: e.spec.cardPath, runId: out.runId }, 'scheduled run started');
        void launcher.whenEnded(out.runId)?.then(() => this.startPendingSoon());
      }
    }
    if (changed) this.save();
  }

  /** The precheck of fire `t` answered: refused (recorded as skipped, saying why) or admitted. */
  private prechecked(e: Entry, t: number, why: string | undefined): void {
    if (this.checking.get(e.spec.cardPath) === t) this.checking.delete(e.spec.cardPath);
    if (this.stopped || e.pending[0] !== t || this.boards.has(e.project)) return this.startPendingSoon();
    if (why) {
      e.pending.shift();
      this.decide(e, t, 'skipped', `no board was open and the supervisor could not start the run: ${why}`);
      this.save();
    } else this.admitted.set(e.spec.cardPath, t);
    this.startPendingSoon();
  }

  private startPendingSoon(): void {
    if (!this.stopped) setImmediate(() => this.startPending());
  }

  /** A host took a pending fire (queued its card, or skipped it). */
  take(cardPath: string, fireAt: string, decision: 'queued' | 'skipped', reason: string): boolean {
    const e = this.entries.get(cardPath);
    const t = Date.parse(fireAt);
    const i = e ? e.pending.indexOf(t) : -1;
    if (!e || i < 0) return false;
    e.pending.splice(i, 1);
    this.decide(e, t, decision, reason);
    this.save();
    return true;
  }

  /** Decides every fire due by now; `startup`: everything before now was missed. */
  private catchUp(startup: boolean): void {
    const now = this.now();
    let changed = false;
    for (const e of this.entries.values()) {
      if (e.next === undefined) e.next = nextFire(e.spec.cron, e.spec.timezone, e.through);
      if (e.next === null || e.next > now) continue;
      const { fires, more, atLeast } = firesBetween(e.spec.cron, e.spec.timezone, e.through, now, HISTORY);
      e.through = now;
      e.next = nextFire(e.spec.cron, e.spec.timezone, now);
      changed = true;
      if (!fires.length) continue;
      const late = now - fires[0]!;
      if (!startup && fires.length === 1 && more === 0 && late <= ON_TIME_MS) this.fire(e, fires[0]!);
      else this.missed(e, fires, atLeast ? `${more} or more` : String(more), startup);
    }
    if (changed) this.save();
  }

  private missed(e: Entry, fires: number[], more: string, startup: boolean): void {
    const why = startup ? 'missed: the supervisor was not running' : 'missed: the machine slept or was busy';
    const policy = e.spec.missed;
    const keep = policy === 'skip' ? 0 : policy === 'latest_once' ? 1 : MAX_MISSED_RUNS;
    // The kept fires are one catch-up: they do not overlap one another (only what waited before them).
    const before = e.pending.length;
    if (more !== '0')
      this.decide(
        e,
        fires[0]!,
        'skipped',
        `${why}; ${more} earlier fire(s) before this one skipped too (policy ${policy})`,
      );
    fires.forEach((t, i) => {
      if (i < fires.length - keep) {
        const cap =
          policy === 'all'
            ? ` (policy all runs at most the newest ${MAX_MISSED_RUNS})`
            : ` (policy ${policy})`;
        this.decide(e, t, 'skipped', `${why}${cap}`);
      } else this.fire(e, t, `${why}; run (policy ${policy})`, before);
    });
  }

  /**
   * A fire: pending for a host, unless the overlap rule skips it. `earlier`: how many pending fires it
   * may overlap (a missed catch-up passes the count from before its own fires).
   */
  private fire(e: Entry, t: number, why = 'on time', earlier = e.pending.length): void {
    e.lastFire = t;
    const busy = this.opts.isRunning?.(e.spec.cardPath) || earlier > 0;
    if (busy && e.spec.overlap === 'skip') {
      this.decide(
        e,
        t,
        'skipped',
        earlier
          ? 'overlap: an earlier fire still waits for the board'
          : 'overlap: the previous run is still running',
      );
      return;
    }
    if (e.pending.length >= MAX_MISSED_RUNS) {
      const dropped = e.pending.shift()!;
      this.decide(
        e,
        dropped,
        'skipped',
        `more than ${MAX_MISSED_RUNS} fires waiting for the board; the oldest goes`,
      );
    }
    e.pending.push(t);
    const board = this.boards.has(e.project) || !this.opts.launcher;
    this.decide(e, t, 'pending', board ? `${why}: waiting for the board to queue the card` : why);
    this.emit('fired', { project: e.project, cardPath: e.spec.cardPath, fireAt: iso(t) });
    if (!board) this.startPendingSoon();
  }

  private decide(
    e: Entry,
    t: number,
    decision: ScheduleDecision['decision'],
    reason: string,
    runId?: string,
  ): void {
    e.history.push({ fireAt: iso(t), at: iso(this.now()), decision, reason, ...(runId ? { runId } : {}) });
    if (e.history.length > HISTORY) e.history.splice(0, e.history.length - HISTORY);
  }

  /** One timer for the soonest fire of all schedules (re-armed at least every minute). */
  private arm(): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    let soonest = Infinity;
    for (const e of this.entries.values()) {
      if (e.next === undefined) e.next = nextFire(e.spec.cron, e.spec.timezone, e.through);
      if (e.next !== null && e.next < soonest) soonest = e.next;
    }
    const wait = Math.max(0, Math.min(soonest - this.now(), MAX_SLEEP_MS));
    this.timer = setTimeout(() => {
      this.catchUp(false);
      this.startPending(); // caps freed by runs this book did not start
      this.arm();
    }, wait);
    this.timer.unref();
  }

  private save(): void {
    const data: BookFile = {
      version: 1,
      entries: [...this.entries.values()].map(({ next: _next, waiting: _waiting, ...e }) => e),
    };
    const tmp = path.join(
      path.dirname(this.opts.file),
      `.${path.basename(this.opts.file)}.${process.pid}.tmp`,
    );
    try {
      writeFileSync(tmp, JSON.stringify(data), { mode: 0o600 });
      renameSync(tmp, this.opts.file);
    } catch (err) {
      rmSync(tmp, { force: true }); // what a full disk cut short would hold space for nothing
      this.opts.log.error({ err: (err as Error).message }, 'cannot write the schedule book');
    }
  }
}

/**
 * The schedule requests on one client connection. A connection that registers schedules hears about
 * every fire (`schedule/didFire`) until it closes.
 */
export function serveSchedules(conn: MessageConnection, book: ScheduleBook): void {
  let listening = false;
  /** The projects whose board this connection is (it registered their schedules). */
  const projects = new Set<string>();
  const onFired = (p: { project: string; cardPath: string; fireAt: string }): void => {
    notify(conn, ScheduleDidFire, p).catch(() => undefined);
  };
  handle(conn, SetSchedules, (p) => {
    const err = book.set(p.project, p.schedules);
    if (err) throw new ResponseError(JsonRpcCodes.InvalidParams, `schedule/set: ${err}`);
    if (!projects.has(p.project)) {
      projects.add(p.project);
      book.attach(p.project);
    }
    if (!listening) {
      listening = true;
      book.on('fired', onFired);
      conn.onClose(() => {
        book.off('fired', onFired);
        for (const project of projects) book.detach(project);
      });
    }
    return { schedules: p.schedules.length };
  });
  handle(conn, ClaimScheduledRun, (p) => ({ claimed: book.claim(p.cardPath, p.runId) }));
  handle(conn, ListSchedules, (p) => ({
    now: new Date(book.clock()).toISOString(),
    schedules: book.list(p.project),
  }));
  handle(conn, TakeScheduleFire, (p) => ({ taken: book.take(p.cardPath, p.fireAt, p.decision, p.reason) }));
}
