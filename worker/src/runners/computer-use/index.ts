/**
 * The `computer-use` runner (issue 5, seed 000): screenshot → model → desktop_action / desktop_read /
 * terminal_exec → results + fresh screenshot → … until the model's completion JSON. docs/computer-use.md.
 *
 * Every step is a worker log event with `kind: 'cu-step'` (tool, arguments, result, screen pixels
 * acted on, the screenshot file sent next, timings, tokens), so the inspector can show a filmstrip.
 * Screenshots and report.md go to the run's artifacts folder (under its log dir, writable by the run).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { desktop } from '@runboard/native';
import type { ClarifyingQuestion } from '@runboard/supervisor/protocol';
import type { RunnerContext, Runner, RunnerOutcome } from '../runner.ts';
import { parseCompletion, type Completion } from './completion.ts';
import {
  authError,
  makeProvider,
  transient,
  type Api,
  type ModelTurn,
  type Provider,
  type ToolReply,
} from './providers.ts';
import { estimateCost, fill, loadPromptFolder, osVersion, type PromptFolder } from './prompt.ts';
import { writeReport, type StepRecord } from './report.ts';
import { LIVE_FILE, LiveFrames } from './live.ts';
import { Screen, type Shot } from './screen.ts';
import { watchEscape, type EscapeWatcher } from './takeover.ts';
import { ActionFailed, InvalidToolCall, runTool, type ToolContext } from './tools.ts';

const DEFAULTS = {
  maxSteps: 200,
  maxDurationMs: 60 * 60_000,
  imageMaxBytes: 1_000_000,
  imageMaxWidth: 1280,
  maxRetries: 3,
  maxOutputTokens: 4096,
  /** A retry-after longer than this is not waited for inside the run. */
  maxRetryWaitMs: 30_000,
  requestTimeoutMs: 120_000,
  /** Live view frames of a private display (0: none). */
  liveFrameMs: 1000,
};

