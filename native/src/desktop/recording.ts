// A recording of a demonstration (seed 002's Record): the person's input, grouped into steps, each
// with the screenshot taken just before it, the window and app under it and, for pointer steps, the
// accessibility element hit. Written to `<dir>/<id>/` in Runboard's recording format, which
// @runboard/project/recording defines (manifest.jsonl, screenshots/, recording.json) and lists; this is
// the recorder (input events, frames, masking, video).
import { appendFileSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  newRecordingId,
  type ElementPathStep,
  type ManifestElement,
  type ManifestStep,
  type StopReason,
} from '@runboard/project/recording';
import { desktop } from './desktop.ts';
import { StepGrouper, type GroupedStep, type StepAction } from './steps.ts';
import { maskVideo, ScreenVideo, type MicChoice, type VideoResult } from './video.ts';
import {
  type Element,
  type InputRecorder,
  type ReadResult,
  type RecordedInput,
  type RecorderFrame,
  type Rect,
  type WindowInfo,
} from './types.ts';

/** Seed 000's limits: beyond them a recording stops and says why. */
export const RECORDING_LIMITS = { maxDurationMs: 5 * 60_000, maxBytes: 2 * 1024 ** 3 } as const;

/** The recording border's width, px. */
export const BORDER_WIDTH = 4;

export interface RecordingOptions {
  /** The folder recordings live in (a project's `recordings/`); this one goes into `<dir>/<id>/`. */
  dir: string;
  /** The area recorded (a monitor's bounds); default the whole screen. */
  region?: Rect;
  /** Recorded as is in recording.json (e.g. ':1', the monitor's name). */
  display?: string;
  monitor?: string;
  /** Defaults: RECORDING_LIMITS. The duration counts recording time, not pauses. */
  maxDurationMs?: number;
  maxBytes?: number;
  imageFormat?: 'png' | 'jpeg';
  frameIntervalMs?: number;
  settleMs?: number;
  /**
   * Ctrl+I (seed 002): the recording pauses and this is called; answer with addExtract() or
   * addDetails() (or neither), then resume(). Without it Ctrl+I is recorded as a key like any other.
   */
  onContextRequest?: () => void;
  /** A key (X keysym name, e.g. 'Pause') that stops the recording; it is not recorded itself. */
  stopKey?: string;
  /** Called once with the summary when the recording ends, whatever ended it. */
  onEnd?: (summary: RecordingSummary) => void;
  /**
   * The red border around the recorded area while it records (seed 000); default true. It is never in
   * the screenshots (their border strips are redrawn from the windows below it) nor in the video (its
   * outer strips repeat their inner neighbours).
   */
  border?: boolean;
  /** A screen video (`video.mp4`, ffmpeg) of the region too; its bytes count towards maxBytes. */
  video?: { mic?: MicChoice; framerate?: number };
}

export interface RecordingSummary {
  id: string;
  dir: string;
  startedAt: string;
  endedAt: string;
  /** Recording time, pauses left out. */
  durationMs: number;
  steps: number;
  bytes: number;
  stopReason: StopReason;
  /** Why it stopped, in words for the person. */
  message: string;
  video?: VideoResult;
  /** What did not go as asked but did not stop the recording (no microphone, no video). */
  warnings: string[];
  /**
   * Whether the recorder handled the input within a second of it happening (KEEP_UP_MS): when not,
   * `message` and `warnings` say so (never a silent `stopped`).
   */
  keptUp: boolean;
  /** How far behind the input it was handled, ms (p50, p99, max over `events`). */
  lagMs: { p50: number; p99: number; max: number; events: number };
  /** The stop's instant, X server time (ms): every event before it is in the recording. */
  stopTime?: number;
}

/** What the desktop said about the window an event went to, read as soon as the event arrived. */
interface Lookup {
  tree?: ReadResult;
  window?: WindowInfo;
}

type Tracked = RecordedInput & { arrived: number; lookup: Promise<Lookup> };

