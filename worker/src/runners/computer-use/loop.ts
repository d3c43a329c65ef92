/**
 * The computer-use loop: screenshot → model → tool calls → results + fresh screenshot → … until the
 * model's completion JSON, a budget, a cancel, or a call that cannot be carried out. Each step returns
 * whether the loop goes on or ends with an outcome; nothing is thrown for control flow.
 *
 * Every tool call is logged as a `cu-step` event (the protocol's CuStep), so the inspector can show a
 * filmstrip; screenshots and report.md go to the run's artifacts folder.
 */
import path from 'node:path';
import type { ClarifyingQuestion, CuFinal, CuStep } from '@runboard/supervisor/protocol';
import type { RunnerContext, RunnerOutcome } from '../runner.ts';
import { parseCompletion, type Completion } from './completion.ts';
import { LoopMetrics } from '../../desktop/metrics.ts';
import { osVersion, type PromptFolder } from '../../desktop/prompt.ts';
import type { Screen, Shot } from '../../desktop/screen.ts';
import {
  ended,
  guardedOutcome,
  logFirstShot,
  logRetry,
  stepShot,
  type Guard,
} from '../../desktop/session.ts';
import {
  makeProvider,
  type Api,
  type ModelTurn,
  type Provider,
  type ToolReply,
} from '../../models/conversation.ts';
import { fill } from '../../models/prompt.ts';
import { sendWithRetry } from '../../models/retry.ts';
import { writeReport, type StepRecord } from './report.ts';
import { attachmentsJson, cardAttachments } from '../../tools/documents/attachments.ts';
import { documentScope, type DocumentScope } from '../../tools/documents/scope.ts';
import {
  ActionFailed,
  InvalidToolCall,
  offeredTools,
  PermissionNeeded,
  runTool,
  type ToolContext,
} from '../../desktop/tools.ts';

export interface LoopOptions {
  maxSteps: number;
  maxDurationMs: number;
  maxRetries: number;
  screen: Screen;
  maxOutputTokens: number;
  requestTimeoutMs: number;
}

/** A step either lets the loop go on or ends it with the run's outcome. */
type Step<T> = { go: true; value: T } | { go: false; outcome: RunnerOutcome };
const go = <T>(value: T): Step<T> => ({ go: true, value });

export class Loop {
  private readonly provider: Provider;
  private readonly documents: DocumentScope | null;
  private shot!: Shot;
  private readonly steps: StepRecord[] = [];
  private readonly metrics = new LoopMetrics();

  constructor(
    private readonly ctx: RunnerContext,
    private readonly prompt: PromptFolder,
    private readonly card: string,
    private readonly api: Api,
    private readonly model: string,
    private readonly artifacts: string,
    private readonly signal: AbortSignal,
    /** The person's takeover; its HUD is hidden while a screenshot is taken, so the model never sees it. */
    private readonly guard: Guard,
    private readonly o: LoopOptions,
  ) {
    this.documents = documentScope(ctx.spec);
    this.provider = makeProvider(api, {
      baseUrl: ctx.spec.model!.baseUrl,
      token: ctx.spec.model!.token,
      model,
      tools: offeredTools(prompt.config.tools, this.documents),
      maxOutputTokens: prompt.config.llm.max_output_tokens ?? o.maxOutputTokens,
      timeoutMs: o.requestTimeoutMs,
    });
  }

