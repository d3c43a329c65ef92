/**
 * What every run that drives a desktop sets up around its work (computer-use and replay alike): the
 * artifacts folder, the inspector's live view of a private display, the flow's app given time to map a
 * window, the monitor the run sees, and on the real display the person's takeover (Escape + HUD); and
 * the events such a run logs as it goes (its first screenshot, a model request retried).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { desktop } from '@runboard/native';
import {
  ARTIFACTS_DIR,
  LIVE_FRAME_FILE,
  RunEnv,
  type ClarifyingQuestion,
  type CuScreenshot,
  type Metrics,
} from '@runboard/supervisor/protocol';
import type { Runner, RunnerContext, RunnerOutcome } from '../runners/runner.ts';
import type { Rect } from './geometry.ts';
import { LiveFrames } from './live.ts';
import type { LoopMetrics } from './metrics.ts';
import { ScreenMasks } from './masks.ts';
import { Screen, type Shot } from './screen.ts';
import { watchEscape, type EscapeWatcher } from './takeover.ts';

/** The person's takeover as a run sees it: whether they took over, and the HUD to hide for screenshots. */
export interface Guard {
  /** The person pressed Escape: the run ends as cancelled by them. */
  takenOver: boolean;
  /** The takeover watcher died (the display went away): why. */
  watcherLost: string | undefined;
  hud: EscapeWatcher | undefined;
}

export interface DesktopRun {
  /** The part of the screen the run sees (the flow's region or monitor), or the whole screen. */
  region: Rect | undefined;
  guard: Guard;
  artifacts: string;
  /** What every picture of the display keeps grey (the model's, the filmstrip's, the live view's). */
  masks: ScreenMasks;
  /** Called after each step's screenshot: the live view (a private display's) takes a frame. */
  onShot: () => void;
}

const LIVE_FRAME_MS = 1000;
/** After the HUD is unmapped, the windows under it repaint before the capture. */
const HUD_SETTLE_MS = 30;

/** A runner's outcome (no metrics: it ended before any work was done). */
export const ended = (
  status: RunnerOutcome['status'],
  summary: string,
  questions: ClarifyingQuestion[] = [],
  metrics: Metrics = {},
): RunnerOutcome => ({
  status,
  exitCode: null,
  summary,
  metrics,
  ...(questions.length ? { questions } : {}),
});
const failed = (summary: string): RunnerOutcome => ended('failed', summary);

/** A runner on the desktop: a cancel aborts its signal. */
export abstract class DesktopRunner implements Runner {
  protected readonly abort = new AbortController();
  cancel(): void {
    this.abort.abort();
  }
  abstract run(ctx: RunnerContext): Promise<RunnerOutcome>;
}

export const DEFAULTS = {
  maxSteps: 200,
  maxDurationMs: 60 * 60_000,
  imageMaxBytes: 1_000_000,
  imageMaxWidth: 1280,
  maxRetries: 3,
  maxOutputTokens: 4096,
  requestTimeoutMs: 120_000,
};

/** The flow's budgets (or the defaults) and the screen the model sees. */
export function budgets(
  ctx: RunnerContext,
  region: Rect | undefined,
  masks?: ScreenMasks,
  onShot?: () => void,
) {
  const cu = ctx.spec.flow.computerUse ?? {};
  return {
    maxSteps: cu.maxSteps ?? DEFAULTS.maxSteps,
    maxDurationMs: cu.maxDurationMs ?? DEFAULTS.maxDurationMs,
    maxRetries: cu.maxRetries ?? DEFAULTS.maxRetries,
    maxOutputTokens: DEFAULTS.maxOutputTokens,
    requestTimeoutMs: DEFAULTS.requestTimeoutMs,
    screen: new Screen({
      region,
      maxWidth: cu.imageMaxWidth ?? DEFAULTS.imageMaxWidth,
      maxBytes: cu.imageMaxBytes ?? DEFAULTS.imageMaxBytes,
      masks,
      onShot,
    }),
  };
}

/** A step's screenshot for the model, kept in the artifacts folder as `step-NNN.jpg` and counted. */
export async function stepShot(
  screen: Screen,
  guard: Guard,
  artifacts: string,
  step: number,
  metrics: LoopMetrics,
): Promise<{ shot: Shot; file: string }> {
  const shot = await captureUnseen(screen, guard);
  const file = `step-${String(step).padStart(3, '0')}.jpg`;
  writeFileSync(path.join(artifacts, file), shot.data);
  metrics.screenshot(shot.base64Bytes);
  return { shot, file };
}

/** Runs `body` with the desktop set up as the flow asks; everything set up is torn down after it. */
export async function onDesktop(
  ctx: RunnerContext,
  abort: AbortController,
  hudText: string,
  body: (d: DesktopRun) => Promise<RunnerOutcome>,
): Promise<RunnerOutcome> {
  const { spec } = ctx;
  const cu = spec.flow.computerUse ?? {};
  if (!ctx.env.DISPLAY)
    return failed('no display: DISPLAY is not set for this run (flow env, or computerUse.privateDisplay)');
  const artifacts = spec.artifactsDir ?? path.join(ctx.env.TMPDIR ?? '/tmp', ARTIFACTS_DIR);
  mkdirSync(artifacts, { recursive: true });
  // The inspector's live view of a private display (the real one the person sees for themselves).
  const liveMs = cu.liveFrameMs ?? LIVE_FRAME_MS;
  let live: LiveFrames | undefined;
  const masks = new ScreenMasks();
  if (cu.privateDisplay && liveMs > 0) {
    live = new LiveFrames(artifacts, { intervalMs: liveMs, masks }, (m) =>
      ctx.log('warn', `live view: a frame failed (${m})`, { kind: 'cu-live-error', error: m }),
    );
    live.start();
    ctx.log('info', `live view: a frame every ${liveMs} ms in ${ARTIFACTS_DIR}/${LIVE_FRAME_FILE}`, {
      kind: 'cu-live',
      file: `${ARTIFACTS_DIR}/${LIVE_FRAME_FILE}`,
      intervalMs: liveMs,
    });
  }
  try {
    const onShot = (): void => live?.now();
    const outcome = await guarded(ctx, abort, hudText, artifacts, masks, onShot, body);
    const stats = await live?.stop();
    return stats ? { ...outcome, metrics: { ...outcome.metrics, ...stats } } : outcome;
  } finally {
    await live?.stop(); // idempotent: also when the body threw
  }
}

