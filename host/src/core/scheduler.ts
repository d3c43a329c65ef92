/**
 * The Scheduler: carries out the pure policy (scheduler-policy.ts) against the board store and the
 * supervisor. Each run is one task of a p-queue whose concurrency is the global maxConcurrency (kept in
 * step with config.yaml); the queue holds the run's slot until the run has ended. Which card goes next
 * and why the others wait is asked of one object, its admission (scheduler-admission.ts): the policy
 * over the Queued column and the inputs each part gives (a card's attempts: scheduler-attempts.ts;
 * provider caps and rate-limit parking: scheduler-caps.ts; the machine: scheduler-machine.ts; the real display:
 * scheduler-resources.ts; provider keys: scheduler-keys.ts).
 *
 * Card state it writes (front matter): status, lastRun, failures, nextTryAt, lastError. Every status it
 * writes goes through the card lifecycle (card-lifecycle.ts: the transitions, and runOutcome, what a
 * run's end does to its card); a write the disk cannot take is kept and tried again
 * (scheduler-writes.ts); what a card's change by a person means: scheduler-card-changes.ts. Following
 * runs it did not launch: scheduler-recovery.ts.
 */
import { EventEmitter } from 'node:events';
import PQueue from 'p-queue';
import { DisplayBusy, ResponseError, type RunResult } from '@runboard/supervisor/protocol';
import type { RunEvent } from '@runboard/supervisor/protocol';
import type { BoardStore } from './board-store.ts';
import { compareCards } from './board-model.ts';
import {
  cardTransition,
  failure,
  runOutcome,
  type CardWrite,
  type OutcomeContext,
} from './card-lifecycle.ts';
import { CardChanges } from './scheduler-card-changes.ts';
import { isAskNeeds } from '../shared/asks.ts';
import { succeededRunNotKept } from './workflow-store.ts';
import type { GrantStore } from './grant-store.ts';
import { launchRequest } from './launch.ts';
import { RateLimitParks } from './scheduler-caps.ts';
import { followRun } from './scheduler-follow.ts';
import type { Card, CardStatus } from './project.ts';
import { failureText } from './run-end-text.ts';
import {
  Admission,
  attemptsInput,
  blockedInput,
  columnInput,
  machineInput,
  parkingInput,
  realDisplayInput,
  REAL_DISPLAY,
  SupervisorWatch,
} from './scheduler-admission.ts';
import { KeyWaits } from './scheduler-keys.ts';
import { Recovery } from './scheduler-recovery.ts';
import { BusyResources } from './scheduler-resources.ts';
import { attemptsOf, CardAttempts, type AttemptsRecord } from './scheduler-attempts.ts';
import type { RunningCard } from './scheduler-policy.ts';
import { CardWrites, UNSAVED_RETRY_MS } from './scheduler-writes.ts';
import { launchKey } from './scheduler-launch-key.ts';
import { SupervisorUnavailable, type SupervisorClient } from './supervisor-client.ts';

export { lastStderrLine } from './run-end-text.ts';

export interface Progress {
  fraction?: number | undefined;
  message?: string | undefined;
}

interface Active {
  cardId: string;
  flow: string;
  runId?: string;
  cancelRequested?: boolean;
}

export interface SchedulerEvents {
  /** Something shown on cards changed (waiting reasons, progress, run ids). */
  changed: [];
  /** Timing of a dispatch: from a slot freeing (or a kick) to the launch request being sent. */
  dispatch: [{ cardId: string; sinceFreeMs: number }];
  /**
   * An event of a card's run (or of attempt n of `of` of it), and a run's end (after its card was
   * written), or an attempt's run's end: live asks (live-ask-waits.ts).
   */
  runEvent: [cardId: string, runId: string, event: RunEvent, attempt?: { n: number; of: number }];
  ended: [cardId: string, result: RunResult];
  attemptEnded: [cardId: string, runId: string];
}