/** Beyond this lag the recording says it could not keep up (the reads of element and focus come late). */
const KEEP_UP_MS = 1000;

const MASK_GREY = 0x80;
const MASK_MARGIN_PX = 12;

function contains(b: Rect, x: number, y: number): boolean {
  return b[2] > 0 && b[3] > 0 && x >= b[0] && y >= b[1] && x < b[0] + b[2] && y < b[1] + b[3];
}

/** Roles whose children are cut off at their edges (AT-SPI reports a scrolled-away child's bounds as they are). */
const CLIPS = new Set(['scroll pane', 'viewport']);

/** The deepest element whose bounds hold the point, with the path to it. */
export function hitTest(
  roots: Element[],
  x: number,
  y: number,
): { element: Element; path: ElementPathStep[] } | undefined {
  let best: { element: Element; path: ElementPathStep[] } | undefined;
  const walk = (els: Element[], trail: ElementPathStep[]): void => {
    const seen = new Map<string, number>();
    for (const e of els) {
      const index = seen.get(e.role) ?? 0;
      seen.set(e.role, index + 1);
      const here = [...trail, { role: e.role, name: e.name, index }];
      if (contains(e.bounds, x, y)) {
        const area = e.bounds[2] * e.bounds[3];
        const bestArea = best ? best.element.bounds[2] * best.element.bounds[3] : Infinity;
        if (here.length > (best?.path.length ?? 0) || area < bestArea) best = { element: e, path: here };
      } else if (CLIPS.has(e.role)) continue; // its children beyond its edges are scrolled out of sight
      walk(e.children, here);
    }
  };
  walk(roots, []);
  return best;
}

function findPath(
  roots: Element[],
  pick: (e: Element) => boolean,
): { element: Element; path: ElementPathStep[] } | undefined {
  const walk = (
    els: Element[],
    trail: ElementPathStep[],
  ): { element: Element; path: ElementPathStep[] } | undefined => {
    const seen = new Map<string, number>();
    for (const e of els) {
      const index = seen.get(e.role) ?? 0;
      seen.set(e.role, index + 1);
      const here = [...trail, { role: e.role, name: e.name, index }];
      if (pick(e)) return { element: e, path: here };
      const inner = walk(e.children, here);
      if (inner) return inner;
    }
    return undefined;
  };
  return walk(roots, []);
}

/** Password fields' bounds, with a margin: AT-SPI reports a GTK entry's bounds up to ~20 px apart between reads. */
function secrets(roots: Element[]): Rect[] {
  const out: Rect[] = [];
  const m = MASK_MARGIN_PX;
  const walk = (els: Element[]): void => {
    for (const e of els) {
      if (e.secret) out.push([e.bounds[0] - m, e.bounds[1] - m, e.bounds[2] + 2 * m, e.bounds[3] + 2 * m]);
      walk(e.children);
    }
  };
  walk(roots);
  return out;
}

function manifestElement(hit: { element: Element; path: ElementPathStep[] }): ManifestElement {
  const e = hit.element;
  return {
    role: e.role,
    name: e.name,
    bounds: e.bounds,
    path: hit.path,
    ...(e.secret ? { secret: true } : {}),
  };
}

/** A copy of the frame with the rectangles (screen coordinates) filled grey. */
function masked(frame: RecorderFrame, rects: Rect[]): Buffer {
  if (rects.length === 0) return frame.data;
  const out = Buffer.from(frame.data);
  const [ox, oy] = frame.source;
  for (const [rx, ry, rw, rh] of rects) {
    const x0 = Math.max(0, rx - ox);
    const y0 = Math.max(0, ry - oy);
    const x1 = Math.min(frame.width, rx - ox + rw);
    const y1 = Math.min(frame.height, ry - oy + rh);
    for (let y = y0; y < y1; y++) out.fill(MASK_GREY, (y * frame.width + x0) * 4, (y * frame.width + x1) * 4);
  }
  return out;
}

