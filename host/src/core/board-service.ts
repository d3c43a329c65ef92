/**
 * The host core behind both shells (Electron main and `runboard serve`): the board store, the
 * scheduler and the supervisor connections, exposed as the intents and views of the board's methods
 * (host/src/shared/board-methods.ts). It is made by `openBoard` (open-board.ts), which the shells'
 * composition roots call. The board view, its deltas, a run's files and its stream are units of their
 * own (board-view.ts, board-deltas.ts, run-files.ts, run-stream.ts), as are the areas it answers for:
 * runs and worktrees (board-runs.ts), Settings and provider keys (board-settings.ts), a card's workflow
 * and replay parameters (board-workflows.ts).
 */
import { EventEmitter } from 'node:events';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { call, RegisterProject, type RunResult } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import {
  COLUMNS,
  type Answer,
  type BoardDelta,
  type BoardView,
  type FirstScreenView,
  type CardAsks,
  type CardDetail,
  type CardFields,
  type CardForm,
  type CardSource,
  type FolderListing,
  type KeyCheck,
  type ProviderView,
  type Column,
  type ExtractStart,
  type RunFiles as RunFileList,
  type ScheduleEdit,
  type ConfigView,
  type DiskUsageView,
  type Settings,
  type TrashedCard,
  type WorktreeDiff,
} from '../shared/board-types.ts';
import { Invalid, MoveRefused, NotFound } from './board-errors.ts';
import { compareCards, moveRefusal, ranksForMove } from './board-model.ts';
import { cardTransition } from './card-lifecycle.ts';
import { BoardCards } from './board-cards.ts';
import { BoardDeltas } from './board-deltas.ts';
import { listFolders } from './board-folders.ts';
import { answerQuestions, parseQuestions } from './board-questions.ts';
import { questionsOf, type BoardStore } from './board-store.ts';
import { BoardRuns } from './board-runs.ts';
import { BoardSettings } from './board-settings.ts';
import { BoardViews } from './board-view.ts';
import { BoardWorkflows } from './board-workflows.ts';
import { Extractions, ExtractRefused, VIDEO_LIMITS, type ExtractRequest } from './extract.ts';
import { importVideo, VideoImportRefused } from './video-import.ts';
import { PermissionAsks } from './permission-asks.ts';
import { LiveAskWaits } from './live-ask-waits.ts';
import type { GrantStore } from './grant-store.ts';
import { GrantError } from '@runboard/supervisor/grants';
import { NoGrantError } from './launch.ts';
import type { Card } from './project.ts';
import { Recordings } from './recordings.ts';
import { RunFiles } from './run-files.ts';
import { debugLogPage } from './debug-log.ts';
import type { DebugLogPage } from '../shared/debug-log-types.ts';
import { streamRun, type RunViewer } from './run-stream.ts';
import type { Scheduler } from './scheduler.ts';
import { HostSchedules, localZone, scheduleFrontMatter } from './schedules.ts';
import { resolveSchedule } from '@runboard/project/schedule';
import type { SupervisorClient } from './supervisor-client.ts';
import type { CardWorkflowView, WorkflowSaveResult } from '../shared/workflow-edit.ts';
import type { ReplayParamsView } from '../shared/replay-params.ts';

export { Invalid, MoveRefused, NotFound } from './board-errors.ts';
export { STREAM_HIGH_WATER, STREAM_TAIL_BYTES, type RunViewer } from './run-stream.ts';

export class BoardService extends EventEmitter<{ changed: []; delta: [BoardDelta] }> {
  /** A card's runs, one run, a run's worktree; the runs seen lately (board-runs.ts). */
  private readonly runs: BoardRuns;
  /** Providers, keys, caps and the effective config (board-settings.ts). */
  private readonly settingsArea: BoardSettings;
  /** A card's workflow and a replay card's parameters (board-workflows.ts). */
  private readonly workflows: BoardWorkflows;
  private readonly views: BoardViews;
  private readonly deltas: BoardDeltas;
  private readonly files: RunFiles;
  readonly schedules: HostSchedules;
  /** The project's recordings and the one being recorded from the board (recordings.ts). */
  readonly recordings: Recordings;
  private readonly extractions: Extractions;
  /** A person's cards: new, edited, copied, trashed and back (board-cards.ts). */
  private readonly cards: BoardCards;
  /** The person's answers to permission asks (permission-asks.ts). */
  readonly asks: PermissionAsks;