class Stop {
  constructor(readonly outcome: RunnerOutcome) {}
}

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
    const artifacts = spec.artifactsDir ?? path.join(ctx.env.TMPDIR ?? '/tmp', 'artifacts');
    mkdirSync(artifacts, { recursive: true });
    // The inspector's live view of a private display (the real one the person sees for themselves).
    const liveMs = cu.liveFrameMs ?? DEFAULTS.liveFrameMs;
    let live: LiveFrames | undefined;
    if (cu.privateDisplay && liveMs > 0) {
      live = new LiveFrames(artifacts, { intervalMs: liveMs }, (m) =>
        ctx.log('warn', `live view: a frame failed (${m})`, { kind: 'cu-live-error', error: m }),
      );
      live.start();
      ctx.log('info', `live view: a frame every ${liveMs} ms in artifacts/${LIVE_FILE}`, {
        kind: 'cu-live',
        file: `artifacts/${LIVE_FILE}`,
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
    if (ctx.env.RUNBOARD_DISPLAY_APP === '1') {
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

interface LoopOptions {
  maxSteps: number;
  maxDurationMs: number;
  maxRetries: number;
  screen: Screen;
}

/** The takeover HUD's text (the person's UI, not the model's prompt). */
const HUD_TEXT = 'Runboard: an agent is in control of this desktop. Press Esc to take over.';
/** After the HUD is unmapped, the windows under it repaint before the capture. */
const HUD_SETTLE_MS = 30;

class Loop {
  /** The person pressed Escape: the run ends as cancelled by them. */
  takenOver = false;
  /** The takeover watcher died (the display went away): why. */
  watcherLost: string | undefined;
  /** The takeover HUD (real display): hidden while a screenshot is taken, so the model never sees it. */
  hud: EscapeWatcher | undefined;
  private readonly provider: Provider;
  private shot!: Shot;
  private readonly steps: StepRecord[] = [];
  private readonly t0 = performance.now();
  private tokens = { input: 0, output: 0 };
  private turns = 0;
  private toolCalls = 0;
  private retries = 0;
  private imageBytes = { total: 0, max: 0, count: 0 };
  private modelMs = 0;
  private overheadMs: number[] = [];
  private extraMetrics: Record<string, number | string> = {};

  constructor(
    private readonly ctx: RunnerContext,
    private readonly prompt: PromptFolder,
    private readonly card: string,
    private readonly api: Api,
    private readonly model: string,
    private readonly artifacts: string,
    private readonly signal: AbortSignal,
    private readonly o: LoopOptions,
  ) {
    this.provider = makeProvider(api, {
      baseUrl: ctx.spec.model!.baseUrl,
      token: ctx.spec.model!.token,
      model,
      descriptions: prompt.config.tools,
      maxOutputTokens: prompt.config.llm.max_output_tokens ?? DEFAULTS.maxOutputTokens,
      timeoutMs: DEFAULTS.requestTimeoutMs,
    });
  }

  private caption(step: number): string {
    return fill(this.prompt.config.screenshot_caption, {
      WIDTH: String(this.shot.width),
      HEIGHT: String(this.shot.height),
      STEP: String(step),
    });
  }

  private async screenshot(step: number): Promise<string> {
    if (this.hud) {
      await this.hud.hideHud();
      await new Promise((r) => setTimeout(r, HUD_SETTLE_MS));
    }
    try {
      this.shot = await this.o.screen.capture();
    } finally {
      await this.hud?.showHud();
    }
    const file = `step-${String(step).padStart(3, '0')}.jpg`;
    writeFileSync(path.join(this.artifacts, file), this.shot.data);
    this.imageBytes.total += this.shot.base64Bytes;
    this.imageBytes.count++;
    this.imageBytes.max = Math.max(this.imageBytes.max, this.shot.base64Bytes);
    return file;
  }

  async run(): Promise<RunnerOutcome> {
    const { ctx } = this;
    let outcome: RunnerOutcome;
    try {
      outcome = await this.loop();
    } catch (err) {
      outcome =
        err instanceof Stop
          ? err.outcome
          : this.outcome('failed', `computer-use loop error: ${(err as Error).message}`);
    }
    if (this.watcherLost && !this.takenOver)
      outcome = this.outcome(
        'failed',
        `the takeover watcher stopped (${this.watcherLost}): the run cannot go on without it`,
      );
    if (this.takenOver)
      outcome = {
        ...this.outcome('failed', 'cancelled: the person pressed Escape and took over the desktop'),
        cancelledBy: 'person',
      };
    try {
      writeReport(path.join(this.artifacts, 'report.md'), {
        card: ctx.spec.card.title ?? path.basename(ctx.spec.card.path),
        runId: ctx.spec.runId,
        api: this.api,
        model: this.model,
        outcome,
        steps: this.steps,
      });
      ctx.log('info', 'computer-use report written', {
        kind: 'cu-report',
        file: path.join(this.artifacts, 'report.md'),
      });
    } catch (err) {
      ctx.log('warn', `could not write the run report: ${(err as Error).message}`);
    }
    return outcome;
  }

  private outcome(
    status: RunnerOutcome['status'],
    summary: string,
    questions: ClarifyingQuestion[] = [],
  ): RunnerOutcome {
    const sorted = [...this.overheadMs].sort((a, b) => a - b);
    const pct = (p: number): number =>
      sorted.length
        ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10
        : 0;
    const cost = estimateCost(this.prompt.config, this.model, this.tokens.input, this.tokens.output);
    return {
      status,
      exitCode: null,
      summary,
      ...(questions.length ? { questions } : {}),
      metrics: {
        api: this.api,
        model: this.model,
        steps: this.turns,
        toolCalls: this.toolCalls,
        inputTokens: this.tokens.input,
        outputTokens: this.tokens.output,
        ...(cost !== null ? { estimatedCostUsd: cost } : {}),
        modelRetries: this.retries,
        modelMs: Math.round(this.modelMs),
        loopMs: Math.round(performance.now() - this.t0),
        stepOverheadP50Ms: pct(0.5),
        stepOverheadP95Ms: pct(0.95),
        screenshots: this.imageBytes.count,
        imageBytesTotal: this.imageBytes.total,
        imageBytesMax: this.imageBytes.max,
        stepBudget: this.o.maxSteps,
        durationBudgetMs: this.o.maxDurationMs,
        ...this.extraMetrics,
      },
    };
  }

  private stop(status: RunnerOutcome['status'], summary: string, questions: ClarifyingQuestion[] = []): Stop {
    return new Stop(this.outcome(status, summary, questions));
  }

  private async send(): Promise<ModelTurn> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.provider.send(this.signal);
      } catch (err) {
        if (this.signal.aborted) throw this.stop('failed', 'cancelled');
        if (authError(err))
          throw this.stop(
            'failed',
            `the model provider refused the run's credentials (${(err as Error).message}); check the provider key stored with the supervisor (docs/computer-use.md, "Keys")`,
          );
        const t = transient(err);
        const wait = t.retryAfterMs ?? Math.min(8000, 500 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
        if (!t.retry || attempt >= this.o.maxRetries || wait > DEFAULTS.maxRetryWaitMs) {
          if (t.status === 429 && t.retryAfterMs !== null) {
            const until = new Date(Date.now() + t.retryAfterMs).toISOString();
            this.extraMetrics.rateLimitedUntil = until;
            throw this.stop(
              'failed',
              `rate limited by the model provider until ${until} (${(err as Error).message})`,
            );
          }
          throw this.stop(
            'failed',
            `model request failed${t.retry ? ` after ${attempt + 1} attempts` : ''}: ${(err as Error).message}`,
          );
        }
        this.retries++;
        this.ctx.log(
          'warn',
          `model request failed (${t.status ?? 'connection'}); retrying in ${Math.round(wait)} ms`,
          {
            kind: 'cu-retry',
            attempt: attempt + 1,
            status: t.status,
            waitMs: Math.round(wait),
            error: (err as Error).message,
          },
        );
        await new Promise<void>((res) => {
          const timer = setTimeout(res, wait);
          this.signal.addEventListener('abort', () => (clearTimeout(timer), res()), { once: true });
        });
        if (this.signal.aborted) throw this.stop('failed', 'cancelled');
      }
    }
  }

  private async loop(): Promise<RunnerOutcome> {
    const { ctx } = this;
    const promptText = fill(this.prompt.template, {
      TASK_MARKDOWN: this.card,
      OS_VERSION: osVersion(ctx.env),
    });
    let tPrep = performance.now();
    const first = await this.screenshot(0);
    this.provider.begin(promptText, this.shot, this.caption(0));
    ctx.log('info', `screenshot ${this.shot.width}x${this.shot.height} (${this.shot.base64Bytes} B base64)`, {
      kind: 'cu-screenshot',
      step: 0,
      file: first,
      width: this.shot.width,
      height: this.shot.height,
      source: this.shot.source,
      bytes: this.shot.base64Bytes,
      quality: this.shot.quality,
      captureMs: round(this.shot.captureMs),
    });
    const toolCtx: ToolContext = {
      frame: () => this.shot,
      env: ctx.env,
      workspace: ctx.spec.workspace,
      signal: this.signal,
    };
    for (let step = 1; ; step++) {
      if (this.signal.aborted) throw this.stop('failed', 'cancelled');
      if (step > this.o.maxSteps)
        throw this.stop(
          'failed',
          `the step budget (${this.o.maxSteps} model turns) ran out before the task was done`,
        );
      if (performance.now() - this.t0 > this.o.maxDurationMs)
        throw this.stop(
          'failed',
          `the time budget (${this.o.maxDurationMs} ms) ran out before the task was done`,
        );
      ctx.progress(undefined, `step ${step}`);
      const buildMs = performance.now() - tPrep;
      const tModel = performance.now();
      const turn = await this.send();
      const modelMs = performance.now() - tModel;
      this.modelMs += modelMs;
      this.turns++;
      this.tokens.input += turn.usage.input;
      this.tokens.output += turn.usage.output;
      if (turn.calls.length === 0) return this.complete(step, turn, modelMs);
      const tAct = performance.now();
      const replies: ToolReply[] = [];
      const records: StepRecord[] = [];
      for (const call of turn.calls) {
        this.toolCalls++;
        const tCall = performance.now();
        const invalid = (why: string): Stop => {
          this.record(
            step,
            { tool: call.name, args: call.raw, error: why, ms: performance.now() - tCall },
            turn,
            modelMs,
          );
          return this.stop(
            'needs-input',
            `stopped at step ${step}: the model's ${call.name} call could not be carried out as given (${why})`,
            [
              `The agent stopped instead of guessing: its ${call.name} call at step ${step} was invalid (${why}). How should this step be done?`,
            ],
          );
        };
        if (call.parseError) throw invalid(`its arguments are not valid JSON: ${call.parseError}`);
        let result;
        try {
          result = await runTool(toolCtx, call.name, call.args);
        } catch (err) {
          if (this.signal.aborted) throw this.stop('failed', 'cancelled');
          if (err instanceof InvalidToolCall) throw invalid(err.message);
          if (err instanceof ActionFailed) {
            this.record(
              step,
              { tool: call.name, args: call.args, error: err.message, ms: performance.now() - tCall },
              turn,
              modelMs,
            );
            throw this.stop('needs-input', `stopped at step ${step}: ${err.message}`, [
              `The desktop action at step ${step} failed (${err.message}); desktop actions are not retried. How should the agent proceed?`,
            ]);
          }
          throw err;
        }
        replies.push({ call, output: result.output });
        records.push({
          step,
          tool: call.name,
          args: call.args,
          result: result.output,
          ...(result.screen ? { screen: result.screen } : {}),
          ms: performance.now() - tCall,
        });
      }
      const actMs = performance.now() - tAct;
      if (this.signal.aborted) throw this.stop('failed', 'cancelled');
      const tCap = performance.now();
      const file = await this.screenshot(step);
      const captureMs = performance.now() - tCap;
      tPrep = performance.now();
      this.provider.reply(replies, this.shot, this.caption(step));
      const replyMs = performance.now() - tPrep;
      // Loop overhead of this step, model time excluded: build + actions + capture/encode.
      this.overheadMs.push(buildMs + actMs + captureMs + replyMs);
      for (const r of records) {
        r.screenshot = file;
        this.record(step, r, turn, modelMs, {
          actMs,
          captureMs,
          buildMs: buildMs + replyMs,
          requestBytes: this.provider.lastRequestBytes,
          imageBytes: this.shot.base64Bytes,
          image: [this.shot.width, this.shot.height],
        });
      }
    }
  }

  private record(
    step: number,
    r: Omit<StepRecord, 'step'> & { step?: number },
    turn: ModelTurn,
    modelMs: number,
    extra: Record<string, unknown> = {},
  ): void {
    const rec: StepRecord = { ...r, step };
    this.steps.push(rec);
    const action =
      rec.tool === 'desktop_action' && rec.args && typeof rec.args === 'object'
        ? String((rec.args as { action?: unknown }).action)
        : rec.tool;
    this.ctx.log(
      rec.error ? 'warn' : 'info',
      `step ${step}: ${rec.tool}${action !== rec.tool ? ` ${action}` : ''}${rec.error ? ` (invalid: ${rec.error})` : ''}`,
      {
        kind: 'cu-step',
        step,
        tool: rec.tool,
        action,
        args: rec.args,
        ...(rec.result ? { result: rec.result } : {}),
        ...(rec.error ? { error: rec.error } : {}),
        ...(rec.screen ? { screen: rec.screen } : {}),
        ...(rec.screenshot ? { screenshot: rec.screenshot } : {}),
        ...(turn.text ? { modelText: turn.text.slice(0, 2000) } : {}),
        timings: { modelMs: round(modelMs), toolMs: round(rec.ms), ...roundAll(extra) },
        tokens: turn.usage,
      },
    );
  }

  private complete(step: number, turn: ModelTurn, modelMs: number): RunnerOutcome {
    const c: Completion | string = parseCompletion(turn.text);
    this.ctx.log('info', `step ${step}: final answer`, {
      kind: 'cu-final',
      step,
      text: turn.text.slice(0, 8000),
      valid: typeof c !== 'string',
      timings: { modelMs: round(modelMs) },
      tokens: turn.usage,
    });
    if (typeof c === 'string')
      return this.outcome(
        'needs-input',
        `stopped: the agent's final answer was not a valid completion (${c})`,
        [
          `The agent ended without a valid result (${c}). Its last message was: ${JSON.stringify(turn.text.slice(0, 500))}. Was the task done, and if not, what should it do?`,
        ],
      );
    this.steps.push({
      step,
      tool: 'final',
      args: null,
      result: c as unknown as Record<string, unknown>,
      ms: 0,
    });
    if (c.status === 'SUCCESS') return this.outcome('succeeded', c.summary || 'done');
    if (c.status === 'NEEDS_CLARIFICATION')
      return this.outcome(
        'needs-input',
        c.summary || 'the agent needs clarification',
        c.questions.length ? c.questions : [`The agent needs clarification: ${c.summary || c.error}`],
      );
    return this.outcome(
      'failed',
      [c.summary, c.error].filter(Boolean).join(': ') || 'the agent reported FAILED',
      c.questions,
    );
  }
}

const round = (n: number): number => Math.round(n * 10) / 10;
function roundAll(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]));
}