  async run(): Promise<RunnerOutcome> {
    const { ctx } = this;
    let outcome: RunnerOutcome;
    try {
      outcome = await this.loop();
    } catch (err) {
      outcome = this.outcome('failed', `computer-use loop error: ${(err as Error).message}`);
    }
    outcome = guardedOutcome(this.guard, outcome, (status, summary) => this.outcome(status, summary));
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

  private caption(step: number): string {
    return fill(this.prompt.config.screenshot_caption, {
      WIDTH: String(this.shot.width),
      HEIGHT: String(this.shot.height),
      STEP: String(step),
    });
  }

  private async screenshot(step: number): Promise<string> {
    const { shot, file } = await stepShot(this.o.screen, this.guard, this.artifacts, step, this.metrics);
    this.shot = shot;
    return file;
  }

  private outcome(status: RunnerOutcome['status'], summary: string, questions: ClarifyingQuestion[] = []) {
    const cost = this.metrics.cost(this.prompt.config, this.model);
    return ended(status, summary, questions, this.metrics.report(this.api, this.model, cost, this.o));
  }

  private end(status: RunnerOutcome['status'], summary: string, questions: ClarifyingQuestion[] = []) {
    return { go: false as const, outcome: this.outcome(status, summary, questions) };
  }

  /** One model request, retried by the retry policy. */
  private async send(): Promise<Step<ModelTurn>> {
    const r = await sendWithRetry(
      () => this.provider.send(this.signal),
      this.signal,
      this.o.maxRetries,
      logRetry(this.ctx, this.metrics),
    );
    if (r.ok) return go(r.value);
    if (r.rateLimitedUntil) this.metrics.rateLimitedUntil = r.rateLimitedUntil;
    return this.end('failed', r.why);
  }

  /** Whether the loop may take another step: not cancelled, within its step and time budgets. */
  private mayGoOn(step: number): Step<null> {
    if (this.signal.aborted) return this.end('failed', 'cancelled');
    if (step > this.o.maxSteps)
      return this.end(
        'failed',
        `the step budget (${this.o.maxSteps} model turns) ran out before the task was done`,
      );
    if (this.metrics.elapsedMs() > this.o.maxDurationMs)
      return this.end(
        'failed',
        `the time budget (${this.o.maxDurationMs} ms) ran out before the task was done`,
      );
    return go(null);
  }

  private async loop(): Promise<RunnerOutcome> {
    const { ctx } = this;
    const promptText = fill(this.prompt.template, {
      TASK_MARKDOWN: this.card,
      OS_VERSION: osVersion(ctx.env),
      ATTACHMENTS: attachmentsJson(
        cardAttachments(this.card, this.documents ?? { workspace: ctx.spec.workspace, allow: [] }),
      ),
    });
    let tPrep = performance.now();
    const first = await this.screenshot(0);
    this.provider.begin(promptText, this.shot, this.caption(0));
    logFirstShot(ctx, this.shot, first);
    const toolCtx: ToolContext = {
      frame: () => this.shot,
      env: ctx.env,
      workspace: ctx.spec.workspace,
      signal: this.signal,
      documents: this.documents,
      visionToken: ctx.spec.vision?.token,
    };
    for (let step = 1; ; step++) {
      const budget = this.mayGoOn(step);
      if (!budget.go) return budget.outcome;
      ctx.progress(undefined, `step ${step}`);
      const buildMs = performance.now() - tPrep;
      const tModel = performance.now();
      const sent = await this.send();
      if (!sent.go) return sent.outcome;
      const turn = sent.value;
      const modelMs = performance.now() - tModel;
      this.metrics.turn(turn.usage, modelMs);
      if (turn.calls.length === 0) return this.complete(step, turn, modelMs);
      const tAct = performance.now();
      const acted = await this.act(step, turn, modelMs, toolCtx);
      if (!acted.go) return acted.outcome;
      const { replies, records } = acted.value;
      const actMs = performance.now() - tAct;
      if (this.signal.aborted) return this.end('failed', 'cancelled').outcome;
      const tCap = performance.now();
      const file = await this.screenshot(step);
      const captureMs = performance.now() - tCap;
      tPrep = performance.now();
      this.provider.reply(replies, this.shot, this.caption(step));
      const replyMs = performance.now() - tPrep;
      // Loop overhead of this step, model time excluded: build + actions + capture/encode.
      this.metrics.stepOverhead(buildMs + actMs + captureMs + replyMs);
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

  /**
   * Carries out the turn's tool calls in order. A call that cannot be carried out as given (invalid,
   * or a desktop action that failed) ends the run as needs-input: the agent stops instead of guessing.
   */
  private async act(
    step: number,
    turn: ModelTurn,
    modelMs: number,
    toolCtx: ToolContext,
  ): Promise<Step<{ replies: ToolReply[]; records: StepRecord[] }>> {
    const replies: ToolReply[] = [];
    const records: StepRecord[] = [];
    for (const call of turn.calls) {
      this.metrics.toolCalls++;
      const tCall = performance.now();
      const invalid = (why: string) => {
        this.record(
          step,
          { tool: call.name, args: call.raw, error: why, ms: performance.now() - tCall },
          turn,
          modelMs,
        );
        return this.end(
          'needs-input',
          `stopped at step ${step}: the model's ${call.name} call could not be carried out as given (${why})`,
          [
            `The agent stopped instead of guessing: its ${call.name} call at step ${step} was invalid (${why}). How should this step be done?`,
          ],
        );
      };
      if (call.parseError) return invalid(`its arguments are not valid JSON: ${call.parseError}`);
      let result;
      try {
        result = await runTool(toolCtx, call.name, call.args);
      } catch (err) {
        if (this.signal.aborted) return this.end('failed', 'cancelled');
        if (err instanceof InvalidToolCall) return invalid(err.message);
        // a fault of ours: the run fails with it
        if (!(err instanceof ActionFailed) && !(err instanceof PermissionNeeded)) throw err;
        this.record(
          step,
          { tool: call.name, args: call.args, error: err.message, ms: performance.now() - tCall },
          turn,
          modelMs,
        );
        if (err instanceof PermissionNeeded)
          return this.end('needs-input', `stopped at step ${step}: permission needed (${err.message})`, [
            `The agent was not allowed to run ${err.message}. Allow it, or do it yourself?`,
          ]);
        return this.end('needs-input', `stopped at step ${step}: ${err.message}`, [
          `The desktop action at step ${step} failed (${err.message}); desktop actions are not retried. How should the agent proceed?`,
        ]);
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
    return go({ replies, records });
  }

  private record(
    step: number,
    r: Omit<StepRecord, 'step'> & { step?: number },
    turn: ModelTurn,
    modelMs: number,
    extra: Omit<CuStep['timings'], 'modelMs' | 'toolMs'> = {},
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
      } satisfies CuStep,
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
    } satisfies CuFinal);
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
/** Rounds the numbers of a timings record (tenths of ms), keeping its shape. */
function roundAll<T extends object>(o: T): T {
  return Object.fromEntries(
    Object.entries(o).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]),
  ) as T;
}
