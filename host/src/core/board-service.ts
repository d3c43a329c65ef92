/**
 * The host core behind both shells (Electron main and `runboard serve`): the board store, the
 * scheduler and the supervisor connections, exposed as the intents and views of the board's methods
 * (host/src/shared/board-methods.ts). Composition happens in `BoardService.open`; the board view,
 * its deltas, a run's files and its stream are units of their own (board-view.ts, board-deltas.ts,
 * run-files.ts, run-stream.ts).
 */
import { EventEmitter } from 'node:events';
import { ErrorCodes, JsonRpcCodes, ResponseError, type RunResult } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import { commonGitDir, safeGit } from '@runboard/supervisor/git';
import {
  COLUMNS,
  type Answer,
  type BoardDelta,
  type BoardView,
  type CardDetail,
  type Column,
  type RunFiles as RunFileList,
  type ScheduleEdit,
  type Settings,
  type WorktreeDiff,
} from '../shared/board-types.ts';
import { checkRunId, Invalid, MoveRefused, NotFound } from './board-errors.ts';
import { compareCards, moveRefusal, ranksForMove } from './board-model.ts';
import { setYamlValues, type YamlSet } from './config-edit.ts';
import { BoardDeltas } from './board-deltas.ts';
import { answerQuestions, parseQuestions } from './board-questions.ts';
import { BoardStore, questionsOf } from './board-store.ts';
import { BoardViews } from './board-view.ts';
import { GrantStore } from './grant-store.ts';
import type { Card, CardStatus } from './project.ts';
import { Recordings } from './recordings.ts';
import { RunFiles } from './run-files.ts';
import { streamRun, type RunViewer } from './run-stream.ts';
import { Scheduler } from './scheduler.ts';
import { HostSchedules, localZone, scheduleFrontMatter } from './schedules.ts';
import { resolveSchedule } from '@runboard/supervisor/schedule';
import { SupervisorClient } from './supervisor-client.ts';

export { Invalid, MoveRefused, NotFound } from './board-errors.ts';
export { STREAM_HIGH_WATER, STREAM_TAIL_BYTES, type RunViewer } from './run-stream.ts';

/** How many runs the host keeps at hand for the inspector (older ones are asked for again). */
const KNOWN_RUNS_MAX = 2000;

export class BoardService extends EventEmitter<{ changed: []; delta: [BoardDelta] }> {
  /** Runs seen lately (from card details), for the tail offsets of a stream. */
  private readonly knownRuns = new Map<string, RunResult>();
  private readonly views: BoardViews;
  private readonly deltas: BoardDeltas;
  private readonly files: RunFiles;
  readonly schedules: HostSchedules;
  /** The project's recordings and the one being recorded from the board (recordings.ts). */
  readonly recordings: Recordings;

  private constructor(
    readonly store: BoardStore,
    readonly scheduler: Scheduler,
    private readonly client: SupervisorClient,
    private readonly paths: StatePaths,
  ) {
    super();
    this.schedules = new HostSchedules(store, client, {
      queue: (id) => this.move(id, 'queued', Number.MAX_SAFE_INTEGER),
      busy: (id) => {
        const column = this.columnOf(id, this.card(id));
        return column === 'queued' || column === 'running' ? column : undefined;
      },
      changed: () => this.deltas.soon(),
    });
    this.views = new BoardViews(store, scheduler, this.schedules);
    this.deltas = new BoardDeltas(
      () => this.views.view(),
      (d) => {
        if (d) this.emit('delta', d);
        this.emit('changed');
      },
    );
    this.files = new RunFiles(paths, (runId) => this.runById(runId));
    this.recordings = new Recordings({ store, changed: () => this.deltas.soon(0) });
    const changed = (): void => this.deltas.soon();
    store.on('cards', changed);
    store.on('config', changed);
    scheduler.on('changed', changed);
    scheduler.on('changed', () => this.schedules.boardChanged());
    store.on('cards', () => this.schedules.boardChanged());
  }

  static async open(projectDir: string, paths: StatePaths): Promise<BoardService> {
    const store = new BoardStore(projectDir);
    store.load();
    await store.watch();
    const client = await SupervisorClient.connect(paths, { autoStart: true, reconnect: true });
    const scheduler = new Scheduler(store, client, new GrantStore(paths));
    const service = new BoardService(store, scheduler, client, paths);
    await scheduler.recover();
    await service.schedules.start().catch((err: Error) => {
      // A supervisor from before schedules (they outlive host upgrades): the board works, schedules wait.
      process.emitWarning(`runboard: schedules are not running: ${err.message}`);
    });
    service.deltas.diff(); // the starting point of the deltas
    return service;
  }

  async close(): Promise<void> {
    await this.recordings.close();
    this.scheduler.stop();
    this.schedules.close();
    this.deltas.stop();
    await this.store.close();
    this.client.close();
  }

  view(): BoardView {
    return { version: this.deltas.version, ...this.views.view() };
  }