  /** Made by openBoard (open-board.ts), which the shells' composition roots call; then start(). */
  constructor(
    readonly store: BoardStore,
    readonly scheduler: Scheduler,
    private readonly client: SupervisorClient,
    private readonly paths: StatePaths,
    private readonly grants: GrantStore,
  ) {
    super();
    this.schedules = new HostSchedules(store, client, {
      // a schedule's fire queues the card as a drag does, but it is no person's confirm
      queue: (id) => this.move(id, 'queued', Number.MAX_SAFE_INTEGER, false),
      busy: (id) => {
        const column = scheduler.isActive(id) ? 'running' : this.columnOf(id, this.card(id));
        return column === 'queued' || column === 'running' ? column : undefined;
      },
      changed: () => this.deltas.soon(),
      adopt: (id, runId) => scheduler.adoptRun(id, runId),
    });
    const live = new LiveAskWaits(
      () => this.deltas.soon(0),
      (m) => process.emitWarning(`runboard: ${m}`),
    );
    this.views = new BoardViews(store, scheduler, this.schedules, grants, (id) =>
      live.waitingRuns(id, (runId) => scheduler.liveRunsOf(id).includes(runId)),
    );
    this.deltas = new BoardDeltas(
      () => this.views.view(),
      (d) => {
        if (d) this.emit('delta', d);
        this.emit('changed');
      },
    );
    this.runs = new BoardRuns(client);
    this.settingsArea = new BoardSettings(store, client, scheduler, paths);
    this.workflows = new BoardWorkflows({
      store,
      client,
      scheduler,
      card: (id) => this.card(id),
      queue: (id) => this.move(id, 'queued', Number.MAX_SAFE_INTEGER),
      changed: () => this.deltas.soon(0),
    });
    this.files = new RunFiles(paths, (runId) => this.runs.byId(runId));
    this.asks = new PermissionAsks(store, scheduler, client, grants, (s) => scheduler.topRank(s), live);
    scheduler.on('runEvent', (id, runId, e, attempt) => live.event(id, runId, e, attempt));
    scheduler.on('attemptEnded', (id, runId) => live.ended(id, runId));
    scheduler.on('ended', (id, result) => {
      live.ended(id);
      this.asks.runEnded(id, result);
    });
    this.recordings = new Recordings({ store, changed: () => this.deltas.soon(0) });
    this.extractions = new Extractions({
      store,
      client,
      grants,
      isActive: (id) => scheduler.isActive(id),
    });
    this.cards = new BoardCards({
      store,
      grants,
      scheduler,
      card: (id) => this.card(id),
      queue: (id) => this.move(id, 'queued', Number.MAX_SAFE_INTEGER),
      schedulesChanged: () => void this.schedules.sync().catch(() => undefined),
      changed: () => this.deltas.soon(0),
    });
    const changed = (): void => this.deltas.soon();
    store.on('cards', changed);
    store.on('config', changed);
    scheduler.on('changed', changed);
    scheduler.on('changed', () => this.schedules.boardChanged());
    store.on('cards', () => this.schedules.boardChanged());
  }

  /**
   * The service's first steps, once made (openBoard, open-board.ts): the runs going are followed again,
   * extractions that ran on meanwhile resumed, the schedules registered.
   */
  async start(): Promise<void> {
    await this.scheduler.recover();
    void this.extractions.resume().then(() => this.deltas.soon(0)); // extractions that ran on meanwhile
    // Not waited for: the board opens while its schedules are registered and what fired while no board
    // was open is taken (a card it queues comes as a delta, as any change does).
    void this.schedules.start().catch((err: Error) => {
      // A supervisor from before schedules (they outlive host upgrades): the board works, schedules wait.
      process.emitWarning(`runboard: schedules are not running: ${err.message}`);
    });
    this.deltas.diff(); // the starting point of the deltas
  }