export class Recording {
  readonly id: string;
  readonly dir: string;
  /** Settles with the summary when the recording has ended and everything is written. */
  readonly done: Promise<RecordingSummary>;
  private resolveDone!: (s: RecordingSummary) => void;
  private recorder!: InputRecorder;
  private readonly grouper = new StepGrouper<Tracked>();
  private readonly limits: { maxDurationMs: number; maxBytes: number };
  private readonly format: 'png' | 'jpeg';
  private writing: Promise<void> = Promise.resolve();
  private steps = 0;
  private bytes = 0;
  private readonly startedAt = new Date();
  private readonly started = Date.now();
  private activeMs = 0;
  private activeSince: number | null = Date.now();
  private limitTimer: NodeJS.Timeout | undefined;
  private stopping: Promise<RecordingSummary> | undefined;
  private paused = false;
  private lastClickSecret = false;
  private readonly inFlight = new Map<number, Promise<Lookup>>();
  /** After the stop's instant was drained: no more input. */
  private closed = false;
  private minDelay = Infinity;
  private readonly delays: number[] = [];
  private readonly images = new Map<string, string>(); // frame id + masks → file
  private contextFrame: RecorderFrame | undefined; // the pre-action state when Ctrl+I was pressed
  /** Where the pointer was at Ctrl+I and what the window showed then: the element an extract reads. */
  private contextLookup: Promise<{ lookup: Lookup; pointer?: [number, number] }> | undefined;
  private details: string[] = []; // notes for the next step
  private readonly knownSecrets = new Map<number, Map<string, Rect>>(); // window id → its password fields
  private video: ScreenVideo | undefined;
  private sizeTimer: NodeJS.Timeout | undefined;
  readonly warnings: string[] = [];

  private constructor(private readonly options: RecordingOptions) {
    this.id = newRecordingId();
    this.dir = path.join(options.dir, this.id);
    this.limits = {
      maxDurationMs: options.maxDurationMs ?? RECORDING_LIMITS.maxDurationMs,
      maxBytes: options.maxBytes ?? RECORDING_LIMITS.maxBytes,
    };
    this.format = options.imageFormat ?? 'png';
    this.done = new Promise((res) => (this.resolveDone = res));
  }

  /** Starts recording; resolves once the recorder listens and the start screenshot is written. */
  static async start(options: RecordingOptions): Promise<Recording> {
    const r = new Recording(options);
    r.recorder = await desktop.recordInput((e) => r.ingest(e), {
      ...(options.region ? { region: options.region } : {}),
      ...(options.frameIntervalMs !== undefined ? { frameIntervalMs: options.frameIntervalMs } : {}),
      ...(options.settleMs !== undefined ? { settleMs: options.settleMs } : {}),
      ...(options.border !== false ? { borderWidth: BORDER_WIDTH } : {}),
      onError: (err) => void r.stopWith('display-lost', `the recording stopped: ${err.message}`),
    });
    // Only once the recorder runs: a display that cannot be recorded leaves no empty recording behind.
    mkdirSync(path.join(r.dir, 'screenshots'), { recursive: true });
    writeFileSync(path.join(r.dir, 'manifest.jsonl'), '');
    if (options.video) await r.startVideo(options.video);
    r.writeMeta(null);
    r.enqueue(async () => {
      // Password fields of every window on screen are masked in the start screenshot too.
      const windows = await desktop.listWindows().catch(() => []);
      const trees = await Promise.all(
        windows.map((w) => desktop.read({ windowId: w.id, actions: false }).catch(() => undefined)),
      );
      const masks = r.masksFor(trees.filter((t) => t !== undefined).map((tree) => ({ tree })));
      await r.writeImage(r.recorder.firstFrame, masks, 'start');
    });
    r.armLimit();
    return r;
  }

