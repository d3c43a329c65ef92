/**
 * The live view of a run's private display: on a timer, a small JPEG of the whole display
 * (cursor drawn in) goes to `<artifacts>/live.jpg`, written atomically (temp file + rename) so a reader
 * never sees half a frame. The host serves it while the run is running and the inspector shows it; the
 * file is removed when the run ends (the step screenshots are the run's record, the live frame is not).
 *
 * It stays out of the loop's way: a tick whose previous capture is still going is skipped (a slow
 * capture never piles up), and a capture that fails is counted, not fatal. Each step's screenshot also
 * asks for a frame (`now`): on a busy machine, where the loop's calls to the addon leave the timer's
 * frames little room, the view still shows what every step did. The addon runs desktop calls
 * one at a time on its own thread, so a frame taken while the loop captures or acts delays that call by
 * one small capture; docs/bench-computer-use.md measures what that costs per step.
 */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ScreenMasks } from './masks.ts';
import { previewFrame } from './screen.ts';
import { LIVE_FRAME_FILE } from '@runboard/supervisor/protocol';

const TEMP_FILE = `.${LIVE_FRAME_FILE}.tmp`;

export interface LiveFrameOptions {
  /** Between frames (default 1000 ms). */
  intervalMs: number;
  /** Frame width (default 640 px; never upscaled). */
  maxWidth?: number;
  /** JPEG quality (default 60). */
  quality?: number;
  /** The run's masks (password fields, fields a sensitive value was typed into): grey in every frame. */
  masks?: ScreenMasks;
}

export interface LiveFrameStats {
  liveFrames: number;
  liveFramesSkipped: number;
  liveFrameErrors: number;
  liveFrameP50Ms: number;
  liveFrameMaxMs: number;
}

export class LiveFrames {
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | null = null;
  private screenWidth: number | undefined;
  private stopped = false;
  /** A frame was asked for while one was being taken: the next one starts when that one ends. */
  private asked = false;
  private readonly ms: number[] = [];
  private frames = 0;
  private skipped = 0;
  private errors = 0;
  private lastError = '';

  constructor(
    private readonly dir: string,
    private readonly o: LiveFrameOptions,
    private readonly onError: (message: string) => void = () => undefined,
  ) {}

  start(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.o.intervalMs);
    this.timer.unref();
  }

  private tick(): void {
    if (this.stopped) return;
    if (this.inFlight) {
      this.skipped++;
      return;
    }
    this.take();
  }

  /** A frame as soon as the one being taken (if any) is written: a step's effect, on screen now. */
  now(): void {
    if (this.stopped) return;
    if (this.inFlight) this.asked = true;
    else this.take();
  }

  private take(): void {
    this.inFlight = this.frame().finally(() => {
      this.inFlight = null;
      if (!this.asked) return;
      this.asked = false;
      this.now();
    });
  }

  private async frame(): Promise<void> {
    const t0 = performance.now();
    try {
      const f = await previewFrame(
        this.o.maxWidth ?? 640,
        this.o.quality ?? 60,
        this.screenWidth,
        this.o.masks,
      );
      this.screenWidth = f.screenWidth;
      if (this.stopped) return;
      const tmp = path.join(this.dir, TEMP_FILE);
      writeFileSync(tmp, f.data);
      renameSync(tmp, path.join(this.dir, LIVE_FRAME_FILE));
      this.frames++;
      // the timing sample is kept bounded: a run may go on for hours at one frame a second
      if (this.ms.length < 4096) this.ms.push(performance.now() - t0);
      else this.ms[this.frames % 4096] = performance.now() - t0;
    } catch (err) {
      this.errors++;
      const msg = (err as Error).message;
      if (this.errors === 1 || msg !== this.lastError) this.onError(msg);
      this.lastError = msg;
    }
  }

  /** Stops the timer, waits for a frame in progress, removes the live frame; returns the counts. */
  async stop(): Promise<LiveFrameStats> {
    this.stopped = true;
    clearInterval(this.timer);
    while (this.inFlight) await this.inFlight;
    for (const f of [LIVE_FRAME_FILE, TEMP_FILE]) rmSync(path.join(this.dir, f), { force: true });
    const sorted = [...this.ms].sort((a, b) => a - b);
    const r = (n: number | undefined): number => Math.round((n ?? 0) * 10) / 10;
    return {
      liveFrames: this.frames,
      liveFramesSkipped: this.skipped,
      liveFrameErrors: this.errors,
      liveFrameP50Ms: r(sorted[Math.floor(sorted.length / 2)]),
      liveFrameMaxMs: r(sorted.at(-1)),
    };
  }
}