export class Scheduler extends EventEmitter<SchedulerEvents> {
  private readonly queue = new PQueue({ concurrency: 4 });
  private readonly active = new Map<string, Active>();
  private readonly byRun = new Map<string, string>();
  private readonly progressOf = new Map<string, Progress>();
  private waiting: Record<string, string> = {};
  private wakeTimer: NodeJS.Timeout | undefined;
  private tickPending = false;
  private freedAt = 0;
  private stopped = false;
  /** Flows and provider keys parked by a rate limit (scheduler-caps.ts). */
  private readonly parks: RateLimitParks;
  /** Exclusive resources held by runs this board did not start (see resourceBusy). */
  private readonly busy: BusyResources;
  /** Runs this board follows without having launched them (after a restart, a schedule's, a stray's). */
  private readonly recovery: Recovery;
  /** Providers whose runs were refused for a missing API key: their flows wait until it is set. */
  private readonly keys: KeyWaits;
  /** Why no card may start now: the supervisor is gone and not back yet (scheduler-admission.ts). */
  private readonly supervisor: SupervisorWatch;
  /** Its writes of cards, and those kept to be tried again (scheduler-writes.ts). */
  private readonly writes: CardWrites;
  /** Asks the person allowed once, per card: its next launch carries them (the supervisor checks each). */
  private readonly allowOnce = new Map<string, { runId: string; ask: string }[]>();
  /** Cards whose run is several attempts and a judge (config `attempts:`; scheduler-attempts.ts). */
  private readonly attempts: CardAttempts;
  /** May a card start now, and why not: the policy over every input above (scheduler-admission.ts). */
  private readonly admission: Admission;

  constructor(
    private readonly store: BoardStore,
    private readonly client: SupervisorClient,
    private readonly grants: GrantStore,
    private readonly now: () => number = Date.now,
    /**
     * Why a succeeded run counts as failed after all: what its runner made could not be kept (a reflect
     * run's workflow; workflow-store.ts). Runner-specific, so given by the composition.
     */
    private readonly notKept: (
      cardFile: string,
      result: RunResult,
    ) => string | undefined = succeededRunNotKept,
  ) {
    super();
    this.writes = new CardWrites(store);
    this.busy = new BusyResources(client, () => this.kick());
    this.parks = new RateLimitParks(
      () => this.store.config,
      () => this.now(),
    );
    this.attempts = new CardAttempts({
      client,
      now: () => this.now(),
      enqueue: (task) => void this.queue.add(task),
      changed: () => {
        this.emit('changed');
        this.kick();
      },
      started: (cardId, runId) => this.attemptStarted(cardId, runId),
      settle: (cardId, end, text, record) => this.attemptsSettled(cardId, end, text, record),
      warn: (m) => process.emitWarning(`runboard: ${m}`),
      save: (cardId, record) => this.write(cardId, () => ({ patch: record })),
      request: (card) => launchRequest(card, this.store.config, this.store.projectDir, this.grants),
      hold: (cardId, flow, runId) => this.active.set(cardId, { cardId, flow, ...(runId ? { runId } : {}) }),
      config: () => this.store.config,
      event: (cardId, runId, e, attempt) => this.emit('runEvent', cardId, runId, e, attempt),
      attemptEnded: (cardId, runId) => this.emit('attemptEnded', cardId, runId),
    });
    this.keys = new KeyWaits(store, client, () => this.kick());
    this.supervisor = new SupervisorWatch(client, () => this.kick());
    this.admission = new Admission([
      attemptsInput(this.attempts),
      parkingInput(() => store.config, this.parks),
      machineInput(() => store.config),
      realDisplayInput(
        () => store.config,
        () => this.busy.reasons(),
      ),
      blockedInput(
        () => store.config,
        () =>
          this.supervisor.down ?? (store.configChange?.noBase ? store.configChange.changes[0] : undefined),
        (provider) => this.keys.reason(provider),
      ),
    ]);
    this.recovery = new Recovery({
      store,
      client,
      stopped: () => this.stopped,
      idOf: (card) => this.idOf(card),
      runOf: (id) => (this.active.has(id) ? (this.active.get(id)!.runId ?? null) : undefined),
      write: (id, make) => this.write(id, make),
      adopt: (id, flow, runId) => this.adopt(id, flow, runId),
      finish: (id, run) => this.finish(id, run),
      topRank: (status) => this.topRank(status),
      changed: () => this.emit('changed'),
      kick: () => this.kick(),
      resumeAttempts: (id, card) => this.attempts.resume(id, card),
    });
    this.queue.concurrency = store.config.scheduler.maxConcurrency;
    store.on('config', () => {
      this.queue.concurrency = store.config.scheduler.maxConcurrency;
      this.kick();
    });
    const changes = new CardChanges({
      store,
      writes: this.writes,
      recovery: this.recovery,
      idOf: (card) => this.idOf(card),
      running: (id) => this.active.has(id),
      write: (id, make) => this.write(id, make),
      kick: () => this.kick(),
    });
    store.on('cards', ({ id, external }) => changes.changed(id, external));
  }

