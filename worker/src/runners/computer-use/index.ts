/**
 * The `computer-use` runner: screenshot → model → desktop_action / desktop_read / terminal_exec →
 * results + fresh screenshot → … until the model's completion JSON. docs/computer-use.md.
 *
 * This file sets a run up (prompt folder, provider, the display and its monitor, the live view, the
 * person's takeover); the loop itself is loop.ts, its metrics metrics.ts, its retry policy retry.ts.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { desktop } from '@runboard/native';
import { ARTIFACTS_DIR, LIVE_FRAME_FILE, RunEnv } from '@runboard/supervisor/protocol';
import type { RunnerContext, Runner, RunnerOutcome } from '../runner.ts';
import type { Api } from './providers.ts';
import { loadPromptFolder, type PromptFolder } from './prompt.ts';
import { LiveFrames } from './live.ts';
import { Loop } from './loop.ts';
import { Screen } from './screen.ts';
import { watchEscape, type EscapeWatcher } from './takeover.ts';

const DEFAULTS = {
  maxSteps: 200,
  maxDurationMs: 60 * 60_000,
  imageMaxBytes: 1_000_000,
  imageMaxWidth: 1280,
  maxRetries: 3,
  maxOutputTokens: 4096,
  requestTimeoutMs: 120_000,
  /** Live view frames of a private display (0: none). */
  liveFrameMs: 1000,
};

export class ComputerUseRunner implements Runner {
  private readonly abort = new AbortController();

  cancel(): void {
    this.abort.abort();
  }

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const cu = spec.flow.computerUse ?? {};
    const fail = (summary: string): RunnerOutcome => ({
      status: 'failed',
      exitCode: null,
      summary,
      metrics: {},
    });
    if (!spec.model)
      return fail(
        `flow "${spec.flow.name}" has no provider: a computer-use run needs \`provider:\` (openai, anthropic, or an OpenAI-compatible server)`,
      );
    if (!spec.flow.prompt)
      return fail(`flow "${spec.flow.name}" has no prompt folder (prompts/execution_agent)`);
    let prompt: PromptFolder;
    let card: string;
    try {
      prompt = loadPromptFolder(spec.flow.prompt);
      card = readFileSync(spec.card.path, 'utf8');
    } catch (err) {
      return fail((err as Error).message);
    }
    if (!ctx.env.DISPLAY)
      return fail('no display: DISPLAY is not set for this run (flow env, or computerUse.privateDisplay)');
    const provider = spec.model.provider;
    const api: Api =
      cu.api ?? (provider === 'anthropic' ? 'messages' : provider === 'openai' ? 'responses' : 'chat');
    const model = spec.model.model ?? prompt.config.llm.model ?? 'gpt-5.2-codex';
    const artifacts = spec.artifactsDir ?? path.join(ctx.env.TMPDIR ?? '/tmp', ARTIFACTS_DIR);
    mkdirSync(artifacts, { recursive: true });
    // The inspector's live view of a private display (the real one the person sees for themselves).
    const liveMs = cu.liveFrameMs ?? DEFAULTS.liveFrameMs;
    let live: LiveFrames | undefined;
    if (cu.privateDisplay && liveMs > 0) {
      live = new LiveFrames(artifacts, { intervalMs: liveMs }, (m) =>
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
      const outcome = await this.drive(ctx, prompt, card, api, model, artifacts);
      const stats = await live?.stop();
      return stats ? { ...outcome, metrics: { ...outcome.metrics, ...stats } } : outcome;
    } finally {
      await live?.stop(); // idempotent: also when the loop threw
    }
  }

  private async drive(
    ctx: RunnerContext,
    prompt: PromptFolder,
    card: string,
    api: Api,
    model: string,
    artifacts: string,
  ): Promise<RunnerOutcome> {
    const cu = ctx.spec.flow.computerUse ?? {};
    const fail = (summary: string): RunnerOutcome => ({
      status: 'failed',
      exitCode: null,
      summary,
      metrics: {},
    });
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
        return fail(
          `computerUse.monitor ${JSON.stringify(cu.monitor)} is not on this display; it has ${have.join(', ')}`,
        );
      }
      region = m.bounds;
    }
    const loop = new Loop(ctx, prompt, card, api, model, artifacts, this.abort.signal, {
      maxSteps: cu.maxSteps ?? DEFAULTS.maxSteps,
      maxDurationMs: cu.maxDurationMs ?? DEFAULTS.maxDurationMs,
      maxRetries: cu.maxRetries ?? DEFAULTS.maxRetries,
      maxOutputTokens: DEFAULTS.maxOutputTokens,
      requestTimeoutMs: DEFAULTS.requestTimeoutMs,
      screen: new Screen({
        region,
        maxWidth: cu.imageMaxWidth ?? DEFAULTS.imageMaxWidth,
        maxBytes: cu.imageMaxBytes ?? DEFAULTS.imageMaxBytes,
      }),
    });
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
            loop.takenOver = true;
            this.abort.abort();
          }
        },
        HUD_TEXT,
        (err) => {
          // Without the watcher the person could no longer take over: the run does not go on.
          loop.watcherLost = err.message;
          this.abort.abort();
        },
        // on the monitor the model sees (its region's centre), where the person watching it looks
        region ? [region[0] + Math.floor(region[2] / 2), region[1] + Math.floor(region[3] / 2)] : undefined,
      );
      loop.hud = watcher;
      try {
        await watcher.ready;
      } catch (err) {
        watcher.stop();
        return fail(
          `cannot watch for the person's Escape on this display (${(err as Error).message}); set computerUse.takeover: false to run without takeover`,
        );
      }
    }
    try {
      return await loop.run();
    } finally {
      watcher?.stop();
    }
  }
}

/** The takeover HUD's text (the person's UI, not the model's prompt). */
const HUD_TEXT = 'Runboard: an agent is in control of this desktop. Press Esc to take over.';