  /**
   * Registers this project with the supervisor (as `runboard init` does): it then reads the project's
   * cards' schedules itself, so they fire with no board open, after this one closes or it restarts.
   */
  async registerProject(): Promise<void> {
    await call(this.client.conn, RegisterProject, { project: this.store.projectDir });
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

  /** What the page's first screen shows (BoardViews.firstScreen), sent with the page itself. */
  firstScreen(perColumn: number): FirstScreenView {
    return { version: this.deltas.version, ...this.views.firstScreen(perColumn) };
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
    const mine = await this.runs.ofCard(card.file);
    for (const r of mine) this.runs.remember(r);
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
      ...this.openAsks(id, card, mine),
      ...attemptsOfCard(card),
    };
  }

  /** The permission asks of the card's last run still waiting for the person (card in Needs input). */
  private openAsks(
    id: string,
    card: Card,
    runs: readonly RunResult[],
  ): Pick<CardDetail, 'asks' | 'otherAsks'> {
    if (this.scheduler.isActive(id)) {
      // every live run that waits (the card's run, or each of its attempts'), the oldest first, as the
      // supervisor recorded its asks (an event says which ask waits, the record what it is): the header
      // counts each, so the inspector shows each
      const waiting: CardAsks[] = [];
      for (const w of this.asks.liveWaiting(id)) {
        const record = runs.find((r) => r.runId === w.runId)?.asks;
        const open = this.asks
          .open(id, w.runId, w.asks)
          .flatMap(
            (a) =>
              record?.filter(
                (x) => x.id === a.id && x.kind === a.kind && x.path === a.path && x.port === a.port,
              ) ?? [],
          );
        if (open.length)
          waiting.push({
            runId: w.runId,
            flow: card.front.flow,
            open,
            live: true,
            ...(w.attempt ? { attempt: w.attempt } : {}),
          });
      }
      const [first, ...others] = waiting;
      return first ? { asks: first, ...(others.length ? { otherAsks: others } : {}) } : {};
    }
    if (card.front.status !== 'needs-input' || !card.front.lastRun) return {};
    const last = runs.find((r) => r.runId === card.front.lastRun);
    const open = last?.asks ? this.asks.open(id, last.runId, last.asks) : [];
    return open.length ? { asks: { runId: last!.runId, flow: last!.flow, open } } : {};
  }

  /** The folder picker: the subfolders of `folder` (default: the user's home; board-folders.ts). */
  folders(folder?: string): FolderListing {
    return listFolders(this.grants, folder);
  }

  /**
   * The person chose `folder` in the folder picker (or pressed Grant again): grant it. The same check
   * as \`runboard grant\` (a folder holding Runboard's own state is refused, saying why).
   */
  grantFolder(folder: string): { path: string } {
    if (!path.isAbsolute(folder)) throw new Invalid(`not an absolute folder path: ${folder}`);
    try {
      const g = this.grants.grant(folder);
      this.deltas.soon(0);
      this.scheduler.kick();
      return { path: g.path };
    } catch (err) {
      if (err instanceof GrantError) throw new Invalid(err.message);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new NotFound(`no folder ${folder}`);
      throw new Invalid((err as Error).message);
    }
  }

  /** The granted folders a card may work in (the editor's choices). */
  cardForm(): CardForm {
    return this.cards.form();
  }

  /** The checked fields of a new card, written as a person would write the file (board-cards.ts). */
  createCard(f: CardFields, schedule?: ScheduleEdit, queue?: boolean): { id: string } {
    return this.cards.create(f, schedule, queue);
  }

  /** A person changes a card: only what differs is written (board-cards.ts). */
  editCard(id: string, f: CardFields, baseBody: string): void {
    this.cards.edit(id, f, baseBody);
  }

  duplicateCard(id: string): { id: string } {
    return this.cards.duplicate(id);
  }

  trashCard(id: string): TrashedCard {
    return this.cards.trashOne(id);
  }

  trash(): TrashedCard[] {
    return this.cards.trash();
  }

  restoreCard(name: string): { id?: string; file: string } {
    return this.cards.restore(name);
  }

  cardSource(id: string): CardSource {
    return this.cards.source(id);
  }

