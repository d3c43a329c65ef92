// A recording of a demonstration (seed 002's Record): the person's input, grouped into steps, each
// with the screenshot taken just before it, the window and app under it and, for pointer steps, the
// accessibility element hit. Written to `<dir>/<id>/` in Runboard's recording format, which
// @runboard/project/recording defines (manifest.jsonl, screenshots/, recording.json) and lists; this is
// the recorder (input events, frames, masking, video).
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { newRecordingId, type ManifestStep, type StopReason } from '@runboard/project/recording';
import { desktop } from './desktop.ts';
import { findPath, hitTest, manifestElement, masked } from './recording-elements.ts';
import { extractSource, hereNow, pointerNow, type Here } from './recording-extract.ts';
import { rereadHit, StepFocus } from './recording-focus.ts';
import { SecretFields, type Lookup } from './recording-masks.ts';
import { ScreenWatch, type Screen } from './recording-screen.ts';
import { PendingPauses, type PendingPause } from './recording-pauses.ts';
import { endingMeta, endWarnings, lagOf, type Lag } from './recording-summary.ts';
import { ServerClock } from './server-clock.ts';
import { StepGrouper, type GroupedStep, type StepAction } from './steps.ts';
import { ScreenVideo, type MicChoice, type VideoResult } from './video.ts';
import { type InputRecorder, type RecordedInput, type RecorderFrame, type Rect } from './types.ts';

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
  /**
   * Fields that hold a secret though they show their text (a PIN in a plain field), by accessible name:
   * what is typed into them is kept out of the manifest (`type` with `secret: true`) and they are masked
   * in every screenshot and the video, as password fields are.
   */
  secretFields?: string[];
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
  lagMs: Lag;
  /** The stop's instant, X server time (ms): every event before it is in the recording. */
  stopTime?: number;
}

