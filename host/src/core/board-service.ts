/**
 * The host core behind both shells (Electron main and `runboard serve`): the board store, the
 * scheduler and the supervisor connections, exposed as the intents and views of the renderer's
 * BoardApi (host/src/renderer/api.ts). Composition happens in `BoardService.open`.
 */
import { EventEmitter } from 'node:events';
import { createReadStream, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import tar from 'tar-stream';
import { z } from 'zod';
import { RunId, type Offsets, type RunEvent, type RunResult } from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import { commonGitDir, safeGit } from '@runboard/supervisor/git';
import type {
  Answer,
  BoardDelta,
  BoardView,
  CardDetail,
  CardView,
  Column,
  RunFiles,
  RunStreamMessage,
  WorktreeDiff,
  Settings,
} from '../renderer/api.ts';
import { compareCards, COLUMNS, moveRefusal, ranksForMove } from './board-model.ts';
import { answerQuestions, parseQuestions } from './board-questions.ts';
import { BoardStore, questionsOf } from './board-store.ts';
import { GrantStore } from './grant-store.ts';
import type { Card, CardStatus } from './project.ts';
import { Scheduler } from './scheduler.ts';
import { SupervisorClient, type AttachHandlers } from './supervisor-client.ts';

export class MoveRefused extends Error {}

/** Answers as they arrive from a shell (validated at the boundary: HTTP body or IPC argument). */
export const AnswerList = z
  .array(z.object({ index: z.number().int().min(0).max(1000), answer: z.string().max(65_536) }))
  .max(1000);
export class NotFound extends Error {}

/** How much of each output stream an inspector is sent when it opens a run (the rest: "export run"). */
export const STREAM_TAIL_BYTES = 2 * 1024 * 1024;
/** Bytes a viewer may have not yet taken before the host pauses its run stream (see streamRun). */
/** How many runs the host keeps at hand for the inspector (older ones are asked for again). */
const KNOWN_RUNS_MAX = 2000;

export const STREAM_HIGH_WATER = 4 * 1024 * 1024;

/** One viewer of a run stream (an SSE response, an Electron window). */
export interface RunViewer {
  send(m: RunStreamMessage): void;
  /** Bytes sent but not yet taken by the viewer; without it the stream is never paused. */
  backlog?(): number;
  /** Resolves when the viewer has taken what was sent (or is gone). */
  drained?(): Promise<void>;
}

function errorEvent(err: unknown): RunEvent {
  return { seq: -1, ts: new Date().toISOString(), type: 'error', message: String(err) };
}
const IMAGE = /\.(png|jpe?g|webp|gif)$/i;
/** A computer-use run's live view frame (worker/src/runners/computer-use/live.ts): not a step screenshot. */
const LIVE_FRAME = 'artifacts/live.jpg';

export class BoardService extends EventEmitter<{ changed: []; delta: [BoardDelta] }> {
  private changeTimer: NodeJS.Timeout | undefined;
  private changeAt = 0;
  /** The board as last announced: its version, each card's view (JSON) and the rest (JSON). */
  private version = 0;
  private readonly announced = new Map<string, string>();
  private announcedMeta = '';
  /** Runs seen lately (from card details), for the tail offsets of a stream. */
  private readonly knownRuns = new Map<string, RunResult>();

  private constructor(
    readonly store: BoardStore,
    readonly scheduler: Scheduler,
    private readonly client: SupervisorClient,
    private readonly paths: StatePaths,
  ) {
    super();
    const changed = (): void => this.changedSoon();
    store.on('cards', changed);
    store.on('config', changed);
    scheduler.on('changed', changed);
  }

  static async open(projectDir: string, paths: StatePaths): Promise<BoardService> {
    const store = new BoardStore(projectDir);
    store.load();
    await store.watch();
    const client = await SupervisorClient.connect(paths, { autoStart: true, reconnect: true });
    const scheduler = new Scheduler(store, client, new GrantStore(paths));
    const service = new BoardService(store, scheduler, client, paths);
    await scheduler.recover();
    service.diff(); // the starting point of the deltas
    return service;
  }

  async close(): Promise<void> {
    this.scheduler.stop();
    clearTimeout(this.changeTimer);
    await this.store.close();
    this.client.close();
  }

  /**
   * Coalesces bursts of changes (progress events, many card writes) into one delta per 50 ms; a
   * person's own intent (a move) goes out on the next turn of the event loop.
   */
  private changedSoon(ms = 50): void {
    const at = performance.now() + ms;
    if (this.changeTimer && this.changeAt <= at) return;
    clearTimeout(this.changeTimer);
    this.changeAt = at;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = undefined;
      const d = this.diff();
      if (d) this.emit('delta', d);
      this.emit('changed');
    }, ms);
  }

  /** The cards whose view changed since the last call (and the rest of the board, if it did). */
  private diff(): BoardDelta | undefined {
    const { cards, version: _v, ...meta } = this.view();
    const changed: CardView[] = [];
    const seen = new Set<string>();
    for (const c of cards) {
      seen.add(c.id);
      const json = JSON.stringify(c);
      if (this.announced.get(c.id) === json) continue;
      this.announced.set(c.id, json);
      changed.push(c);
    }
    const removed = [...this.announced.keys()].filter((id) => !seen.has(id));
    for (const id of removed) this.announced.delete(id);
    const metaJson = JSON.stringify(meta);
    const metaChanged = metaJson !== this.announcedMeta;
    this.announcedMeta = metaJson;
    if (!changed.length && !removed.length && !metaChanged) return undefined;
    const from = this.version++;
    return { from, to: this.version, cards: changed, removed, ...(metaChanged ? { meta } : {}) };
  }

  private columnOf(id: string, card: Card): Column {
    return this.scheduler.isActive(id) ? 'running' : (card.front.status ?? 'backlog');
  }

  /** Cards are new objects when their file changes, so the count is parsed once per version. */
  private readonly openCount = new WeakMap<Card, number>();
  private openQuestions(card: Card): number {
    let n = this.openCount.get(card);
    if (n === undefined) {
      n = parseQuestions(card.body).filter((q) => !q.answered).length;
      this.openCount.set(card, n);
    }
    return n;
  }

  private cardView(card: Card): CardView {
    const id = String(card.front.id);
    const f = card.front;
    const column = this.columnOf(id, card);
    const v: CardView = {
      id,
      file: path.relative(this.store.projectDir, card.file),
      title: f.title,
      flow: f.flow,
      column,
      locked: column === 'running',
    };
    if (f.rank !== undefined) v.rank = f.rank;
    const runId = this.scheduler.runIdOf(id) ?? f.lastRun;
    if (runId) v.runId = runId;
    const progress = this.scheduler.progress(id);
    if (progress && column === 'running') v.progress = progress;
    const waiting = this.scheduler.waitingReason(id);
    if (waiting && column === 'queued') v.waiting = waiting;
    if (f.failures) v.failures = f.failures;
    if (f.nextTryAt && f.failures) v.nextTryAt = f.nextTryAt;
    if (f.lastError) v.lastError = f.lastError;
    if (f.needs) v.needs = f.needs;
    const open = this.openQuestions(card);
    if (open) v.openQuestions = open;
    return v;
  }

  view(): BoardView {
    const cfg = this.store.config;
    const cards = this.store
      .all()
      .map((c) => ({ id: String(c.front.id), file: c.file, rank: c.front.rank, card: c }))
      .sort(compareCards)
      .map((c) => this.cardView(c.card));
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
    const runningPerFlow = new Map<string, number>();
    for (const c of cards)
      if (c.column === 'running') runningPerFlow.set(c.flow, (runningPerFlow.get(c.flow) ?? 0) + 1);
    return {
      version: this.version,
      project: this.store.projectDir,
      cards,
      maxConcurrency: cfg.scheduler.maxConcurrency,
      running: this.scheduler.activeCount,
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
    };
  }

  private card(id: string): Card {
    const card = this.store.get(id);
    if (!card) throw new NotFound(`no card ${id}`);
    return card;
  }

  async cardDetail(id: string): Promise<CardDetail> {
    const card = this.card(id);
    const mine = await this.runsOf(card.file);
    for (const r of mine) this.remember(r);
    const questions = questionsOf(card.body);
    return {
      card: this.cardView(card),
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

  /** A person moves a card to `index` of column `to` (drag and drop, keyboard, or the API). */
  move(id: string, to: Column, index: number): void {
    const card = this.card(id);
    const from = this.columnOf(id, card);
    const refusal = moveRefusal(from, to, this.scheduler.isActive(id));
    if (refusal) throw new MoveRefused(refusal);
    if (!COLUMNS.includes(to)) throw new MoveRefused(`no column ${to}`);
    const column = this.store
      .all()
      .filter((c) => this.columnOf(String(c.front.id), c) === to)
      .map((c) => ({ id: String(c.front.id), file: c.file, rank: c.front.rank }))
      .sort(compareCards);
    const ranks = ranksForMove(column, id, index);
    for (const [other, rank] of ranks) if (other !== id) this.store.update(other, { rank });
    const patch: Record<string, unknown> = { status: to satisfies CardStatus };
    if (ranks.has(id)) patch.rank = ranks.get(id);
    this.store.update(id, patch);
    this.changedSoon(0);
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
    const { run } =
      how === 'keep' ? await this.client.keepWorktree(runId) : await this.client.discardWorktree(runId);
    this.remember(run);
    return run;
  }

  /** Runs seen lately (inspector views), most recent last: bounded, a long-lived host stays small. */
  private remember(run: RunResult): void {
    this.knownRuns.delete(run.runId);
    this.knownRuns.set(run.runId, run);
    if (this.knownRuns.size > KNOWN_RUNS_MAX) this.knownRuns.delete(this.knownRuns.keys().next().value!);
  }

  private async runById(runId: string): Promise<RunResult> {
    this.logDir(runId); // validates the id and that the run exists
    const { runs } = await this.client.list({ limit: 10_000 });
    const run = runs.find((r) => r.runId === runId) ?? this.knownRuns.get(runId);
    if (!run) throw new NotFound(`no run ${runId}`);
    return run;
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
    this.store.updateConfig((doc) => {
      doc.setIn(['scheduler', 'maxConcurrency'], s.maxConcurrency);
      for (const f of s.flows) {
        if (!known[f.name]) throw new MoveRefused(`no flow ${f.name} in config.yaml`);
        doc.setIn(['flows', f.name, 'cap'], f.cap);
      }
      for (const col of COLUMNS) {
        const limit = s.columnLimits[col];
        if (limit !== undefined && limit > 0) doc.setIn(['scheduler', 'columnLimits', col], limit);
        else if (doc.hasIn(['scheduler', 'columnLimits', col]))
          doc.deleteIn(['scheduler', 'columnLimits', col]);
      }
    });
    this.scheduler.kick();
  }

  private logDir(runId: string): string {
    if (!RunId.safeParse(runId).success) throw new NotFound(`not a run id: ${runId}`);
    const dir = path.join(this.paths.logsDir, runId.slice(0, 8), runId);
    try {
      statSync(dir);
    } catch {
      throw new NotFound(`no run ${runId}`);
    }
    return dir;
  }

  runFiles(runId: string): RunFiles {
    const dir = this.logDir(runId);
    const screenshots: string[] = [];
    const walk = (rel: string): void => {
      for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory() && r.split('/').length < 3) walk(r);
        else if (e.isFile() && IMAGE.test(e.name) && r !== LIVE_FRAME) screenshots.push(r);
      }
    };
    walk('');
    return { screenshots: screenshots.sort() };
  }

  /** Absolute path of an image of a run, only when it is one of its screenshots. */
  screenshotPath(runId: string, name: string): string {
    if (!this.runFiles(runId).screenshots.includes(name)) throw new NotFound(`no screenshot ${name}`);
    return path.join(this.logDir(runId), name);
  }

  /**
   * The live frame of a running computer-use run on a private display (the worker rewrites it about once
   * a second, atomically). Only while the run's result.json says `running`: after the end (or a worker
   * that died before removing it) there is no live view, only the step screenshots.
   */
  liveFrame(runId: string): Buffer {
    const dir = this.logDir(runId);
    let status: unknown;
    try {
      status = (JSON.parse(readFileSync(path.join(dir, 'result.json'), 'utf8')) as { status?: unknown })
        .status;
    } catch {
      throw new NotFound(`run ${runId} has no readable result.json`);
    }
    if (status !== 'running') throw new NotFound(`run ${runId} has ended: no live view`);
    try {
      return readFileSync(path.join(dir, LIVE_FRAME)); // small (~30 KB); the file may go any moment
    } catch {
      throw new NotFound(`run ${runId} has no live frame (yet)`);
    }
  }

  /** Writes the run dir as one .tar.gz to `out`. */
  async exportRun(runId: string, out: Writable): Promise<void> {
    const dir = this.logDir(runId);
    const pack = tar.pack();
    const done = pipeline(pack, createGzip(), out);
    const add = async (rel: string): Promise<void> => {
      for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) await add(r);
        else if (e.isFile()) {
          const full = path.join(dir, r);
          const st = statSync(full);
          const header = { name: `${runId}/${r}`, size: st.size, mtime: st.mtime };
          await new Promise<void>((resolve, reject) => {
            const cb = (err?: Error | null): void => (err ? reject(err) : resolve());
            if (st.size === 0) return void pack.entry(header, '', cb);
            // a growing log: send exactly the size announced in the header
            createReadStream(full, { start: 0, end: st.size - 1 })
              .on('error', reject)
              .pipe(pack.entry(header, cb));
          });
        }
      }
    };
    await add('');
    pack.finalize();
    await done;
  }

  /**
   * Streams a run to one viewer over its own supervisor connection (attachments are per connection):
   * the last STREAM_TAIL_BYTES of each output first, then live, as whole lines in batches.
   *
   * Backpressure: when `viewer.backlog()` (bytes the viewer has not taken yet, e.g. an SSE socket's
   * write buffer) passes STREAM_HIGH_WATER, the host detaches from the supervisor and re-attaches from
   * the exact offsets it had reached once `viewer.drained()` resolves. So a slow page never makes the
   * host buffer a growing log: host memory stays bounded whatever the log's size, and no line is lost.
   */
  streamRun(runId: string, viewer: RunViewer): () => void {
    let stopped = false;
    let client: SupervisorClient | undefined;
    const partial = { stdout: '', stderr: '' };
    const pending = { stdout: [] as string[], stderr: [] as string[] };
    let flushTimer: NodeJS.Timeout | undefined;
    let paused = false;
    const flush = (): void => {
      clearTimeout(flushTimer);
      flushTimer = undefined;
      for (const s of ['stdout', 'stderr'] as const) {
        if (pending[s].length) viewer.send({ type: 'lines', stream: s, lines: pending[s] });
        pending[s] = [];
      }
      if (!paused && !stopped && (viewer.backlog?.() ?? 0) > STREAM_HIGH_WATER && viewer.drained)
        void pause();
    };
    const known = this.knownRuns.get(runId);
    let from: Partial<Offsets> = {
      events: 0,
      stdout: Math.max(0, (known?.stdoutBytes ?? 0) - STREAM_TAIL_BYTES),
      stderr: Math.max(0, (known?.stderrBytes ?? 0) - STREAM_TAIL_BYTES),
    };
    const skipped = from.stdout! + from.stderr!;
    const skipFirstPartial = { stdout: from.stdout! > 0, stderr: from.stderr! > 0 };
    const handlers: AttachHandlers = {
      onOutput: (stream, data) => {
        const text = partial[stream] + data;
        const lines = text.split('\n');
        partial[stream] = lines.pop()!;
        if (skipFirstPartial[stream] && lines.length) {
          lines.shift(); // the tail started mid-line
          skipFirstPartial[stream] = false;
        }
        const into = pending[stream];
        for (const l of lines) into.push(l);
        // a big backlog goes out at once (and may pause the stream); a trickle waits up to 50 ms
        if (into.length >= 20_000) flush();
        else flushTimer ??= setTimeout(flush, 50);
      },
      onEvent: (event) => {
        flush();
        viewer.send({ type: 'event', event });
      },
      onEnd: (result) => {
        for (const s of ['stdout', 'stderr'] as const) {
          if (partial[s]) pending[s].push(partial[s]);
          partial[s] = '';
        }
        flush();
        viewer.send({ type: 'end', result });
      },
    };
    const pause = async (): Promise<void> => {
      if (!client) return;
      paused = true;
      try {
        from = (await client.detach(runId)) ?? from;
        await viewer.drained!();
        if (stopped) return;
        paused = false;
        await client.attach(runId, handlers, from);
      } catch (err) {
        if (!stopped) viewer.send({ type: 'event', event: errorEvent(err) });
      }
    };
    void (async () => {
      try {
        client = await SupervisorClient.connect(this.paths);
        if (stopped) return client.close();
        const run = await client.attach(runId, handlers, from);
        viewer.send({ type: 'start', run, skippedBytes: skipped });
      } catch (err) {
        viewer.send({ type: 'event', event: errorEvent(err) });
      }
    })();
    return () => {
      stopped = true;
      clearTimeout(flushTimer);
      client?.close();
    };
  }
}