  isActive(cardId: string): boolean {
    return this.active.has(cardId);
  }
  runIdOf(cardId: string): string | undefined {
    return this.active.get(cardId)?.runId;
  }
  progress(cardId: string): Progress | undefined {
    return this.progressOf.get(cardId);
  }
  waitingReason(cardId: string): string | undefined {
    return this.waiting[cardId];
  }
  get activeCount(): number {
    return this.active.size;
  }
  /** The card's runs going now: its run, or its attempts' runs. */
  liveRunsOf(cardId: string): string[] {
    if (this.attempts.has(cardId)) return this.attempts.liveRuns(cardId);
    const runId = this.active.get(cardId)?.runId;
    return runId ? [runId] : [];
  }
  /** What the caps count now (the policy's running entries): a card's run, each attempt's, a judge's. */
  runsCounted(): RunningCard[] {
    return [...this.attempts.running(), ...this.cardsRunning()];
  }
  private cardsRunning(): RunningCard[] {
    return [...this.active.values()]
      .filter((a) => !this.attempts.has(a.cardId)) // a card's attempts hold its slots
      .map((a) => ({ id: a.cardId, flow: a.flow }));
  }

  /** The card's next run gets these asks of its last run allowed (once; permission-asks.ts). */
  allowNextRun(cardId: string, allow: { runId: string; ask: string }[]): void {
    if (allow.length) this.allowOnce.set(cardId, allow);
    else this.allowOnce.delete(cardId);
  }

  /** After a host restart: runs still going are re-attached, the ends of those that ended recorded. */
  recover(): Promise<void> {
    return this.recovery.recover();
  }

  /** A run of the card started elsewhere (a schedule's, by the supervisor): followed, or its end recorded. */
  adoptRun(cardId: string, runId: string): Promise<void> {
    return this.recovery.adoptRun(cardId, runId);
  }

  /** Looks at the board again soon (coalesced). */
  kick(): void {
    if (this.tickPending || this.stopped) return;
    this.tickPending = true;
    setImmediate(() => {
      this.tickPending = false;
      this.tick();
    });
  }

  /**
   * Cancels the card's run (idempotent). Resolves when the supervisor has taken the cancel; false when
   * the card has no run going (any more: a run of a supervisor that died has ended, its end on the way).
   */
  async cancel(cardId: string): Promise<boolean> {
    const a = this.active.get(cardId);
    if (!a) return false;
    if (this.attempts.has(cardId)) return this.attempts.cancel(cardId);
    a.cancelRequested = true;
    if (!a.runId) return true;
    const { alreadyEnded } = await this.client.cancel(a.runId);
    return !alreadyEnded;
  }