/** An input event as the recorder keeps it: when it arrived, its window's read, the screen's windows. */
type Tracked = RecordedInput & {
  arrived: number;
  lookup: Promise<Lookup>;
  screen: Promise<Screen>;
  seq: number;
};

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
  /** The pauses the recorder has not reached yet: the input before them is still on its way. */
  private readonly pending = new PendingPauses();
  private readonly clock = new ServerClock();
  /** Password fields and the fields named secret, per window: masked, and what is typed there kept out. */
  private readonly secrets: SecretFields;
  /** The field each key step went to, at its own time (recording-focus.ts). */
  private readonly focus: StepFocus;
  /**
   * The reads of windows (a step's, one at a time per window), and the windows on screen at each event,
   * read when new or resized: what each screenshot masks (decision 136).
   */
  private readonly screen: ScreenWatch;
  /** After the stop's instant was drained: no more input. */
  private closed = false;
  private minDelay = Infinity;
  private seq = 0;
  private readonly delays: number[] = [];
  private readonly images = new Map<string, string>(); // frame id + masks → file
  /** The pause of a Ctrl+I (until the resume): the screen, window and pointer at the key, for an extract. */
  private keyContext: { frame: RecorderFrame; here: Promise<Here>; screen: Promise<Screen> } | undefined;
  /** Extracts and notes added outside a Ctrl+I's pause, waiting for their mark (oldest first). */
  private readonly marks: ((m: { time: number; frame: RecorderFrame }) => void)[] = [];
  /** The newest frame the recorder sent: an extract's screen when its instant could not be placed. */
  private newest!: RecorderFrame;
  private details: string[] = []; // notes for the next step
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
    this.secrets = new SecretFields(options.secretFields ?? []);
    this.focus = new StepFocus(this.secrets);
    this.screen = new ScreenWatch(this.secrets, (w) => this.warnings.push(w));
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
      onFocus: (f) => {
        if ('error' in f) r.focus.timeline.unavailable = f.error;
        else r.focus.timeline.add(f);
      },
      onPaused: (p) => r.reached(p),
      onMark: (m) => r.marks.shift()?.(m),
      // Windows mapped, moved or unmapped between the events: the video's masks follow them (decision 140).
      onWindow: (w) => {
        if (!r.closed) r.screen.changed(w);
      },
    });
    r.newest = r.recorder.firstFrame;
    r.atMark(() => {}); // the clocks' offset, before any step needs it
    // Only once the recorder runs: a display that cannot be recorded leaves no empty recording behind.
    mkdirSync(path.join(r.dir, 'screenshots'), { recursive: true });
    writeFileSync(path.join(r.dir, 'manifest.jsonl'), '');
    if (options.video) await r.startVideo(options.video);
    r.writeMeta(null);
    r.enqueue(async () => {
      // Every window on screen is read: its password fields are masked from the start screenshot on.
      const { masks, read } = await r.screen.masksAt([await r.screen.now()]);
      // The field focused before the recording began: the timeline's first entry.
      for (const { tree } of read) {
        const f = tree && findPath(tree.elements, (e) => e.focused);
        if (f) r.focus.timeline.add({ ...f.element, time: 0, focused: true, app: '', path: '' });
      }
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
    // every event made before this instant has come first (a mark; no step is ended by it)
    if (!this.stopping && this.recorder.mark()) await new Promise<void>((r) => this.marks.push(() => r()));
    await this.screen.idle();
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
    // Its steps are ended once the recorder reaches the pause's instant (reached()): input made just
    // before it may still be on its way.
    this.recorder.pause();
    this.pending.asked(Date.now());
    this.video?.pause();
    if (this.activeSince !== null) this.activeMs += Date.now() - this.activeSince;
    this.activeSince = null;
    clearTimeout(this.limitTimer);
  }

  resume(): void {
    if (!this.paused || this.stopping) return;
    this.paused = false;
    this.keyContext = undefined;
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
      // A pause the recorder never reached (the stop came first): every event before it is in now.
      for (const p of this.pending.left()) this.settle(p);
      for (const place of this.marks.splice(0)) place({ time: 0, frame: this.newest });
      this.emit(this.grouper.flush());
      const [, v0] = await Promise.all([this.writing, video]);
      let v = v0;
      // A window that opened after the last step is read too: the video shows it.
      if (v) await this.screen.masksAt([await this.screen.now()]);
      for (const w of v?.warnings ?? []) if (!this.warnings.includes(w)) this.warnings.push(w);
      if (v && !v.complete) this.warnings.push(`the screen video is incomplete: ${v.error}`);
      if (v)
        v = await this.secrets.maskVideo(v, this.recorder.firstFrame.source, (m) => this.warnings.push(m));
      const lag = lagOf(this.delays, this.minDelay);
      const end = endWarnings({
        lag,
        focusUnavailable: this.focus.timeline.unavailable,
        focusUnknown: this.focus.unknown,
      });
      const keptUp = end.keptUp;
      this.warnings.push(...end.warnings);
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
   * An extract: a step that asks a replay to read `query` off the screen at this point, with optional
   * candidate values. After a Ctrl+I (until the resume) its screenshot is the pre-action state at the key
   * and its element the one under the pointer then (else the focused field), and it is written after the
   * steps made before that pause. Otherwise (the Pause button, or not paused) it is the screen and the
   * focused window's element as they are now, placed among the input at this instant (decision 130).
   */
  addExtract(query: string, candidates: string[] = []): void {
    if (this.stopping) return;
    if (typeof query !== 'string' || query.trim() === '')
      throw new TypeError('an extract needs a query: what to read off the screen (e.g. "the order number")');
    const action: StepAction = {
      type: 'extract',
      query: query.trim(),
      ...(candidates.length > 0 ? { candidates } : {}),
    };
    const key = this.keyContext;
    const called = Date.now();
    if (key) {
      const at = called - this.started;
      this.pending.add(() =>
        this.enqueue(() => this.writeExtract(action, () => at, key.frame, key.here, key.screen)),
      );
      return;
    }
    const here = hereNow((id) => this.screen.lookup(id));
    const screen = this.screen.now();
    this.atMark(({ time, frame }) => {
      const at = (): number => (time > 0 ? this.when({ time, arrived: called }) : called - this.started);
      this.enqueue(() => this.writeExtract(action, at, frame, here, screen));
    });
  }

  /**
   * Runs `then` with the screen at this instant of the X server once the recorder has read every event
   * before it (a mark), after ending the step in progress (decision 130).
   */
  private atMark(then: (m: { time: number; frame: RecorderFrame }) => void): void {
    const place = (m: { time: number; frame: RecorderFrame }): void => {
      this.emit(this.grouper.flush());
      then(m);
    };
    if (!this.recorder.mark()) return place({ time: 0, frame: this.newest });
    const returned = Date.now(); // the mark's instant was before it: a bound on the clocks' offset
    this.marks.push((m) => {
      this.clock.observe(returned, m.time);
      place(m);
    });
  }

  private async writeExtract(
    action: StepAction,
    at: () => number,
    frame: RecorderFrame,
    here: Promise<Here>,
    screen: Promise<Screen>,
  ): Promise<void> {
    const h = await here;
    const { masks } = await this.screen.masksAt([await screen], [h.lookup]);
    const screenshot = await this.writeImage(frame, masks, String(this.steps + 1).padStart(4, '0'));
    const step: ManifestStep = {
      step: ++this.steps,
      at: at(),
      screenshot,
      action,
      ...extractSource(h, this.secrets.isSecret),
    };
    this.append(JSON.stringify(step) + '\n');
  }

  /**
   * Ctrl+I → details: a free-form note attached to the next step: while paused, the first after the
   * pause; otherwise the first after this instant among the input (a mark, as an extract's).
   */
  addDetails(note: string): void {
    if (this.stopping) return;
    if (typeof note !== 'string' || note.trim() === '')
      throw new TypeError('details need a note: what the next step is for, in words');
    const add = (): void => void this.details.push(note.trim());
    if (this.paused) this.pending.add(add);
    else this.atMark(add);
  }

  /** The recorder reached a pause's (or a resume's) instant: every event before it has come. */
  private reached(p: { paused: boolean; time: number }): void {
    if (!p.paused || this.closed) return;
    const pause = this.pending.reached();
    if (!pause) return;
    this.clock.observe(pause.returned, p.time);
    this.settle(pause);
  }

  /** The steps made before a pause, then what the person added while it lasted (decision 123). */
  private settle(pause: PendingPause): void {
    this.emit(this.grouper.flush());
    for (const add of pause.added) add();
  }

  /** When an event happened, ms since the recording started: its server time on the local clock. */
  private when(e: { time: number; arrived: number }): number {
    return Math.max(0, (this.clock.toLocal(e.time) ?? e.arrived) - this.started);
  }

  private ingest(e: RecordedInput): void {
    if (this.closed) return;
    this.newest = e.frame;
    // The wall-clock delay of each event (its server time against when it reached here); the smallest is
    // the server-to-local clock offset, the rest is how far behind the recorder ran.
    const now = Date.now();
    const delay = now - e.time;
    this.clock.observe(now, e.time);
    this.minDelay = Math.min(this.minDelay, delay);
    if (this.delays.length < 100_000) this.delays.push(delay);
    if (e.kind === 'keyPress' && this.options.stopKey && e.key === this.options.stopKey) {
      void this.stop();
      return;
    }
    // After a Ctrl+I nothing after the key is recorded, until the recorder reached its pause's instant
    // (then nothing reaches here until the resume's): however late the recorder reads it (decision 123).
    if (this.pending.afterKey(e.time)) return;
    const ctrlI = e.kind === 'keyPress' && e.text.toLowerCase() === 'i' && e.modifiers.includes('ctrl');
    if (ctrlI && this.options.onContextRequest) {
      // read now, while the screen is what the person pointed at (the prompt opens next)
      const here = Promise.all([this.screen.lookup(e.window), pointerNow()]).then(
        ([lookup, pointer]): Here => ({
          lookup,
          ...(pointer ? { pointer } : {}),
        }),
      );
      this.keyContext = { frame: e.frame, here, screen: this.screen.now() };
      this.pause();
      this.pending.byKey(e.time);
      this.options.onContextRequest();
      return;
    }
    // (An event that comes while paused happened before the pause's instant: it is recorded, decision
    // 120.) Read the window's accessibility tree now, while it still shows what the event went to.
    const [lookup, screen] = [this.screen.lookup(e.window), this.screen.now()];
    const t: Tracked = { ...e, arrived: Date.now(), lookup, screen, seq: this.seq++ };
    this.focus.note(t, t.lookup);
    this.emit(this.grouper.feed(t));
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
      // A read that failed (an app too busy to answer in time) is taken again: what a point hits is a
      // matter of the window's layout, which the late read still shows.
      const hit = hitTest(roots, x, y) ?? (await rereadHit(lookups, x, y));
      if (hit) out.element = manifestElement(hit, this.secrets.isSecret);
    } else {
      const f = await this.focus.of(first, lookups);
      if (f.element) out.focus = f.element;
      if (f.unknown) {
        out.focusUnknown = true;
        this.focus.unknown++;
      }
      // A secret flag follows the field that really had the focus.
      if (action.type === 'type' && f.secret) action = { type: 'type', secret: true };
    }
    const { masks } = await this.screen.masksAt(await Promise.all(s.events.map((e) => e.screen)), lookups);
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
      ...endingMeta(summary),
    };
    writeFileSync(path.join(this.dir, 'recording.json'), JSON.stringify(meta, null, 2) + '\n');
  }
}