  saveCardSource(id: string, text: string, base: string): { id?: string } {
    return this.cards.saveSource(id, text, base);
  }

  /** The card's workflow for the editor (docs/workflows.md; board-workflows.ts). */
  workflow(id: string): CardWorkflowView {
    return this.workflows.workflow(id);
  }

  /** A replay card's parameters and the card's values for them (the board's form). */
  replayParams(id: string): ReplayParamsView {
    return this.workflows.replayParams(id);
  }

  /** Writes the card's `params:` (its workflow's parameters only); with `queue`, queues the card. */
  setReplayParams(id: string, params: Record<string, string>, queue: boolean | undefined): Promise<void> {
    return this.workflows.setReplayParams(id, params, queue);
  }

  /** What is wrong with an edited workflow; saves nothing. */
  checkWorkflow(id: string, workflow: unknown): WorkflowSaveResult {
    return this.workflows.checkWorkflow(id, workflow);
  }

  /** A person's edit of the card's workflow: saved whole when valid and the file is still `base`. */
  saveWorkflow(id: string, workflow: unknown, base: string | undefined): WorkflowSaveResult {
    return this.workflows.saveWorkflow(id, workflow, base);
  }

  /** A person sets (or with null removes) the card's schedule; what cannot fire is refused with why. */
  async setSchedule(id: string, edit: ScheduleEdit | null): Promise<void> {
    this.card(id);
    const raw = edit === null ? undefined : scheduleFrontMatter(edit);
    if (raw !== undefined) {
      const r = resolveSchedule(raw, localZone());
      if (!r.ok) throw new Invalid(r.error);
    }
    this.store.update(id, { schedule: raw }, undefined, { confirm: true });
    await this.schedules.sync(); // the inspector asks for the supervisor's record right after
  }