  /** Stops dispatching; runs go on in the supervisor (a restarted host re-attaches them). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.wakeTimer);
    this.keys.stop();
    this.busy.stop();
  }

  private idOf(card: Card): string {
    return String(card.front.id ?? this.store.idForFile(card.file));
  }

  private tick(): void {
    if (this.stopped) return;
    this.writes.retry();
    const cards = this.store.all();
    // A queued card changed outside the board waits for a person's confirm (board-store.ts confirmation)
    const unconfirmed: Record<string, string> = {};
    const queued = cards
      .filter((c) => c.front.status === 'queued' && !this.active.has(this.idOf(c)))
      .filter((c) => {
        // a card whose file does not read now (being written) waits for it: its run would write it
        const why =
          this.store.confirmation(c)?.reason ??
          this.writes.reason(this.idOf(c)) ??
          this.store.unreadableReason(c.file);
        if (why) unconfirmed[this.idOf(c)] = why;
        return !why;
      })
      .map((c) => ({ id: this.idOf(c), file: c.file, rank: c.front.rank, card: c }))
      .sort(compareCards);
    const decision = this.admission.decide({
      ...columnInput(this.store.config, cards),
      queued: queued.map((q) => ({
        id: q.id,
        flow: q.card.front.flow,
        ...(q.card.front.nextTryAt ? { notBefore: Date.parse(q.card.front.nextTryAt) } : {}),
      })),
      running: this.cardsRunning(),
      now: this.now(),
    });
    const waiting = { ...decision.waiting, ...unconfirmed };
    for (const id of this.writes.waiting) waiting[id] ??= this.writes.reason(id)!;
    const changed = JSON.stringify(waiting) !== JSON.stringify(this.waiting);
    this.waiting = waiting;
    clearTimeout(this.wakeTimer);
    const wakeAt = Math.min(
      decision.wakeAt ?? Infinity,
      this.writes.anyUnsaved ? this.now() + UNSAVED_RETRY_MS : Infinity,
    );
    if (wakeAt !== Infinity)
      this.wakeTimer = setTimeout(() => this.kick(), Math.max(10, wakeAt - this.now()));
    for (const id of decision.start) if (!this.admission.launch(id)) this.start(id);
    if (changed && decision.start.length === 0) this.emit('changed');
  }

  private start(cardId: string): void {
    const card = this.store.get(cardId);
    if (!card) return;
    const a: Active = { cardId, flow: card.front.flow };
    this.active.set(cardId, a);
    this.progressOf.delete(cardId);
    if (attemptsOf(card, this.store.config) > 1) return this.startAttempts(cardId, card);
    void this.queue.add(async () => {
      let request;
      try {
        request = launchRequest(card, this.store.config, this.store.projectDir, this.grants);
        const allow = this.allowOnce.get(cardId);
        this.allowOnce.delete(cardId);
        if (allow) request = { ...request, allow };
        // one queueing of the card, one run: a launch repeated for it gets the first one's run
        request = { ...request, key: launchKey(card) };
      } catch (err) {
        return this.launchFailed(cardId, (err as Error).message);
      }
      this.emit('dispatch', { cardId, sinceFreeMs: this.freedAt ? performance.now() - this.freedAt : 0 });
      let runId: string;
      try {
        ({ runId } = await this.client.launch(request));
      } catch (err) {
        // no supervisor to ask (nothing was sent): the card waits for one, it did not fail
        if (err instanceof SupervisorUnavailable) return this.noSupervisor(cardId);
        const busy = err instanceof ResponseError ? DisplayBusy.safeParse(err.data) : null;
        if (busy?.success) return this.resourceBusy(cardId, REAL_DISPLAY, busy.data.runId);
        const msg = err instanceof ResponseError ? `refused: ${err.message}` : (err as Error).message;
        return this.launchFailed(cardId, msg);
      }
      a.runId = runId;
      this.byRun.set(runId, cardId);
      this.write(cardId, () => ({
        patch: {
          status: cardTransition('started', card.front.status, 'running'),
          lastRun: runId,
          lastError: undefined,
          // a card queued again without answering its asks: they were asked of the run before
          ...(isAskNeeds(card.front.needs) ? { needs: undefined } : {}),
        },
      }));
      this.emit('changed');
      if (a.cancelRequested) void this.client.cancel(runId);
      await this.follow(cardId, runId);
    });
  }

  /** The card's run as N attempts and a judge (scheduler-attempts.ts); the first starts in this slot. */
  private startAttempts(cardId: string, card: NonNullable<ReturnType<BoardStore['get']>>): void {
    let request;
    try {
      request = launchRequest(card, this.store.config, this.store.projectDir, this.grants);
    } catch (err) {
      return this.launchFailed(cardId, (err as Error).message);
    }
    const cfg = this.store.config;
    const flow = Object.hasOwn(cfg.flows, card.front.flow) ? cfg.flows[card.front.flow] : undefined;
    this.write(cardId, () => ({
      patch: {
        status: cardTransition('started', card.front.status, 'running'),
        lastError: undefined,
        attemptRuns: undefined,
        judgeRun: undefined,
        verdict: undefined,
        winner: undefined,
      },
    }));
    this.emit('dispatch', { cardId, sinceFreeMs: this.freedAt ? performance.now() - this.freedAt : 0 });
    this.attempts.begin(cardId, attemptsOf(card, cfg), request, flow?.judgeAfter, cfg.limits.workspaceCopy);
  }