  private card(id: string): Card {
    const card = this.store.get(id);
    if (!card) throw new NotFound(`no card ${id}`);
    return card;
  }

  private columnOf(id: string, card: Card): Column {
    return this.views.columnOf(id, card);
  }

  async cardDetail(id: string): Promise<CardDetail> {
    const card = this.card(id);
    const mine = await this.runsOf(card.file);
    for (const r of mine) this.remember(r);
    const questions = questionsOf(card.body);
    const schedule =
      card.front.schedule === undefined
        ? undefined
        : await this.schedules.infoOf(card).catch(() => undefined);
    return {
      ...(schedule ? { schedule } : {}),
      card: this.views.cardView(card),
      body: card.body,
      ...(questions ? { questions } : {}),
      questionList: parseQuestions(card.body),
      ...(card.front.command !== undefined ? { command: card.front.command } : {}),
      workspace: card.workspace,
      runs: mine.sort((a, b) => (a.runId < b.runId ? 1 : -1)),
    };
  }

  /**
   * A card's runs, newest first: `run/list` with `cardPath`, which the supervisor answers from its
   * per-day card index. A supervisor from before that filter (supervisors outlive host upgrades)
   * ignores it and answers with everyone's runs; then the host filters the last 2,000 itself.
   */
  private async runsOf(cardFile: string): Promise<RunResult[]> {
    const { runs } = await this.client.list({ cardPath: cardFile, limit: 200 });
    if (runs.every((r) => r.card.path === cardFile)) return runs;
    const all = await this.client.list({ limit: 2000 });
    return all.runs.filter((r) => r.card.path === cardFile);
  }

  /** A person sets (or with null removes) the card's schedule; what cannot fire is refused with why. */
  async setSchedule(id: string, edit: ScheduleEdit | null): Promise<void> {
    this.card(id);
    const raw = edit === null ? undefined : scheduleFrontMatter(edit);
    if (raw !== undefined) {
      const r = resolveSchedule(raw, localZone());
      if (!r.ok) throw new Invalid(r.error);
    }
    this.store.update(id, { schedule: raw });
    await this.schedules.sync(); // the inspector asks for the supervisor's record right after
  }

