/**
 * The Scheduler: carries out the pure policy (scheduler-policy.ts) against the board store and the
 * supervisor. Each run is one task of a p-queue whose concurrency is the global maxConcurrency (kept in
 * step with config.yaml); the policy decides which card goes next (Queued-column order, per-flow caps,
 * backoff, column limits), the queue holds the run's slot until the run has ended.
 *
 * Card state it writes (front matter): status, lastRun, failures, nextTryAt, lastError.
 *   queued ──start──▶ running ──succeeded──▶ done
 *                        ├──needs-input──▶ needs-input (+ the run's questions in ## Questions)
 *                        ├──cancelled────▶ backlog
 *                        └──failed/timed-out──▶ queued (retry after backoff) | failed
 *   queued ──launch refused: display-busy──▶ queued (waiting for the real display; not a failure)
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import { stripVTControlCharacters } from 'node:util';
import PQueue from 'p-queue';
import {
  DisplayBusy,
  drivesDesktop,
  formatWorkflowProblems,
  ResponseError,
  type RunResult,
} from '@runboard/supervisor/protocol';
import type { BoardStore } from './board-store.ts';
import { compareCards } from './board-model.ts';
import { appendQuestions } from './board-questions.ts';
import { askNeeds, isAskNeeds } from '../shared/asks.ts';
import { settleSucceededRun } from './workflow-store.ts';
import type { GrantStore } from './grant-store.ts';
import { flowProvider, launchRequest } from './launch.ts';
import type { Card, CardStatus } from './project.ts';
import { backoffDelay, decide } from './scheduler-policy.ts';
import { SupervisorUnavailable, type SupervisorClient } from './supervisor-client.ts';

/** The exclusive resource of computer-use runs on the real display (one at a time: the supervisor's rule). */
const REAL_DISPLAY = 'the real display';
/** A resource held by a run of someone else's is looked at again after this long at the latest. */
const RESOURCE_RECHECK_MS = 30_000;
/** While cards wait for a provider key: how often the supervisor is asked whether it is set. */
const KEY_RECHECK_MS = 2_000;

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
  private readonly parkedFlows = new Map<string, number>();
  /** Exclusive resources held by runs this board did not start (see resourceBusy). */
  private readonly busy = new Map<string, { why: string; timer: NodeJS.Timeout }>();
  /** recover() has run: from then on a card that says running must have a run this host follows. */
  private recovered = false;
  /** Cards whose stray `running` is being looked into (one look at a time). */
  private readonly strays = new Set<string>();
  /** Providers whose runs were refused for a missing API key: their flows wait until it is set. */
  private readonly keyless = new Map<string, string>();
  private keyTimer: NodeJS.Timeout | undefined;
  /** Why no card may start now: the supervisor is gone and not back yet. */
  private supervisorDown: string | undefined;
  /** Each card's status as last seen, to tell a person's re-queue from the scheduler's own. */
  private readonly lastStatus = new Map<string, CardStatus | undefined>();
  /** Set while the scheduler writes a card: the change events it causes are its own. */
  private writing = false;
  /** Asks the person allowed once, per card: its next launch carries them (the supervisor checks each). */
  private readonly allowOnce = new Map<string, { runId: string; ask: string }[]>();

  constructor(
    private readonly store: BoardStore,
    private readonly client: SupervisorClient,
    private readonly grants: GrantStore,
    private readonly now: () => number = Date.now,
  ) {
    super();
    this.queue.concurrency = store.config.scheduler.maxConcurrency;
    store.on('config', () => {
      this.queue.concurrency = store.config.scheduler.maxConcurrency;
      this.kick();
    });
    // What a person running `serve` sees in its terminal when the supervisor goes away and comes back.
    // Until a supervisor is back no card starts (a launch then would only wait and fail); serve's
    // terminal says what happens.
    client.on('lost', (why) => {
      process.emitWarning(`runboard: ${why}; starting a new supervisor`);
      this.supervisorDown = 'waiting for the supervisor: it went away and a new one is being started';
      this.kick();
    });
    client.on('reconnected', () => {
      process.emitWarning('runboard: connected to the supervisor again');
      this.supervisorDown = undefined;
      this.kick();
    });
    for (const c of store.all()) this.lastStatus.set(this.idOf(c), c.front.status);
    store.on('cards', ({ id, external }) => {
      if (!id) return;
      const card = store.get(id);
      const before = this.lastStatus.get(id);
      if (card) this.lastStatus.set(id, card.front.status);
      else this.lastStatus.delete(id);
      // The host is the only writer of a running card's state: an outside edit cannot unlock it...
      if (card && external && this.active.has(id) && card.front.status !== 'running')
        this.safeUpdate(id, { status: 'running' });
      // ...and a card that says running with no run going cannot stay locked
      else if (card && external && this.recovered && card.front.status === 'running' && !this.active.has(id))
        void this.strayRunning(id);
      // a person put the card in Queued (a move, "answer & re-queue", an edit): it starts afresh
      else if (
        card &&
        !this.writing &&
        card.front.status === 'queued' &&
        before !== 'queued' &&
        (card.front.failures !== undefined || card.front.nextTryAt !== undefined)
      )
        this.safeUpdate(id, { failures: undefined, nextTryAt: undefined });
      this.kick();
    });
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

  /** The card's next run gets these asks of its last run allowed (once; permission-asks.ts). */
  allowNextRun(cardId: string, allow: { runId: string; ask: string }[]): void {
    if (allow.length) this.allowOnce.set(cardId, allow);
    else this.allowOnce.delete(cardId);
  }

  /**
   * After a host restart: runs still going are re-attached (not re-run); cards left `running` whose run
   * ended meanwhile get its outcome; queued cards are simply queued again by the next tick.
   */
  async recover(): Promise<void> {
    const { runs: live } = await this.client.list({ activeOnly: true });
    // an extraction run names the card it fills, but it is not the card's run (extract.ts follows it)
    const liveByCard = new Map(live.filter((r) => r.runner !== 'extract').map((r) => [r.card.path, r]));
    for (const card of this.store.all()) {
      const id = this.idOf(card);
      const run = liveByCard.get(card.file);
      if (run) {
        if (card.front.status !== 'running' || card.front.lastRun !== run.runId)
          this.safeUpdate(id, { status: 'running', lastRun: run.runId });
        this.adopt(id, card.front.flow, run.runId);
        continue;
      }
      if (card.front.status !== 'running') continue;
      // The card's own runs, newest first: its last run is among the first unless many started since.
      const { runs: ofCard } = await this.client.list({ cardPath: card.file, limit: 50 });
      const ended = card.front.lastRun ? ofCard.find((r) => r.runId === card.front.lastRun) : undefined;
      if (ended && ended.status !== 'running') this.finish(id, ended);
      else if (!card.front.lastRun) this.notRunning(id);
      else this.safeUpdate(id, { status: 'queued' });
    }
    this.recovered = true;
    this.kick();
  }

  /**
   * A run of the card started elsewhere (by the supervisor, for a schedule that fired while no board was
   * open): followed to its end when it is still going, else its outcome is recorded on the card as if
   * this board had run it. A card that has another run going keeps it (the other run's outcome stays
   * in the schedule's history).
   */
  async adoptRun(cardId: string, runId: string): Promise<void> {
    if (this.active.get(cardId)?.runId === runId) return;
    const card = this.store.get(cardId);
    if (!card || this.active.has(cardId)) return;
    const { run } = await this.client.getRun(runId);
    if (this.stopped || this.active.has(cardId)) return;
    if (run.status === 'running') {
      this.safeUpdate(cardId, { status: 'running', lastRun: runId, lastError: undefined });
      this.adopt(cardId, card.front.flow, runId);
      this.emit('changed');
    } else this.finish(cardId, run);
  }

  /**
   * A card edited to `status: running` from outside (by hand, a script, a `git pull` from another
   * machine) while this host follows no run of it. A run of the card that the supervisor has going (a
   * board elsewhere started it) is followed; otherwise the card is put right, saying why.
   */
  private async strayRunning(id: string): Promise<void> {
    if (this.strays.has(id)) return;
    this.strays.add(id);
    try {
      const { runs } = await this.client.list({ activeOnly: true });
      const card = this.store.get(id);
      if (this.stopped || !card || card.front.status !== 'running' || this.active.has(id)) return;
      const run = runs.find((r) => r.card.path === card.file && r.runner !== 'extract');
      if (run) {
        if (card.front.lastRun !== run.runId) this.safeUpdate(id, { lastRun: run.runId });
        this.adopt(id, card.front.flow, run.runId);
      } else this.notRunning(id);
      this.emit('changed');
    } catch (err) {
      process.emitWarning(`runboard: could not check the runs of card ${id}: ${(err as Error).message}`);
    } finally {
      this.strays.delete(id);
    }
  }

  /** The card says running but no run of it is going: to Failed, saying so (a person moves it on). */
  private notRunning(id: string): void {
    this.safeUpdate(id, {
      status: 'failed',
      rank: this.topRank('failed'),
      lastError:
        'the card said "status: running" but no run of it was going (edited outside the board?); ' +
        'move it to Queued to run it',
    });
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
    a.cancelRequested = true;
    if (!a.runId) return true;
    const { alreadyEnded } = await this.client.cancel(a.runId);
    return !alreadyEnded;
  }

  /** Stops dispatching; runs go on in the supervisor (a restarted host re-attaches them). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.wakeTimer);
    clearTimeout(this.keyTimer);
    for (const b of this.busy.values()) clearTimeout(b.timer);
  }

  private idOf(card: Card): string {
    return String(card.front.id ?? this.store.idForFile(card.file));
  }

  private tick(): void {
    if (this.stopped) return;
    const cfg = this.store.config;
    const cards = this.store.all();
    const counts: Partial<Record<CardStatus, number>> = {};
    for (const c of cards)
      counts[c.front.status ?? 'backlog'] = (counts[c.front.status ?? 'backlog'] ?? 0) + 1;
    // A queued card changed outside the board waits for a person's confirm (board-store.ts confirmation)
    const unconfirmed: Record<string, string> = {};
    const queued = cards
      .filter((c) => c.front.status === 'queued' && !this.active.has(this.idOf(c)))
      .filter((c) => {
        const why = this.store.confirmation(c)?.reason;
        if (why) unconfirmed[this.idOf(c)] = why;
        return !why;
      })
      .map((c) => ({ id: this.idOf(c), file: c.file, rank: c.front.rank, card: c }))
      .sort(compareCards);
    const decision = decide({
      queued: queued.map((q) => ({
        id: q.id,
        flow: q.card.front.flow,
        ...(q.card.front.nextTryAt ? { notBefore: Date.parse(q.card.front.nextTryAt) } : {}),
      })),
      running: [...this.active.values()].map((a) => ({ id: a.cardId, flow: a.flow })),
      maxConcurrency: cfg.scheduler.maxConcurrency,
      flowCaps: Object.fromEntries(Object.entries(cfg.flows).map(([n, f]) => [n, f.cap])),
      columnLimits: cfg.scheduler.columnLimits,
      columnCounts: counts,
      parkedFlows: Object.fromEntries(this.parkedFlows),
      exclusive: Object.fromEntries(
        Object.entries(cfg.flows)
          .filter(([, f]) => drivesDesktop(f.runner) && !f.computerUse?.privateDisplay)
          .map(([n]) => [n, REAL_DISPLAY]),
      ),
      busy: Object.fromEntries([...this.busy].map(([res, b]) => [res, b.why])),
      blockedFlows: Object.fromEntries(
        Object.entries(cfg.flows).flatMap(([n, f]) => {
          const provider = flowProvider(f, cfg);
          const why =
            this.supervisorDown ??
            (this.store.configChange?.noBase ? this.store.configChange.changes[0] : undefined) ??
            (provider ? this.keyless.get(provider) : undefined);
          return why ? [[n, why]] : [];
        }),
      ),
      now: this.now(),
    });
    const waiting = { ...decision.waiting, ...unconfirmed };
    const changed = JSON.stringify(waiting) !== JSON.stringify(this.waiting);
    this.waiting = waiting;
    clearTimeout(this.wakeTimer);
    if (decision.wakeAt !== undefined)
      this.wakeTimer = setTimeout(() => this.kick(), Math.max(10, decision.wakeAt - this.now()));
    for (const id of decision.start) this.start(id);
    if (changed && decision.start.length === 0) this.emit('changed');
  }

  private start(cardId: string): void {
    const card = this.store.get(cardId);
    if (!card) return;
    const a: Active = { cardId, flow: card.front.flow };
    this.active.set(cardId, a);
    this.progressOf.delete(cardId);
    void this.queue.add(async () => {
      let request;
      try {
        request = launchRequest(card, this.store.config, this.store.projectDir, this.grants);
        const allow = this.allowOnce.get(cardId);
        this.allowOnce.delete(cardId);
        if (allow) request = { ...request, allow };
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
      this.safeUpdate(cardId, {
        status: 'running',
        lastRun: runId,
        lastError: undefined,
        // a card queued again without answering its asks: they were asked of the run before
        ...(isAskNeeds(card.front.needs) ? { needs: undefined } : {}),
      });
      this.emit('changed');
      if (a.cancelRequested) void this.client.cancel(runId);
      await this.follow(cardId, runId);
    });
  }

  /** A run found going after a restart: hold its slot and follow it to its end. */
  private adopt(cardId: string, flow: string, runId: string): void {
    this.active.set(cardId, { cardId, flow, runId });
    this.byRun.set(runId, cardId);
    void this.queue.add(() => this.follow(cardId, runId));
  }

  /** Follows a run's events (progress) and its end; output is not streamed here (see RunStreams). */
  private follow(cardId: string, runId: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const end = (result: RunResult): void => {
        this.finish(cardId, result);
        resolve();
      };
      this.client
        .attach(
          runId,
          {
            onEvent: (e) => {
              if (e.type !== 'progress') return;
              const fraction = typeof e.data?.fraction === 'number' ? e.data.fraction : undefined;
              this.progressOf.set(cardId, { fraction, message: e.message });
              this.emit('changed');
            },
            onEnd: end,
            onLost: (err) => {
              this.launchFailed(cardId, `lost the run ${runId}: ${err.message}`);
              resolve();
            },
          },
          { events: 0, stdout: Number.MAX_SAFE_INTEGER, stderr: Number.MAX_SAFE_INTEGER },
        )
        .then((run) => {
          // attach answers with the run as it is; an ended run still gets its didEnd, but be sure
          if (run.status !== 'running') setTimeout(() => this.active.has(cardId) && end(run), 2000);
        })
        .catch((err: Error) => {
          this.launchFailed(cardId, `lost the run ${runId}: ${err.message}`);
          resolve();
        });
    });
  }

  /**
   * A run that met a rate limit beyond its retry budget says until when (metrics.rateLimitedUntil):
   * its flow is parked until then instead of failing run after run. Returns that time, or undefined.
   */
  private parkFlowFor(result: RunResult): number | undefined {
    const until = Date.parse(String(result.metrics.rateLimitedUntil ?? ''));
    if (!Number.isFinite(until) || until <= this.now()) return undefined;
    this.parkedFlows.set(result.flow, Math.max(until, this.parkedFlows.get(result.flow) ?? 0));
    return until;
  }

  /** Flows parked by a rate limit, and until when (epoch ms): shown on the board. */
  get parked(): ReadonlyMap<string, number> {
    for (const [flow, until] of this.parkedFlows) if (until <= this.now()) this.parkedFlows.delete(flow);
    return this.parkedFlows;
  }

  private finish(cardId: string, result: RunResult): void {
    if (this.active.get(cardId)?.runId === result.runId || !this.active.has(cardId)) {
      this.active.delete(cardId);
      this.byRun.delete(result.runId);
      this.freedAt = performance.now();
    } else return; // a stale end for an older run
    this.parkFlowFor(result);
    const card = this.store.get(cardId);
    if (card) {
      const failures = card.front.failures ?? 0;
      const detail = result.termination ? `${result.termination.reason}: ${result.termination.detail}` : '';
      switch (result.status) {
        case 'succeeded': {
          // A reflect run's workflow joins the card only valid, whole; else the run counts as failed.
          const installed = settleSucceededRun(card.file, result);
          if (installed && !installed.ok) {
            const why = formatWorkflowProblems(installed.problems);
            this.failed(
              cardId,
              failures + 1,
              `the workflow reflect made was not saved:\n${why}`,
              result.runId,
            );
            break;
          }
          this.safeUpdate(cardId, {
            status: 'done',
            rank: this.topRank('done'),
            lastRun: result.runId,
            failures: undefined,
            nextTryAt: undefined,
            lastError: undefined,
          });
          break;
        }
        case 'needs-input': {
          // the run's questions go into the card's ## Questions (seed format), in the same atomic write;
          // permissions the sandbox refused are asked on the card instead (permission-asks.ts)
          const questions = result.asks?.length
            ? []
            : result.questions?.length
              ? result.questions
              : result.summary
                ? [result.summary]
                : [];
          this.safeUpdate(
            cardId,
            {
              status: 'needs-input',
              rank: this.topRank('needs-input'),
              ...(result.asks?.length ? { needs: askNeeds(result.asks) } : {}),
              lastRun: result.runId,
              failures: undefined,
              nextTryAt: undefined,
              lastError: undefined,
            },
            (body) => appendQuestions(body, questions),
          );
          break;
        }
        case 'failed':
          if (result.termination?.reason === 'missing-key' && this.waitForKey(result)) {
            // nothing was started: no failure, no backoff; the card waits in Queued where it was
            this.safeUpdate(cardId, { status: 'queued', lastRun: result.runId, lastError: undefined });
            break;
          }
          this.failed(cardId, failures + 1, failureText(result, detail), result.runId);
          break;
        case 'cancelled':
          this.safeUpdate(cardId, {
            status: 'backlog',
            rank: this.topRank('backlog'),
            lastError: 'cancelled',
          });
          break;
        default:
          this.failed(cardId, failures + 1, failureText(result, detail), result.runId);
      }
    }
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
    if (this.stopped) return;
    this.active.delete(cardId);
    this.freedAt = performance.now();
    clearTimeout(this.busy.get(resource)?.timer);
    const entry = {
      why: holder ? `run ${holder} (not started by this board) is using it` : 'another run is using it',
      timer: setTimeout(() => clear(), RESOURCE_RECHECK_MS),
    };
    const clear = (): void => {
      if (this.busy.get(resource) !== entry) return;
      clearTimeout(entry.timer);
      this.busy.delete(resource);
      this.kick();
    };
    this.busy.set(resource, entry);
    if (holder)
      this.client
        .attach(
          holder,
          { onEnd: clear, onLost: clear },
          {
            events: Number.MAX_SAFE_INTEGER,
            stdout: Number.MAX_SAFE_INTEGER,
            stderr: Number.MAX_SAFE_INTEGER,
          },
        )
        .then((run) => run.status !== 'running' && clear())
        .catch(clear);
    this.emit('changed');
    this.kick();
  }

  private noSupervisor(cardId: string): void {
    if (this.stopped) return;
    this.active.delete(cardId);
    this.freedAt = performance.now();
    this.emit('changed');
    this.kick();
  }

  private launchFailed(cardId: string, message: string): void {
    // A host that is shutting down closes its supervisor connection, which rejects pending calls; the
    // runs go on, and the next host re-attaches them. Nothing is lost, so nothing is recorded.
    if (this.stopped) return;
    this.active.delete(cardId);
    this.freedAt = performance.now();
    const card = this.store.get(cardId);
    if (card) this.failed(cardId, (card.front.failures ?? 0) + 1, message);
    this.emit('changed');
    this.kick();
  }

  /**
   * A run refused for a missing API key: its flow's provider is marked keyless (its cards wait, saying
   * how to set the key) and the supervisor is asked every KEY_RECHECK_MS until the key is there. False
   * when the flow has no provider in config.yaml (any more): then it is an ordinary failure.
   */
  private waitForKey(result: RunResult): boolean {
    const flow = this.store.config.flows[result.flow];
    // its own provider or its profile's
    const provider = flow && flowProvider(flow, this.store.config);
    if (!provider) return false;
    this.keyless.set(
      provider,
      `waiting for an API key for provider "${provider}": set it on the board (Settings → Providers) or ` +
        `with \`printenv YOUR_KEY_VARIABLE | runboard key set ${provider}\`; the card starts once it is set`,
    );
    this.watchKeys();
    return true;
  }

  /** A key was just stored for `provider` (from the board): its waiting cards may start at once. */
  keyStored(provider: string): void {
    if (this.keyless.delete(provider)) {
      this.emit('changed');
      this.kick();
    }
  }

  private watchKeys(): void {
    if (this.keyTimer || this.stopped) return;
    this.keyTimer = setTimeout(() => {
      void (async () => {
        try {
          const { providers } = await this.client.listProviders();
          for (const p of providers) if (p.hasKey) this.keyless.delete(p.name);
          for (const name of this.keyless.keys())
            if (!providers.some((p) => p.name === name))
              this.keyless.set(
                name,
                `the supervisor knows no model provider "${name}": correct the flow's provider in config.yaml`,
              );
        } catch (err) {
          process.emitWarning(`runboard: could not ask for provider keys: ${(err as Error).message}`);
        }
        this.keyTimer = undefined;
        if (this.keyless.size) this.watchKeys();
        this.kick();
      })();
    }, KEY_RECHECK_MS);
  }

  private failed(cardId: string, failures: number, message: string, runId?: string): void {
    const b = this.store.config.scheduler.backoff;
    const retry = failures <= b.retries;
    const status: CardStatus = retry ? 'queued' : 'failed';
    this.safeUpdate(cardId, {
      status,
      rank: retry ? undefined : this.topRank('failed'),
      failures,
      nextTryAt: new Date(this.now() + backoffDelay(failures, b.base, b.max)).toISOString(),
      lastError: message.slice(0, 2000),
      ...(runId ? { lastRun: runId } : {}),
    });
  }

  /** A rank above every card's in the column (the card goes to its top). */
  topRank(status: CardStatus): number {
    let min = 1024;
    for (const c of this.store.all())
      if (c.front.status === status && c.front.rank !== undefined) min = Math.min(min, c.front.rank);
    return min - 1024;
  }

  private safeUpdate(cardId: string, patch: Record<string, unknown>, editBody?: (b: string) => string): void {
    this.writing = true;
    try {
      this.store.update(cardId, patch, editBody);
    } catch (err) {
      process.emitWarning(`runboard: could not write card ${cardId}: ${(err as Error).message}`);
    } finally {
      this.writing = false;
    }
  }
}

/** A failed run's lastError: its status and end, and for a command its last stderr line (`sh: 1: frobnicate: not found`). */
function failureText(result: RunResult, detail: string): string {
  const said = result.exitCode ? lastStderrLine(result.logDir) : undefined;
  return `${result.status} (${detail})${said ? `: ${said}` : ''}`;
}

/** The last non-empty line of a run's stderr.log (its last 4 KiB read), or undefined. */
export function lastStderrLine(logDir: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path.join(logDir, 'stderr.log'), constants.O_RDONLY | constants.O_NONBLOCK);
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(4096, size));
    readSync(fd, buf, 0, buf.length, size - buf.length);
    const line = buf
      .toString('utf8')
      .split('\n')
      .map((l) => stripVTControlCharacters(l).trim())
      .filter(Boolean)
      .at(-1);
    return line?.slice(0, 300);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