  /**
   * Resolves once every accessibility read started for the events so far has answered: what a step
   * says about its element and focus is then settled. (A scripted person waits for it between actions,
   * so that a heavily loaded machine cannot make a read answer after the next action.)
   */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values());
  }

  /** The microphone the video records, null for none; undefined without a video. */
  get audio(): string | null | undefined {
    return this.video?.audio;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Steps written so far. */
  get stepCount(): number {
    return this.steps;
  }

  pause(): void {
    if (this.paused || this.stopping) return;
    this.paused = true;
    this.recorder.pause();
    this.video?.pause();
    this.emit(this.grouper.flush());
    if (this.activeSince !== null) this.activeMs += Date.now() - this.activeSince;
    this.activeSince = null;
    clearTimeout(this.limitTimer);
  }

  resume(): void {
    if (!this.paused || this.stopping) return;
    this.paused = false;
    this.activeSince = Date.now();
    this.recorder.resume();
    this.video?.resume();
    this.armLimit();
  }

  /** Stops (idempotent) and resolves once every step is written. */
  stop(): Promise<RecordingSummary> {
    return this.stopWith('stopped', 'stopped');
  }

  private async startVideo(o: NonNullable<RecordingOptions['video']>): Promise<void> {
    try {
      this.video = await ScreenVideo.start({
        file: path.join(this.dir, 'video.mp4'),
        display: this.options.display ?? process.env.DISPLAY ?? ':0',
        region: this.recorder.firstFrame.source,
        ...(this.options.border !== false ? { border: BORDER_WIDTH } : {}),
        ...o,
        onExit: (message) => this.warnings.push(message),
      });
      this.warnings.push(...this.video.warnings);
      // The video grows between steps: its size is checked against the limit every second.
      this.sizeTimer = setInterval(() => this.count(0), 1000);
    } catch (err) {
      this.warnings.push(`no screen video: ${(err as Error).message}`);
    }
  }

  private armLimit(): void {
    clearTimeout(this.limitTimer);
    const left = this.limits.maxDurationMs - this.activeTime();
    this.limitTimer = setTimeout(
      () =>
        void this.stopWith(
          'duration-limit',
          `the recording reached its limit of ${Math.round(this.limits.maxDurationMs / 1000)} s and stopped`,
        ),
      Math.max(0, left),
    );
  }

  private activeTime(): number {
    return this.activeMs + (this.activeSince !== null ? Date.now() - this.activeSince : 0);
  }

  private stopWith(reason: StopReason, message: string): Promise<RecordingSummary> {
    if (this.stopping) return this.stopping;
    clearTimeout(this.limitTimer);
    clearInterval(this.sizeTimer);
    const durationMs = this.activeTime();
    this.activeSince = null;
    const video = this.video?.stop();
    // The stop is an instant of the X server: every event the person made before it is still on its way
    // (a loaded machine runs seconds behind) and is kept; none after it is (issue 30).
    const drained = this.recorder ? this.recorder.drain().catch(() => 0) : Promise.resolve(0);
    this.stopping = drained.then(async (stopTime) => {
      this.closed = true;
      this.recorder?.stop();
      this.emit(this.grouper.flush());
      const [, v0] = await Promise.all([this.writing, video]);
      let v = v0;
      for (const w of v?.warnings ?? []) if (!this.warnings.includes(w)) this.warnings.push(w);
      if (v && !v.complete) this.warnings.push(`the screen video is incomplete: ${v.error}`);
      if (v) v = await this.maskSecrets(v);
      const lag = this.lagSummary();
      const keptUp = lag.max <= KEEP_UP_MS;
      if (!keptUp)
        this.warnings.push(
          `the machine was too busy for the recorder: it handled input up to ${(lag.max / 1000).toFixed(1)} s after it happened (median ${Math.round(lag.p50)} ms); every step was kept, but the element and focus of a step are read when it is handled, so some may point at what the screen showed later`,
        );
      const summary: RecordingSummary = {
        id: this.id,
        dir: this.dir,
        startedAt: this.startedAt.toISOString(),
        endedAt: new Date().toISOString(),
        durationMs,
        steps: this.steps,
        bytes: this.bytes + (v?.bytes ?? 0),
        stopReason: reason,
        message: keptUp
          ? message
          : `${message}; the recorder could not keep up with the input (see warnings)`,
        ...(v ? { video: v } : {}),
        warnings: this.warnings,
        keptUp,
        lagMs: lag,
        ...(stopTime ? { stopTime } : {}),
      };
      this.writeMeta(summary);
      this.options.onEnd?.(summary);
      this.resolveDone(summary);
      return summary;
    });
    return this.stopping;
  }

  /**
   * Every password field the recording has seen, wherever it was seen, is covered in the video for its
   * whole length (it was only known from the accessibility reads at the steps, so it is masked
   * before and after too: a stale rectangle only masks more). A video that cannot be masked is removed.
   */
  private async maskSecrets(v: VideoResult): Promise<VideoResult> {
    const [ox, oy] = this.recorder.firstFrame.source;
    const rects = [...this.knownSecrets.values()].flatMap((m) => [...m.values()]);
    if (rects.length === 0 || !existsSync(v.file)) return v;
    const error = await maskVideo(
      v.file,
      rects.map(([x, y, w, h]): Rect => [x - ox, y - oy, w, h]),
    );
    if (!error) return { ...v, bytes: statSync(v.file).size, masked: rects.length };
    rmSync(v.file, { force: true });
    this.warnings.push(
      `the screen video showed a password field and could not be masked (${error}): it was removed`,
    );
    return { ...v, bytes: 0, complete: false, error: 'removed: its password fields could not be masked' };
  }

  /**
   * Ctrl+I → extract: a step that asks a replay to read `query` off the screen as it is now (the
   * screenshot is the pre-action state at Ctrl+I), with optional candidate values.
   */
  addExtract(query: string, candidates: string[] = []): void {
    if (this.stopping) return;
    if (typeof query !== 'string' || query.trim() === '')
      throw new TypeError('an extract needs a query: what to read off the screen (e.g. "the order number")');
    const frame = this.contextFrame ?? this.recorder.firstFrame;
    const action: StepAction = {
      type: 'extract',
      query: query.trim(),
      ...(candidates.length > 0 ? { candidates } : {}),
    };
    const context = this.contextLookup;
    this.enqueue(async () => {
      // The element it was taken from: the one under the pointer at Ctrl+I (the person points at the
      // value), else the focused field; so replay can read it by its locator, without a model.
      const c = await context;
      const roots = c?.lookup.tree?.elements ?? [];
      const hit =
        (c?.pointer ? hitTest(roots, c.pointer[0], c.pointer[1]) : undefined) ??
        findPath(roots, (x) => x.focused && x.editable);
      const w = c?.lookup.window;
      const masks = this.masksFor(c ? [c.lookup] : []);
      const screenshot = await this.writeImage(frame, masks, String(this.steps + 1).padStart(4, '0'));
      const step: ManifestStep = {
        step: ++this.steps,
        at: Date.now() - this.started,
        screenshot,
        action,
        window: w && hit ? { id: w.id, app: w.app, title: w.title, bounds: w.bounds } : null,
        ...(w && hit ? { element: manifestElement(hit) } : {}),
      };
      this.append(JSON.stringify(step) + '\n');
    });
  }

  /** Ctrl+I → details: a free-form note attached to the next step. */
  addDetails(note: string): void {
    if (this.stopping) return;
    if (typeof note !== 'string' || note.trim() === '')
      throw new TypeError('details need a note: what the next step is for, in words');
    this.details.push(note.trim());
  }

  /** How far behind the input the recorder handled it: each event's delay less the smallest one seen. */
  private lagSummary(): { p50: number; p99: number; max: number; events: number } {
    const lags = this.delays.map((d) => d - this.minDelay).sort((a, b) => a - b);
    const at = (q: number): number =>
      lags.length ? lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]! : 0;
    return { p50: at(0.5), p99: at(0.99), max: lags.at(-1) ?? 0, events: lags.length };
  }

  /** When an event happened, ms since the recording started: its server time on the local clock. */
  private when(e: RecordedInput & { arrived: number }): number {
    return Math.max(
      0,
      Number.isFinite(this.minDelay) ? e.time + this.minDelay - this.started : e.arrived - this.started,
    );
  }

  private ingest(e: RecordedInput): void {
    if (this.closed) return;
    // The wall-clock delay of each event (its server time against when it reached here); the smallest is
    // the server-to-local clock offset, the rest is how far behind the recorder ran.
    const delay = Date.now() - e.time;
    this.minDelay = Math.min(this.minDelay, delay);
    if (this.delays.length < 100_000) this.delays.push(delay);
    if (e.kind === 'keyPress' && this.options.stopKey && e.key === this.options.stopKey) {
      void this.stop();
      return;
    }
    const ctrlI = e.kind === 'keyPress' && e.text.toLowerCase() === 'i' && e.modifiers.includes('ctrl');
    if (ctrlI && this.options.onContextRequest) {
      this.contextFrame = e.frame;
      // read now, while the screen is what the person pointed at (the prompt opens next)
      this.contextLookup = Promise.all([
        this.lookup(e.window),
        desktop.pointer().then(
          (p): [number, number] | undefined => (p.onScreen ? [p.x, p.y] : undefined),
          () => undefined,
        ),
      ]).then(([lookup, pointer]) => ({ lookup, ...(pointer ? { pointer } : {}) }));
      this.pause();
      this.options.onContextRequest();
      return;
    }
    if (this.paused) return;
    // Read the window's accessibility tree now, while it still shows what the event went to.
    const t: Tracked = { ...e, arrived: Date.now(), lookup: this.lookup(e.window) };
    this.emit(this.grouper.feed(t));
  }

  /** One read of a window's tree at a time; events that arrive meanwhile share it. */
  private lookup(windowId: number): Promise<Lookup> {
    if (!windowId) return Promise.resolve({});
    const pending = this.inFlight.get(windowId);
    if (pending) return pending;
    const p = desktop
      .read({ windowId, actions: false })
      .then(
        (tree): Lookup => ({ tree, window: tree.window }),
        async (): Promise<Lookup> => ({
          window: (await desktop.listWindows({ windowId }).catch(() => []))[0],
        }),
      )
      .finally(() => this.inFlight.delete(windowId));
    this.inFlight.set(windowId, p);
    return p;
  }

  private emit(steps: GroupedStep<Tracked>[]): void {
    for (const s of steps) {
      // Notes go to the first step emitted after them, decided now (writing is asynchronous).
      const details = this.details.splice(0).join('\n');
      this.enqueue(() => this.writeStep(s, details));
    }
  }

  private enqueue(job: () => Promise<void>): void {
    this.writing = this.writing.then(job).catch((err: unknown) => {
      void this.stopWith(
        'stopped',
        `the recording stopped: it could not be written (${(err as Error).message})`,
      );
    });
  }

  private async writeStep(s: GroupedStep<Tracked>, details: string): Promise<void> {
    const first = s.events[0]!;
    const lookups = await Promise.all(s.events.map((e) => e.lookup));
    const roots = lookups.find((l) => l.tree)?.tree?.elements ?? [];
    let action = s.action;
    const out: Partial<ManifestStep> = {};
    if (action.type === 'click' || action.type === 'drag' || action.type === 'scroll') {
      const [x, y] = action.type === 'drag' ? action.from : [action.x, action.y];
      const hit = hitTest(roots, x, y);
      if (hit) out.element = manifestElement(hit);
      if (action.type === 'click') this.lastClickSecret = hit?.element.secret ?? false;
    } else {
      // The focused field when the keys came (any read of the step's events that saw one).
      const focused = lookups
        .map((l) => (l.tree ? findPath(l.tree.elements, (e) => e.focused && e.editable) : undefined))
        .filter((f) => f !== undefined);
      const f = focused.find((x) => x.element.secret) ?? focused[0];
      if (f) out.focus = manifestElement(f);
      if (action.type === 'type' && (this.lastClickSecret || focused.some((x) => x.element.secret)))
        action = { type: 'type', secret: true };
      if (action.type === 'press' && /(^|\+)Tab$/.test(action.key)) this.lastClickSecret = false;
    }
    const masks = this.masksFor(lookups);
    const screenshot = await this.writeImage(first.frame, masks, String(this.steps + 1).padStart(4, '0'));
    const w = lookups.find((l) => l.window)?.window;
    const step: ManifestStep = {
      step: ++this.steps,
      at: this.when(first),
      screenshot,
      action,
      window: w ? { id: w.id, app: w.app, title: w.title, bounds: w.bounds } : null,
      ...out,
      ...(details ? { details } : {}),
      ...(s.events.every((e) => e.synthetic) ? { synthetic: true as const } : {}),
    };
    this.append(JSON.stringify(step) + '\n');
  }

  /**
   * Password fields to mask: those the step's reads found, and every one seen before in the same
   * windows (a field's reported bounds change with its content; a stale rectangle only masks more).
   */
  private masksFor(lookups: Lookup[]): Rect[] {
    for (const l of lookups) {
      if (!l.tree) continue;
      const known = this.knownSecrets.get(l.tree.window.id) ?? new Map<string, Rect>();
      for (const r of secrets(l.tree.elements)) known.set(r.join(','), r);
      this.knownSecrets.set(l.tree.window.id, known);
    }
    const ids = new Set(
      lookups.map((l) => l.window?.id ?? l.tree?.window.id).filter((id) => id !== undefined),
    );
    return [...ids].flatMap((id) => [...(this.knownSecrets.get(id)?.values() ?? [])]);
  }

  private async writeImage(frame: RecorderFrame, masks: Rect[], name: string): Promise<string> {
    const key = `${frame.id}:${JSON.stringify(masks)}`;
    const known = this.images.get(key);
    if (known) return known;
    const data = await desktop.encodeImage(
      { data: masked(frame, masks), width: frame.width, height: frame.height },
      { format: this.format },
    );
    const rel = `screenshots/${name}.${this.format === 'png' ? 'png' : 'jpg'}`;
    writeFileSync(path.join(this.dir, rel), data);
    this.images.set(key, rel);
    this.count(data.length);
    return rel;
  }

  private append(line: string): void {
    appendFileSync(path.join(this.dir, 'manifest.jsonl'), line);
    this.count(Buffer.byteLength(line));
  }

  private count(n: number): void {
    this.bytes += n;
    if (this.bytes + (this.video?.bytes ?? 0) > this.limits.maxBytes)
      void this.stopWith(
        'size-limit',
        `the recording reached its size limit of ${this.limits.maxBytes} bytes and stopped`,
      );
  }

  private writeMeta(summary: RecordingSummary | null): void {
    const meta = {
      id: this.id,
      version: 1,
      startedAt: this.startedAt.toISOString(),
      display: this.options.display ?? process.env.DISPLAY ?? null,
      monitor: this.options.monitor ?? null,
      region: this.recorder.firstFrame.source,
      startScreenshot: `screenshots/start.${this.format === 'png' ? 'png' : 'jpg'}`,
      limits: this.limits,
      ...(this.video ? { video: 'video.mp4', audio: this.video.audio } : {}),
      warnings: this.warnings,
      ...(summary
        ? {
            endedAt: summary.endedAt,
            durationMs: summary.durationMs,
            steps: summary.steps,
            bytes: summary.bytes,
            stopReason: summary.stopReason,
            message: summary.message,
            keptUp: summary.keptUp,
            lagMs: summary.lagMs,
          }
        : { recording: true }),
    };
    writeFileSync(path.join(this.dir, 'recording.json'), JSON.stringify(meta, null, 2) + '\n');
  }
}

// The format's types and its list/delete, as native exported them before they moved.
export {
  deleteRecording,
  listRecordings,
  type ElementPathStep,
  type ManifestElement,
  type ManifestStep,
  type RecordingInfo,
  type StopReason,
} from '@runboard/project/recording';