  /**
   * A person moves a card to `index` of column `to` (drag and drop, keyboard, or the API). A move to
   * Queued confirms the card as it is (`confirm`: false for a schedule's fire, which is no person's act).
   */
  move(id: string, to: Column, index: number, confirm = true): void {
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
    const patch: Record<string, unknown> = { status: cardTransition('moved', from, to) };
    if (ranks.has(id)) patch.rank = ranks.get(id);
    this.store.update(id, patch, undefined, { confirm: confirm && to === 'queued' });
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  /** A person confirms a card changed outside the board, as the board showed it (`digest`). */
  confirmCard(id: string, digest: string): void {
    // its schedule, if any, fires from the Confirm on (decision 111)
    this.schedules.confirmed(this.card(id).file);
    this.store.confirmCard(id, digest);
    this.deltas.soon(0);
    this.scheduler.kick();
    void this.schedules.sync().catch(() => undefined);
  }

  /** A person confirms config.yaml changed outside the board, as the board showed it (`digest`). */
  confirmConfig(digest: string): void {
    this.store.confirmConfig(digest);
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

  /**
   * Recording → task: starts an extraction run (extract.ts) and answers at once; the card shows it
   * going (`needs`) and then the task, or unchanged, why not (`lastError`).
   */
  async extractTask(req: ExtractRequest): Promise<ExtractStart> {
    try {
      const { cardId, runId, done } = await this.extractions.start(req);
      void done.then(() => this.deltas.soon(0));
      this.deltas.soon(0);
      return { cardId, runId };
    } catch (err) {
      if (err instanceof ExtractRefused || err instanceof NoGrantError) throw new Invalid(err.message);
      throw err;
    }
  }

  /**
   * A video from the person's computer (`runboard serve`'s upload): kept in the project's `videos/`
   * (video-import.ts), then made a task as `extractTask` with its path; removed again when refused.
   */
  async importVideo(
    req: { name: string; card?: string | undefined; flow?: string | undefined },
    body: Readable,
    declared: number | undefined,
  ): Promise<ExtractStart> {
    // the extraction run reads the video in its folder: without a grant of it the bytes would be for nothing
    const videos = path.join(this.store.projectDir, 'videos');
    if (!this.grants.find(videos)) throw new Invalid(new NoGrantError(videos).message);
    let file: string;
    try {
      file = await importVideo(this.store.projectDir, req.name, body, {
        maxBytes: VIDEO_LIMITS.maxBytes,
        declared,
      });
    } catch (err) {
      if (err instanceof VideoImportRefused) throw new Invalid(err.message);
      throw err;
    }
    try {
      return await this.extractTask({ file, card: req.card, flow: req.flow });
    } catch (err) {
      await unlink(file).catch(() => undefined);
      throw err;
    }
  }

  /** Run again (to the end of Queued) or, for a card already queued, Retry now: the backoff is dropped. */
  requeue(id: string): void {
    const card = this.card(id);
    if (this.scheduler.isActive(id)) throw new MoveRefused('the card is running: it cannot be queued again');
    if (this.columnOf(id, card) !== 'queued') return this.move(id, 'queued', Number.MAX_SAFE_INTEGER);
    this.store.update(id, { failures: undefined, nextTryAt: undefined }, undefined, { confirm: true });
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  async cancel(id: string): Promise<void> {
    this.card(id);
    if (!(await this.scheduler.cancel(id))) throw new MoveRefused('the card has no run going');
  }

  /** A run's worktree changes as a unified diff (base commit → the run's commit), at most 1 MiB. */
  worktreeDiff(runId: string): Promise<WorktreeDiff> {
    return this.runs.worktreeDiff(runId);
  }

  /** Keep a run's worktree (merge its branch into the base branch) or discard it. */
  settleWorktree(runId: string, how: 'keep' | 'discard'): Promise<RunResult> {
    return this.runs.settleWorktree(runId, how);
  }

  /** The supervisor's providers and the ones config.yaml's flows name (board-settings.ts). */
  providers(): Promise<ProviderView[]> {
    return this.settingsArea.providers();
  }

  /** Stores (or removes) a provider key with the supervisor; cards waiting for it may start. */
  setProviderKey(provider: string, key: string | null): Promise<{ hasKey: boolean }> {
    return this.settingsArea.setProviderKey(provider, key);
  }

  /** Asks the provider, through the supervisor, whether it accepts the stored key. */
  checkProviderKey(provider: string): Promise<KeyCheck> {
    return this.settingsArea.checkProviderKey(provider);
  }

  settings(): Settings {
    return this.settingsArea.settings();
  }

  /** The project's disk use, for Settings (gc.ts: the same scan `runboard gc` makes). */
  diskUsage(): Promise<DiskUsageView> {
    return this.settingsArea.diskUsage();
  }

  /** The effective config as the files say now (defaults ← user config ← config.yaml), for Settings. */
  configView(): ConfigView {
    return this.settingsArea.configView();
  }

  /** Writes the caps back into config.yaml, keeping its comments and order. */
  saveSettings(s: Settings): void {
    this.settingsArea.saveSettings(s);
  }

  runFiles(runId: string): Promise<RunFileList> {
    return this.files.list(runId);
  }

  /** An image of a run, only when it is one of its screenshots (run-files.ts). */
  screenshot(runId: string, name: string): Promise<Buffer> {
    return this.files.screenshot(runId, name);
  }

  /** A page of a run of this project's model debug log (debug-log.ts). */
  async debugLog(runId: string, page: Parameters<typeof debugLogPage>[2]): Promise<DebugLogPage> {
    return debugLogPage(await this.runs.byId(runId), this.store.projectDir, page);
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
    return streamRun(this.paths, runId, viewer, this.runs.known(runId));
  }
}

/** What the card's front matter records of its last attempts (written by scheduler-attempts.ts). */
function attemptsOfCard(card: Card): Pick<CardDetail, 'attempts'> {
  const f = card.front as Record<string, unknown>;
  const runs = f.attemptRuns;
  if (!Array.isArray(runs) || !runs.every((r) => r === null || typeof r === 'string')) return {};
  return {
    attempts: {
      runs: runs as (string | null)[],
      ...(typeof f.judgeRun === 'string' ? { judgeRun: f.judgeRun } : {}),
      ...(typeof f.winner === 'number' ? { winner: f.winner } : {}),
      ...(typeof f.verdict === 'string' ? { verdict: f.verdict } : {}),
    },
  };
}