  private attemptStarted(cardId: string, runId: string): void {
    const a = this.active.get(cardId);
    if (!a || a.runId) return;
    a.runId = runId; // the card's live view: its first attempt's
    this.write(cardId, () => ({ patch: { lastRun: runId } }));
    this.emit('changed');
  }

  /** The card's attempts ended: its end as a run's end (card-lifecycle.ts runOutcome), and the record. */
  private attemptsSettled(
    cardId: string,
    end: Pick<RunResult, 'runId' | 'status' | 'summary'>,
    text: string,
    record: AttemptsRecord,
  ): void {
    this.active.delete(cardId);
    this.freedAt = performance.now();
    const card = this.store.get(cardId);
    if (card)
      this.write(cardId, () => {
        const w = runOutcome(
          { ...end, termination: null },
          { ...this.cardNow(card), failureText: () => text },
        );
        return { ...w, patch: { ...w.patch, ...record } };
      });
    this.emit('changed');
    this.kick();
  }

  /** A run found going after a restart: hold its slot and follow it to its end. */
  private adopt(cardId: string, flow: string, runId: string): void {
    this.active.set(cardId, { cardId, flow, runId });
    this.byRun.set(runId, cardId);
    void this.queue.add(() => this.follow(cardId, runId));
  }

  /** Follows a run's events (progress, rate limits) and its end (scheduler-follow.ts). */
  private follow(cardId: string, runId: string): Promise<void> {
    return followRun(this.client, runId, {
      event: (e) => {
        this.emit('runEvent', cardId, runId, e);
        // a 429 with a reset, seen by the model proxy: the key's waiting cards wait until then
        if (this.parks.parkOn(this.active.get(cardId)?.flow, e)) return void this.kick();
        if (e.type !== 'progress') return;
        const fraction = typeof e.data?.fraction === 'number' ? e.data.fraction : undefined;
        this.progressOf.set(cardId, { fraction, message: e.message });
        this.emit('changed');
      },
      end: (result) => this.finish(cardId, result),
      lost: (why) => void this.lost(cardId, runId, why),
      following: () => this.active.has(cardId),
    });
  }

  /**
   * The attach to the card's run was lost. A run that ended meanwhile is recorded as it ended (a
   * succeeded run counted as a failure was retried: a second run); else the card's launch failed.
   */
  private async lost(cardId: string, runId: string, why: string): Promise<void> {
    const run = await this.client.getRun(runId).then(
      (r) => r.run,
      () => undefined,
    );
    if (this.active.get(cardId)?.runId !== runId) return;
    if (run && run.status !== 'running') this.finish(cardId, run);
    else this.launchFailed(cardId, why);
  }