async function guarded(
  ctx: RunnerContext,
  abort: AbortController,
  hudText: string,
  artifacts: string,
  masks: ScreenMasks,
  onShot: () => void,
  body: (d: DesktopRun) => Promise<RunnerOutcome>,
): Promise<RunnerOutcome> {
  const cu = ctx.spec.flow.computerUse ?? {};
  if (ctx.env[RunEnv.displayApp] === '1') {
    // The supervisor started the flow's app on this run's private display: give it time to map a window.
    const deadline = Date.now() + 20_000;
    while ((await desktop.listWindows().catch(() => [])).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
  }
  let region = cu.region;
  if (cu.monitor !== undefined) {
    const monitors = await desktop.listMonitors();
    const m =
      typeof cu.monitor === 'number' ? monitors[cu.monitor] : monitors.find((x) => x.name === cu.monitor);
    if (!m) {
      const have = monitors.map(
        (x, i) => `${i}: ${x.name} ${x.bounds[2]}x${x.bounds[3]}+${x.bounds[0]}+${x.bounds[1]}`,
      );
      return failed(
        `computerUse.monitor ${JSON.stringify(cu.monitor)} is not on this display; it has ${have.join(', ')}`,
      );
    }
    region = m.bounds;
  }
  const guard: Guard = { takenOver: false, watcherLost: undefined, hud: undefined };
  // Takeover (real display only): the person's Escape cancels; the agent's own Escape does not.
  let watcher: EscapeWatcher | undefined;
  if (!cu.privateDisplay && cu.takeover !== false) {
    watcher = watchEscape(
      (by, device) => {
        ctx.log(by === 'person' ? 'warn' : 'info', `Escape pressed by the ${by} (${device})`, {
          kind: 'cu-escape',
          by,
          device,
        });
        if (by === 'person') {
          guard.takenOver = true;
          abort.abort();
        }
      },
      hudText,
      (err) => {
        // Without the watcher the person could no longer take over: the run does not go on.
        guard.watcherLost = err.message;
        abort.abort();
      },
      // on the monitor the model sees (its region's centre), where the person watching it looks
      region ? [region[0] + Math.floor(region[2] / 2), region[1] + Math.floor(region[3] / 2)] : undefined,
    );
    guard.hud = watcher;
    try {
      await watcher.ready;
    } catch (err) {
      watcher.stop();
      return failed(
        `cannot watch for the person's Escape on this display (${(err as Error).message}); set computerUse.takeover: false to run without takeover`,
      );
    }
  }
  try {
    return await body({ region, guard, artifacts, masks, onShot });
  } finally {
    watcher?.stop();
  }
}

/** The outcome once the guard has had its say: the person's takeover or a lost watcher override it. */
export function guardedOutcome(
  guard: Guard,
  outcome: RunnerOutcome,
  make: (status: RunnerOutcome['status'], summary: string) => RunnerOutcome,
): RunnerOutcome {
  if (guard.takenOver)
    return {
      ...make('failed', 'cancelled: the person pressed Escape and took over the desktop'),
      cancelledBy: 'person',
    };
  if (guard.watcherLost)
    return make(
      'failed',
      `the takeover watcher stopped (${guard.watcherLost}): the run cannot go on without it`,
    );
  return outcome;
}

/** A screenshot for the model, the takeover HUD hidden while it is taken. */
export async function captureUnseen(screen: Screen, guard: Guard): Promise<Shot> {
  if (guard.hud) {
    await guard.hud.hideHud();
    await new Promise((r) => setTimeout(r, HUD_SETTLE_MS));
  }
  try {
    return await screen.capture();
  } finally {
    await guard.hud?.showHud();
  }
}

/** Step 0's event: the first screenshot, before any step. */
export function logFirstShot(ctx: Pick<RunnerContext, 'log'>, shot: Shot, file: string): void {
  ctx.log('info', `screenshot ${shot.width}x${shot.height} (${shot.base64Bytes} B base64)`, {
    kind: 'cu-screenshot',
    step: 0,
    file,
    width: shot.width,
    height: shot.height,
    source: shot.source,
    bytes: shot.base64Bytes,
    quality: shot.quality,
    captureMs: Math.round(shot.captureMs * 10) / 10,
  } satisfies CuScreenshot);
}

/** What a run on the desktop does on each retry of a model request: counts it and logs a `cu-retry` event. */
export function logRetry(
  ctx: Pick<RunnerContext, 'log'>,
  metrics: LoopMetrics,
): (t: { attempt: number; status: number | null; waitMs: number; error: string }) => void {
  return (t) => {
    metrics.retries++;
    ctx.log(
      'warn',
      `model request failed (${t.status ?? 'connection'}); retrying in ${Math.round(t.waitMs)} ms`,
      {
        kind: 'cu-retry',
        attempt: t.attempt,
        status: t.status,
        waitMs: Math.round(t.waitMs),
        error: t.error,
      },
    );
  };
}