  /** A person moves a card to `index` of column `to` (drag and drop, keyboard, or the API). */
  move(id: string, to: Column, index: number): void {
    const card = this.card(id);
    const from = this.columnOf(id, card);
    const refusal = moveRefusal(from, to, this.scheduler.isActive(id));
    if (!COLUMNS.includes(to)) throw new Invalid(`no column ${to} (columns: ${COLUMNS.join(', ')})`);
    if (refusal) throw new MoveRefused(refusal);
    const column = this.store
      .all()
      .filter((c) => this.columnOf(String(c.front.id), c) === to)
      .map((c) => this.views.ranked(c))
      .sort(compareCards);
    const ranks = ranksForMove(column, id, index);
    for (const [other, rank] of ranks) if (other !== id) this.store.update(other, { rank });
    const patch: Record<string, unknown> = { status: to satisfies CardStatus };
    if (ranks.has(id)) patch.rank = ranks.get(id);
    this.store.update(id, patch);
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  /**
   * A person answers the card's questions (seed: answers go into `## Questions` as `- [x] q` with
   * `Answer: a` under it); with `requeue` the card then goes to the end of Queued, and its next run
   * reads the card, answers included.
   */
  answer(id: string, answers: Answer[], requeue: boolean): void {
    const card = this.card(id);
    if (this.scheduler.isActive(id)) throw new MoveRefused('the card is running: cancel it first');
    if (answers.length) {
      try {
        this.store.update(id, {}, (body) => answerQuestions(body, answers));
      } catch (err) {
        throw new MoveRefused((err as Error).message);
      }
    }
    if (!requeue) return;
    if (card.front.status !== 'queued') this.move(id, 'queued', Number.MAX_SAFE_INTEGER); // at the end
  }

  /** Run again (to the end of Queued) or, for a card already queued, Retry now: the backoff is dropped. */
  requeue(id: string): void {
    const card = this.card(id);
    if (this.scheduler.isActive(id)) throw new MoveRefused('the card is running: it cannot be queued again');
    if (this.columnOf(id, card) !== 'queued') return this.move(id, 'queued', Number.MAX_SAFE_INTEGER);
    this.store.update(id, { failures: undefined, nextTryAt: undefined });
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  async cancel(id: string): Promise<void> {
    this.card(id);
    if (!(await this.scheduler.cancel(id))) throw new MoveRefused('the card has no run going');
  }

  /** A run's worktree changes as a unified diff (base commit → the run's commit), at most 1 MiB. */
  async worktreeDiff(runId: string): Promise<WorktreeDiff> {
    const run = await this.runById(runId);
    const wt = run.worktree;
    if (!wt) throw new NotFound(`run ${runId} has no worktree`);
    if (!wt.diff?.commit) return { text: '', truncated: false };
    const max = 1024 * 1024;
    // The repository may hold what a run wrote: git runs with no config or driver that names a command.
    const stdout = await safeGit(
      { gitDir: await commonGitDir(wt.repo) },
      ['diff', '--no-color', '--no-ext-diff', '--no-textconv', wt.baseCommit, wt.diff.commit],
      { maxBuffer: 64 * 1024 * 1024, raw: true },
    );
    return stdout.length > max
      ? { text: stdout.slice(0, max), truncated: true }
      : { text: stdout, truncated: false };
  }

  /** Keep a run's worktree (merge its branch into the base branch) or discard it. */
  async settleWorktree(runId: string, how: 'keep' | 'discard'): Promise<RunResult> {
    checkRunId(runId);
    try {
      const { run } =
        how === 'keep' ? await this.client.keepWorktree(runId) : await this.client.discardWorktree(runId);
      this.remember(run);
      return run;
    } catch (err) {
      // the supervisor's refusals are the person's to fix (still running, no worktree, settled already)
      if (err instanceof ResponseError && err.code === ErrorCodes.RunNotFound)
        throw new NotFound(err.message);
      if (err instanceof ResponseError && err.code === ErrorCodes.InvalidState)
        throw new MoveRefused(err.message);
      throw err;
    }
  }

  /** Runs seen lately (inspector views), most recent last: bounded, a long-lived host stays small. */
  private remember(run: RunResult): void {
    this.knownRuns.delete(run.runId);
    this.knownRuns.set(run.runId, run);
    if (this.knownRuns.size > KNOWN_RUNS_MAX) this.knownRuns.delete(this.knownRuns.keys().next().value!);
  }

  /**
   * One run, asked of the supervisor (`run/get`); a supervisor from before that method (they outlive
   * host upgrades) answers MethodNotFound, and then the run as last seen is used.
   */
  private async runById(runId: string): Promise<RunResult> {
    checkRunId(runId);
    const known = this.knownRuns.get(runId);
    try {
      const { run } = await this.client.getRun(runId);
      this.remember(run);
      return run;
    } catch (err) {
      if (!(err instanceof ResponseError)) throw err;
      if (err.code === ErrorCodes.RunNotFound) throw new NotFound(`no run ${runId}`);
      if (known && err.code === JsonRpcCodes.MethodNotFound) return known;
      if (err.code === JsonRpcCodes.MethodNotFound) throw new NotFound(`no run ${runId} seen by this board`);
      throw err;
    }
  }

  settings(): Settings {
    const cfg = this.store.config;
    return {
      maxConcurrency: cfg.scheduler.maxConcurrency,
      flows: Object.entries(cfg.flows).map(([name, f]) => ({ name, cap: f.cap })),
      columnLimits: cfg.scheduler.columnLimits,
    };
  }

  /** Writes the caps back into config.yaml, keeping its comments and order. */
  saveSettings(s: Settings): void {
    const known = this.store.config.flows;
    // checked before anything is written; own names only (`__proto__`, `constructor` are no flows)
    for (const f of s.flows)
      if (!Object.hasOwn(known, f.name))
        throw new Invalid(
          `no flow ${f.name} in config.yaml (flows: ${Object.keys(known).join(', ') || 'none'})`,
        );
    // only what changed is written (a value left at its default stays unwritten)
    const cfg = this.store.config;
    const sets: YamlSet[] = [];
    if (s.maxConcurrency !== cfg.scheduler.maxConcurrency)
      sets.push({ path: ['scheduler', 'maxConcurrency'], value: s.maxConcurrency });
    for (const f of s.flows)
      if (f.cap !== known[f.name]!.cap) sets.push({ path: ['flows', f.name, 'cap'], value: f.cap });
    for (const col of COLUMNS) {
      const limit = s.columnLimits[col];
      // 0 means no limit: an existing entry is set to 0 in place, none is added
      if (limit !== undefined && limit !== (cfg.scheduler.columnLimits[col] ?? 0))
        sets.push({ path: ['scheduler', 'columnLimits', col], value: limit });
    }
    if (sets.length) this.store.updateConfig((text) => setYamlValues(text, sets));
    this.scheduler.kick();
  }

  runFiles(runId: string): RunFileList {
    return this.files.list(runId);
  }

  /** Absolute path of an image of a run, only when it is one of its screenshots. */
  screenshotPath(runId: string, name: string): string {
    return this.files.screenshotPath(runId, name);
  }

  /** The live frame of a running computer-use run on a private display (run-files.ts). */
  liveFrame(runId: string): Promise<Buffer> {
    return this.files.liveFrame(runId);
  }

  /** Checks the run, then answers the writer of its dir as one .tar.gz. */
  exportRun(runId: string): ReturnType<RunFiles['exporter']> {
    return this.files.exporter(runId);
  }

  /** Streams a run to one viewer (run-stream.ts): its tail first, then live, with backpressure. */
  streamRun(runId: string, viewer: RunViewer): () => void {
    return streamRun(this.paths, runId, viewer, this.knownRuns.get(runId));
  }
}