  /** Flows parked by a rate limit (their own, or their provider's), and until when (epoch ms): shown on the board. */
  get parked(): ReadonlyMap<string, number> {
    return this.parks.parked();
  }

  private finish(cardId: string, result: RunResult): void {
    if (this.active.get(cardId)?.runId === result.runId || !this.active.has(cardId)) {
      this.active.delete(cardId);
      this.byRun.delete(result.runId);
      this.freedAt = performance.now();
    } else return; // a stale end for an older run
    // a rate limit past the run's retries (metrics.rateLimitedUntil) parks its key instead of failing run after run
    this.parks.park(result.flow, result.metrics.rateLimitedUntil);
    const card = this.store.get(cardId);
    if (card) {
      // what the run's end does to its card: card-lifecycle.ts (runOutcome); what it needs is read first
      const notKept = result.status === 'succeeded' ? this.notKept(card.file, result) : undefined;
      const waitsForKey =
        result.status === 'failed' &&
        result.termination?.reason === 'missing-key' &&
        this.keys.waitFor(result);
      this.write(cardId, () =>
        runOutcome(result, {
          ...this.cardNow(card),
          notKept,
          waitsForKey,
          failureText: () => failureText(result),
        }),
      );
    }
    this.emit('ended', cardId, result);
    this.emit('changed');
    this.kick();
  }

  /**
   * The supervisor refused a launch because a run this board did not start (another project's board, a
   * CLI run) holds an exclusive resource: the real display (`display-busy`). That is no failure
   * of the card: it goes back to waiting in Queued, saying why, and starts as soon as that run ends (the
   * scheduler follows its end) or, at the latest, when it looks again after RESOURCE_RECHECK_MS.
   */
  private resourceBusy(cardId: string, resource: string, holder: string | undefined): void {
    if (!this.release(cardId)) return;
    this.busy.hold(resource, holder);
    this.emit('changed');
    this.kick();
  }

  private noSupervisor(cardId: string): void {
    if (!this.release(cardId)) return;
    this.emit('changed');
    this.kick();
  }

  /**
   * The card's launch started no run: its slot is free. False while stopping: a host that is shutting
   * down closes its supervisor connection, which rejects pending calls; the runs go on, and the next
   * host re-attaches them. Nothing is lost, so nothing is recorded.
   */
  private release(cardId: string): boolean {
    if (this.stopped) return false;
    this.active.delete(cardId);
    this.freedAt = performance.now();
    return true;
  }

  private launchFailed(cardId: string, message: string): void {
    if (!this.release(cardId)) return;
    const card = this.store.get(cardId);
    if (card)
      this.write(cardId, () =>
        failure({ ...this.cardNow(card), change: 'launch-failed' }, (card.front.failures ?? 0) + 1, message),
      );
    this.emit('changed');
    this.kick();
  }

  /** A key was just stored for `provider` (from the board): its waiting cards may start at once. */
  keyStored(provider: string): void {
    if (this.keys.stored(provider)) {
      this.emit('changed');
      this.kick();
    }
  }

  /** What the card lifecycle reads of the card and the board to decide the end of its run. */
  private cardNow(card: Card): Omit<OutcomeContext, 'failureText'> {
    return {
      from: card.front.status,
      failures: card.front.failures ?? 0,
      backoff: this.store.config.scheduler.backoff,
      now: this.now(),
      topRank: (s) => this.topRank(s),
    };
  }

  /** A rank above every card's in the column (the card goes to its top). */
  topRank(status: CardStatus): number {
    let min = 1024;
    for (const c of this.store.all())
      if (c.front.status === status && c.front.rank !== undefined) min = Math.min(min, c.front.rank);
    return min - 1024;
  }

  /** Writes the card; `make` gives the write (a status through the card lifecycle: scheduler-writes.ts). */
  private write(cardId: string, make: () => CardWrite): void {
    this.writes.write(cardId, make);
  }
}
