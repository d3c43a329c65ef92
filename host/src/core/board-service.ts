/**
 * The host core behind both shells (Electron main and `runboard serve`): the board store, the
 * scheduler and the supervisor connections, exposed as the intents and views of the board's methods
 * (host/src/shared/board-methods.ts). Composition happens in `BoardService.open`; the board view,
 * its deltas, a run's files and its stream are units of their own (board-view.ts, board-deltas.ts,
 * run-files.ts, run-stream.ts).
 */
import { EventEmitter } from 'node:events';
import path from 'node:path';
import {
  checkWorkflow,
  ErrorCodes,
  JsonRpcCodes,
  paramSecretRefs,
  ResponseError,
  type RunResult,
} from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import { diskUsageView } from './gc.ts';
import { call, RegisterProject } from '@runboard/supervisor/protocol';
import { commonGitDir, safeGit } from '@runboard/supervisor/git';
import {
  COLUMNS,
  type Answer,
  type BoardDelta,
  type BoardView,
  type FirstScreenView,
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
import { checkRunId, Invalid, MoveRefused, NotFound } from './board-errors.ts';
import { compareCards, moveRefusal, ranksForMove } from './board-model.ts';
import { cardTransition } from './card-lifecycle.ts';
import { setYamlValues, type YamlSet } from './config-edit.ts';
import { BoardDeltas } from './board-deltas.ts';
import { answerQuestions, parseQuestions } from './board-questions.ts';
import { CardParseCache } from './card-parse-cache.ts';
import { BoardStore, questionsOf } from './board-store.ts';
import { BoardViews } from './board-view.ts';
import { Extractions, ExtractRefused, type ExtractRequest } from './extract.ts';
import { PermissionAsks } from './permission-asks.ts';
import { GrantStore } from './grant-store.ts';
import { GrantError } from '@runboard/supervisor/grants';
import { flowProvider, NoGrantError } from './launch.ts';
import { configRows, loadEffectiveConfig, userConfigPath, type Card } from './project.ts';
import { Recordings } from './recordings.ts';
import { RunFiles } from './run-files.ts';
import { streamRun, type RunViewer } from './run-stream.ts';
import { Scheduler } from './scheduler.ts';
import { HostSchedules, localZone, scheduleFrontMatter } from './schedules.ts';
import { resolveSchedule } from '@runboard/project/schedule';
import { Ledger } from '@runboard/supervisor/ledger';
import { followBackend } from './backend.ts';
import { SupervisorClient } from './supervisor-client.ts';
import { saveWorkflow, workflowView } from './workflow-store.ts';
import type { CardWorkflowView, WorkflowSaveResult } from '../shared/workflow-edit.ts';
import type { ReplayParamsView } from '../shared/replay-params.ts';

export { Invalid, MoveRefused, NotFound } from './board-errors.ts';
export { STREAM_HIGH_WATER, STREAM_TAIL_BYTES, type RunViewer } from './run-stream.ts';

/** How many runs the host keeps at hand for the inspector (older ones are asked for again). */
const KNOWN_RUNS_MAX = 2000;

/** How long after opening the board starts its watcher (decision 45). */
const WATCH_AFTER_MS = 1000;

export class BoardService extends EventEmitter<{ changed: []; delta: [BoardDelta] }> {
  /** Runs seen lately (from card details), for the tail offsets of a stream. */
  private readonly knownRuns = new Map<string, RunResult>();
  private readonly views: BoardViews;
  private readonly deltas: BoardDeltas;
  private readonly files: RunFiles;
  readonly schedules: HostSchedules;
  /** The project's recordings and the one being recorded from the board (recordings.ts). */
  readonly recordings: Recordings;
  private readonly extractions: Extractions;
  /** The person's answers to permission asks (permission-asks.ts). */
  readonly asks: PermissionAsks;

  private constructor(
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
        const column = this.columnOf(id, this.card(id));
        return column === 'queued' || column === 'running' ? column : undefined;
      },
      changed: () => this.deltas.soon(),
      adopt: (id, runId) => scheduler.adoptRun(id, runId),
    });
    this.views = new BoardViews(store, scheduler, this.schedules, grants);
    this.deltas = new BoardDeltas(
      () => this.views.view(),
      (d) => {
        if (d) this.emit('delta', d);
        this.emit('changed');
      },
    );
    this.files = new RunFiles(paths, (runId) => this.runById(runId));
    this.asks = new PermissionAsks(store, scheduler, client, grants, (s) => scheduler.topRank(s));
    this.recordings = new Recordings({ store, changed: () => this.deltas.soon(0) });
    this.extractions = new Extractions({
      store,
      client,
      grants: new GrantStore(paths),
      isActive: (id) => scheduler.isActive(id),
    });
    const changed = (): void => this.deltas.soon();
    store.on('cards', changed);
    store.on('config', changed);
    scheduler.on('changed', changed);
    scheduler.on('changed', () => this.schedules.boardChanged());
    store.on('cards', () => this.schedules.boardChanged());
  }

  static async open(projectDir: string, paths: StatePaths): Promise<BoardService> {
    // The supervisor is reached (or started) while the cards are read: two start-ups at once.
    const connecting = SupervisorClient.connect(paths, { autoStart: true, reconnect: true });
    const store = new BoardStore(projectDir, {
      cache: new CardParseCache(CardParseCache.fileFor(paths.root, projectDir)),
      ledger: Ledger.open(paths.root, projectDir),
    });
    let client: SupervisorClient;
    try {
      store.load();
      // Outside edits are followed once the watcher is ready, and what changed before that is read then
      // (BoardStore.catchUp). So the board need not wait for the watcher's walk of cards/ (an lstat and
      // a watch per file), and that walk starts a moment later, after the page's first screen has been
      // served: run at once, it took the event loop just when the page asked for it.
      setTimeout(() => {
        store
          .watch()
          .catch((err: Error) => process.emitWarning(`runboard: not following card edits: ${err.message}`));
      }, WATCH_AFTER_MS).unref();
      client = await connecting;
    } catch (err) {
      void connecting.then(
        (c) => c.close(),
        () => undefined,
      );
      await store.close();
      throw err;
    }
    await followBackend(store, client); // before any launch: they go where the config says
    const grants = new GrantStore(paths);
    const scheduler = new Scheduler(store, client, grants);
    const service = new BoardService(store, scheduler, client, paths, grants);
    await scheduler.recover();
    void service.extractions.resume().then(() => service.deltas.soon(0)); // extractions that ran on meanwhile
    // Not waited for: the board opens while its schedules are registered and what fired while no board
    // was open is taken (a card it queues comes as a delta, as any change does).
    void service.schedules.start().catch((err: Error) => {
      // A supervisor from before schedules (they outlive host upgrades): the board works, schedules wait.
      process.emitWarning(`runboard: schedules are not running: ${err.message}`);
    });
    service.deltas.diff(); // the starting point of the deltas
    return service;
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
      ...this.openAsks(id, card, mine),
    };
  }

  /** The permission asks of the card's last run still waiting for the person (card in Needs input). */
  private openAsks(id: string, card: Card, runs: readonly RunResult[]): Pick<CardDetail, 'asks'> {
    if (card.front.status !== 'needs-input' || !card.front.lastRun) return {};
    const last = runs.find((r) => r.runId === card.front.lastRun);
    const open = last?.asks ? this.asks.open(id, last.runId, last.asks) : [];
    return open.length ? { asks: { runId: last!.runId, flow: last!.flow, open } } : {};
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

  /** The folder picker: the subfolders of `folder` (default: the user's home). */
  folders(folder?: string): FolderListing {
    if (folder !== undefined && folder !== '' && !path.isAbsolute(folder))
      throw new Invalid(`not an absolute folder path: ${folder}`);
    try {
      return this.grants.list(folder);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new NotFound(`no folder ${folder}`);
      if (code === 'ENOTDIR') throw new Invalid(`${folder} is not a folder`);
      if (code === 'EACCES') throw new MoveRefused(`${folder} cannot be read (permission denied)`);
      throw err;
    }
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
    const projectDir = this.store.projectDir;
    const seen = new Set<string>();
    const workspaces = [];
    for (const g of this.grants.all().sort((a, b) => a.path.localeCompare(b.path))) {
      if (seen.has(g.path)) continue;
      seen.add(g.path);
      workspaces.push({ path: g.path, label: this.workspaceValue(g.path) ?? '. (the project folder)' });
    }
    return { projectDir, workspaces };
  }

  /** How a card names `folder`: relative to the project folder when inside it; undefined for the project folder. */
  private workspaceValue(folder: string): string | undefined {
    const rel = path.relative(this.store.projectDir, folder);
    if (rel === '') return undefined;
    return rel.startsWith('..') || path.isAbsolute(rel) ? folder : `./${rel}`;
  }

  /** The checked fields of an edited or new card; `card` is the card as it is (an edit). */
  private checkFields(f: CardFields, card?: Card): void {
    if (!f.title.trim()) throw new Invalid('a card needs a title');
    const flows = this.store.config.flows;
    if (!Object.hasOwn(flows, f.flow))
      throw new Invalid(
        `no flow ${f.flow} in config.yaml (flows: ${Object.keys(flows).join(', ') || 'none'})`,
      );
    const ws = f.workspace ? path.resolve(f.workspace) : this.store.projectDir;
    if (!path.isAbsolute(f.workspace || '/'))
      throw new Invalid(`the workspace must be an absolute folder path (got ${f.workspace})`);
    // a folder the card had already stays as it is; a new one must be granted, or its runs could not start
    if (ws !== card?.workspace && !this.grants.find(ws))
      throw new Invalid(
        `${ws} is not granted to runs: grant it first (Grant a folder… in the editor, or \`runboard grant ${ws}\`)`,
      );
    const runner = flows[f.flow]!.runner;
    const command = typeof f.command === 'string' ? f.command.trim() : f.command;
    if (runner === 'command' && !command)
      throw new Invalid(`flow ${f.flow} runs a command: give the command the card runs`);
  }

  /** The card's front matter for these fields (undefined: the field is left out). */
  private frontOf(f: CardFields): Record<string, unknown> {
    const command = typeof f.command === 'string' ? f.command.trim() || undefined : f.command;
    return {
      title: f.title.trim(),
      flow: f.flow,
      workspace: f.workspace ? this.workspaceValue(path.resolve(f.workspace)) : undefined,
      command,
    };
  }

  /** A person writes a new card from the board: a card file as they would write it, in Backlog (or queued). */
  createCard(f: CardFields, schedule?: ScheduleEdit, queue?: boolean): { id: string } {
    this.checkFields(f);
    let raw: unknown;
    if (schedule?.text.trim()) {
      raw = scheduleFrontMatter(schedule);
      const r = resolveSchedule(raw, localZone());
      if (!r.ok) throw new Invalid(r.error);
    }
    const card = this.store.create({ ...this.frontOf(f), schedule: raw }, f.body);
    const id = String(card.front.id);
    if (queue) this.move(id, 'queued', Number.MAX_SAFE_INTEGER);
    if (raw !== undefined) void this.schedules.sync().catch(() => undefined);
    this.deltas.soon(0);
    return { id };
  }

  /**
   * A person changes a card: only what differs is written, so comments, field order and the host's
   * state stay. The body is replaced only if the file's body is still what the editor started from.
   */
  editCard(id: string, f: CardFields, baseBody: string): void {
    const card = this.card(id);
    if (this.scheduler.isActive(id)) throw new MoveRefused('the card is running: cancel the run to edit it');
    this.checkFields(f, card);
    const next = this.frontOf(f);
    const patch: Record<string, unknown> = {};
    if (next.title !== card.front.title) patch.title = next.title;
    if (next.flow !== card.front.flow) patch.flow = next.flow;
    const ws = f.workspace ? path.resolve(f.workspace) : this.store.projectDir;
    if (ws !== card.workspace) patch.workspace = next.workspace;
    if (JSON.stringify(next.command) !== JSON.stringify(card.front.command)) patch.command = next.command;
    const body = f.body.replace(/\r\n/g, '\n');
    const bodyChanged = body !== card.body;
    if (bodyChanged && baseBody.replace(/\r\n/g, '\n') !== card.body)
      throw new MoveRefused(
        `${path.relative(this.store.projectDir, card.file)} changed since you opened it (edited outside the board, or by a run): copy your text, reopen the card and edit again`,
      );
    if (!Object.keys(patch).length && !bodyChanged) return;
    this.store.update(id, patch, bodyChanged ? () => body : undefined);
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  /** A copy of the card in Backlog, without its runs' state. */
  duplicateCard(id: string): { id: string } {
    this.card(id);
    const copy = this.store.duplicate(id);
    this.deltas.soon(0);
    return { id: String(copy.front.id) };
  }

  /** The file of a card or of a broken card (`broken:<file>`), by the id the board shows. */
  private fileOf(id: string): { file: string; card?: Card } {
    if (id.startsWith('broken:')) {
      const b = this.store.brokenFile(id.slice('broken:'.length));
      if (!b) throw new NotFound(`no broken card ${id.slice('broken:'.length)}`);
      return { file: b.file };
    }
    const card = this.card(id);
    return { file: card.file, card };
  }

  /** Moves a card file into the trash folder (a running card is cancelled first, by the person). */
  trashCard(id: string): TrashedCard {
    const { file, card } = this.fileOf(id);
    if (card && this.scheduler.isActive(id))
      throw new MoveRefused('the card is running: cancel the run to delete it');
    const t = this.store.trash(file);
    this.deltas.soon(0);
    return t;
  }

  trash(): TrashedCard[] {
    return this.store.trashed();
  }

  /** Puts a trashed card back (under its old name, or a new one when that is taken meanwhile). */
  restoreCard(name: string): { id?: string; file: string } {
    let file: string;
    try {
      file = this.store.restore(name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new NotFound(`no card ${name} in the trash`);
      throw new Invalid((err as Error).message);
    }
    this.deltas.soon(0);
    const id = this.store.idForFile(file);
    return { ...(id ? { id } : {}), file: path.relative(this.store.projectDir, file) };
  }

  /** A card file's whole text (a broken card's too, when it is a regular file). */
  cardSource(id: string): CardSource {
    const { file } = this.fileOf(id);
    const rel = path.relative(this.store.projectDir, file);
    try {
      return { file: rel, text: this.store.readText(file) };
    } catch (err) {
      return { file: rel, error: (err as Error).message };
    }
  }

  /** A person's edit of a card file's whole text; refused when the file changed since `base` was read. */
  saveCardSource(id: string, text: string, base: string): { id?: string } {
    const { file, card } = this.fileOf(id);
    if (card && this.scheduler.isActive(id))
      throw new MoveRefused('the card is running: cancel the run to edit it');
    let saved: boolean;
    try {
      saved = this.store.replaceText(file, text.replace(/\r\n/g, '\n'), base);
    } catch (err) {
      throw new MoveRefused(
        `${path.relative(this.store.projectDir, file)}: ${(err as Error).message}: move it to the trash, or fix it outside the board`,
      );
    }
    if (!saved)
      throw new MoveRefused(
        `${path.relative(this.store.projectDir, file)} changed since you opened it: copy your text, reopen it and edit again`,
      );
    this.deltas.soon(0);
    this.scheduler.kick();
    const newId = this.store.idForFile(file);
    return newId ? { id: newId } : {};
  }

  /** The card's workflow for the editor (docs/workflows.md). */
  workflow(id: string): CardWorkflowView {
    return workflowView(this.card(id).file, this.store.projectDir);
  }

  /** A replay card's parameters and the card's values for them (the board's form). */
  replayParams(id: string): ReplayParamsView {
    const card = this.card(id);
    const replay = this.store.config.flows[card.front.flow]?.runner === 'replay';
    const view = workflowView(card.file, this.store.projectDir);
    if (!view.workflow)
      return {
        replay,
        params: [],
        problem:
          view.text === undefined ? `no workflow yet (${view.file})` : `${view.file} is not a valid workflow`,
      };
    const given = paramsOf(card.front.params);
    const stored = paramSecretRefs(card.front.params);
    return {
      replay,
      params: view.workflow.task_params.map((p) => ({
        name: p.name,
        description: p.description,
        example: p.example,
        sensitive: p.sensitive,
        optional: p.optional,
        // a sensitive value never goes back to the page: only that the supervisor keeps one
        ...(stored[p.name] ? { stored: true } : {}),
        ...(given[p.name] !== undefined && !p.sensitive ? { value: given[p.name] } : {}),
      })),
    };
  }

  /**
   * Writes the card's `params:` (its workflow's parameters only); with `queue`, queues the card. A
   * sensitive parameter's value goes to the supervisor's secrets and the card keeps its reference
   * (`{secret: s-…}`); an empty one keeps the reference the card has. A sensitive value the card holds
   * in clear (written by hand, or by an older board) is moved there too.
   */
  async setReplayParams(
    id: string,
    params: Record<string, string>,
    queue: boolean | undefined,
  ): Promise<void> {
    const card = this.card(id);
    if (this.scheduler.isActive(id))
      throw new MoveRefused('the card is running: change its parameters after the run');
    const w = workflowView(card.file, this.store.projectDir).workflow;
    if (!w)
      throw new MoveRefused(
        'the card has no valid workflow: reflect a recording into it, or fix its schema.json',
      );
    const names = w.task_params.map((p) => p.name);
    const unknown = Object.keys(params).filter((k) => !names.includes(k));
    if (unknown.length)
      throw new Invalid(
        `${unknown.map((k) => `"${k}"`).join(', ')} is not a parameter of the workflow (it has: ${names.join(', ') || 'none'})`,
      );
    const sensitive = new Set(w.task_params.filter((p) => p.sensitive).map((p) => p.name));
    const refs = paramSecretRefs(card.front.params);
    const inCard = paramsOf(card.front.params);
    const kept: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(params)) if (v !== '' && !sensitive.has(k)) kept[k] = v;
    for (const k of sensitive) {
      const v = params[k] || (refs[k] ? '' : (inCard[k] ?? ''));
      if (v === '') {
        if (refs[k]) kept[k] = { secret: refs[k] };
        continue;
      }
      const { ref } = await this.client.setParamSecret(card.file, k, v, refs[k]);
      if (ref) kept[k] = { secret: ref };
    }
    if (this.scheduler.isActive(id))
      throw new MoveRefused('the card is running: change its parameters after the run');
    this.store.update(id, { params: Object.keys(kept).length ? kept : undefined });
    if (queue) this.move(id, 'queued', Number.MAX_SAFE_INTEGER);
    this.deltas.soon(0);
    this.scheduler.kick();
  }

  /** What is wrong with an edited workflow; saves nothing. */
  checkWorkflow(id: string, workflow: unknown): WorkflowSaveResult {
    this.card(id);
    const r = checkWorkflow(workflow);
    return { saved: false, problems: r.ok ? [] : r.problems };
  }

  /** A person's edit of the card's workflow: saved whole when valid and the file is still `base`. */
  saveWorkflow(id: string, workflow: unknown, base: string | undefined): WorkflowSaveResult {
    const { file } = this.card(id);
    if (this.scheduler.isActive(id))
      throw new MoveRefused('the card is running: edit its workflow after the run');
    const r = saveWorkflow(file, workflow, base ?? null);
    return { saved: r.ok, problems: r.ok ? [] : r.problems };
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
    this.card(id);
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

  /** The supervisor's providers and the ones config.yaml's flows name, each with its flows. */
  async providers(): Promise<ProviderView[]> {
    const { providers } = await this.client.listProviders();
    const cfg = this.store.config;
    // a flow's provider is its own or its profile's
    const flows = Object.entries(cfg.flows).map(([n, f]) => [n, flowProvider(f, cfg)] as const);
    const usedBy = (name: string): string[] => flows.filter(([, p]) => p === name).map(([n]) => n);
    const out: ProviderView[] = providers.map((p) => ({ ...p, known: true, flows: usedBy(p.name) }));
    for (const [, provider] of flows)
      if (provider && !out.some((p) => p.name === provider))
        out.push({ name: provider, baseUrl: '', hasKey: false, known: false, flows: usedBy(provider) });
    return out;
  }

  /** Stores (or removes) a provider key with the supervisor; cards waiting for it may start. */
  async setProviderKey(provider: string, key: string | null): Promise<{ hasKey: boolean }> {
    const known = (await this.client.listProviders()).providers.some((p) => p.name === provider);
    if (!known)
      throw new Invalid(
        `the supervisor knows no provider "${provider}" (it knows openai, anthropic and those given by RUNBOARD_PROVIDER_<NAME>_URL)`,
      );
    const r = await this.client.setProviderKey(provider, key);
    if (r.hasKey) this.scheduler.keyStored(provider);
    return { hasKey: r.hasKey };
  }

  /** Asks the provider, through the supervisor, whether it accepts the stored key. */
  async checkProviderKey(provider: string): Promise<KeyCheck> {
    try {
      const { ok, status, message } = await this.client.checkProviderKey(provider);
      return { ok, ...(status !== undefined ? { status } : {}), message };
    } catch (err) {
      if (err instanceof ResponseError && err.code === JsonRpcCodes.MethodNotFound)
        return {
          ok: false,
          message: 'this supervisor cannot check keys yet: restart it (runboard supervisor stop)',
        };
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

  /** The project's disk use, for Settings (gc.ts: the same scan `runboard gc` makes). */
  diskUsage(): DiskUsageView {
    return diskUsageView(this.paths, this.store.projectDir, this.store.config.retention);
  }

  /** The effective config as the files say now (defaults ← user config ← config.yaml), for Settings. */
  configView(): ConfigView {
    try {
      const eff = loadEffectiveConfig(this.store.projectDir);
      return {
        files: eff.files,
        warnings: eff.warnings,
        rows: configRows(eff).map(({ key, value, source }) => ({
          key,
          value: typeof value === 'string' ? value : JSON.stringify(value),
          ...source,
        })),
      };
    } catch (err) {
      const files = { user: userConfigPath(), project: this.store.configFile, userExists: false };
      return { files, warnings: [], rows: [], error: (err as Error).message };
    }
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

  runFiles(runId: string): Promise<RunFileList> {
    return this.files.list(runId);
  }

  /** An image of a run, only when it is one of its screenshots (run-files.ts). */
  screenshot(runId: string, name: string): Promise<Buffer> {
    return this.files.screenshot(runId, name);
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

/** A card's `params:` front matter as strings (what a person wrote: numbers and booleans too). */
function paramsOf(v: unknown): Record<string, string> {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return {};
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>)
      // a reference to a value the supervisor keeps is not a value
      .filter(([, x]) => x !== null && x !== undefined && typeof x !== 'object')
      .map(([k, x]) => [k, String(x)]),
  );
}
