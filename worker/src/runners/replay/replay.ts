/**
 * The replay engine: a workflow's subtasks in order, each step by its accessibility locator first
 * (no model), the model (predict_action) only for a step whose element is not there as recorded or
 * whose screen drifted, then back to the locators for the next step. A subtask with an outcome check
 * is done only when the check holds on screen: a model's `done` does not make it so. Every action, by
 * either, is a `cu-step` event with its screenshot (the inspector's filmstrip) and a line of report.md.
 *
 * The engine carries the walk out; its parts are beside it: walk.ts (pure: where the walk goes after a
 * model turn, what the model is asked), locator-step.ts (pure: what a step does by its locator) and
 * by-locator.ts (doing it: locate.ts reads the desktop, match.ts, pure, finds the element), secrets.ts (pure: the sensitive values), predict.ts (the
 * model's turn).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ClarifyingQuestion, CuStep } from '@runboard/supervisor/protocol';
import type { RunnerContext, RunnerOutcome } from '../runner.ts';
import { LoopMetrics } from '../../desktop/metrics.ts';
import type { PromptConfigOf } from '../../desktop/prompt.ts';
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
  ActionFailed,
  desktopAction,
  documentOffers,
  InvalidToolCall,
  PermissionNeeded,
  runTool,
  type ToolContext,
} from '../../desktop/tools.ts';
import type { Api, OfferedTool } from '../../models/conversation.ts';
import { fill } from '../../models/prompt.ts';
import { sendWithRetry } from '../../models/retry.ts';
import { documentScope } from '../../tools/documents/scope.ts';
import { ByLocator } from './by-locator.ts';
import { onSecretFields } from './locate.ts';
import { fillTemplates, shown, type Plan, type PlanStep, type PlanSubtask, type Values } from './plan.ts';
import { predict, userQuery, type HistoryEntry, type PredictTool } from './predict.ts';
import { renderReplayReport, type ReplayRecord } from './report.ts';
import { Secrets } from './secrets.ts';
import {
  askForOutcome,
  askForStep,
  describeCheck,
  FALSE_DONE_LIMIT,
  nextAfterTurn,
  outcomeNeverAppeared,
  tooManyTurns,
} from './walk.ts';

export interface ReplayOptions {
  maxSteps: number;
  maxDurationMs: number;
  maxRetries: number;
  maxOutputTokens: number;
  requestTimeoutMs: number;
  /** Model turns one subtask may take before the run asks the person. */
  maxModelTurnsPerSubtask: number;
  /** How long an outcome check (or a typed value) may take to show. */
  settleMs: number;
  screen: Screen;
}

export interface ReplayPrompt {
  template: string;
  config: PromptConfigOf<PredictTool>;
}

type Ended = { ended: RunnerOutcome };
/** `read`: the model used a document tool; the step it was asked about is still to do. */
type Turn = { kind: 'acted' } | { kind: 'read' } | { kind: 'done'; value: string } | Ended;

const round = (n: number): number => Math.round(n * 10) / 10;

export class Replay {
  private shot!: Shot;
  private n = 0;
  private memory = '';
  private readonly extracts: Values = {};
  private readonly records: ReplayRecord[] = [];
  private readonly metrics = new LoopMetrics();
  private locatorSteps = 0;
  /** What the report says about sensitive values (the model typed one by name). */
  private readonly secretNotes: string[] = [];
  private modelSteps = 0;
  private modelCalls = 0;
  /** What the skipped model calls would have cost (estimated per step from the query and image). */
  private tokensSaved = 0;
  private readonly toolCtx: ToolContext;
  /** The document tools the flow grants, offered at each model step. */
  private readonly documentTools: OfferedTool[];
  /** Sensitive parameters: typed, never shown, sent, logged or left on a screenshot (the model knows their `{name}`). */
  private readonly secrets: Secrets;
  /** The steps replay does by their accessibility locators. */
  private readonly locator: ByLocator;

  constructor(
    private readonly ctx: RunnerContext,
    private readonly plan: Plan,
    private readonly values: Values,
    private readonly prompt: ReplayPrompt,
    private readonly api: Api,
    private readonly model: string,
    private readonly artifacts: string,
    private readonly signal: AbortSignal,
    private readonly guard: Guard,
    private readonly o: ReplayOptions,
  ) {
    this.secrets = new Secrets(plan, values);
    this.locator = new ByLocator({
      settleMs: o.settleMs,
      secrets: this.secrets,
      mask: (r) => o.screen.mask(r),
    });
    // Password fields the locators come across are masked in every later screenshot, as the recorder
    // masks them; so is every field a sensitive value is typed into (see typedSecret).
    onSecretFields((r) => o.screen.mask(r));
    // the model's steps may read the workspace's documents as a computer-use run's do (flow `documents`)
    const documents = documentScope(ctx.spec);
    this.documentTools = documentOffers(documents);
    this.toolCtx = {
      frame: () => this.shot,
      env: ctx.env,
      workspace: ctx.spec.workspace,
      signal,
      documents,
      visionToken: ctx.spec.vision?.token,
    };
  }

  async run(): Promise<RunnerOutcome> {
    let outcome: RunnerOutcome;
    try {
      outcome = await this.all();
    } catch (err) {
      outcome = this.outcome('failed', `replay error: ${(err as Error).message}`);
    }
    outcome = guardedOutcome(this.guard, outcome, (status, summary) => this.outcome(status, summary));
    try {
      const file = path.join(this.artifacts, 'report.md');
      writeFileSync(
        file,
        renderReplayReport({
          card: this.ctx.spec.card.title ?? path.basename(this.ctx.spec.card.path),
          runId: this.ctx.spec.runId,
          task: this.plan.task,
          model: `${this.model} (${this.api})`,
          values: shown(this.plan, this.values),
          extracts: this.extracts,
          outcome,
          records: this.records,
          secrets: {
            names: this.secrets.names,
            notes: this.secretNotes,
          },
        }),
      );
      this.ctx.log('info', 'replay report written', { kind: 'cu-report', file });
    } catch (err) {
      this.ctx.log('warn', `could not write the run report: ${(err as Error).message}`);
    }
    return outcome;
  }

  private async all(): Promise<RunnerOutcome> {
    const first = await this.screenshot();
    logFirstShot(this.ctx, this.shot, first);
    const total = this.plan.subtasks.length;
    for (const [i, sub] of this.plan.subtasks.entries()) {
      this.ctx.progress(i / total, `subtask ${i + 1}/${total}: ${sub.text}`);
      this.ctx.log('info', `subtask ${i + 1}/${total}: ${sub.text}`, { kind: 'replay-subtask', id: sub.id });
      const r = await this.subtask(sub);
      if (r) return r.ended;
    }
    return this.outcome(
      'succeeded',
      `replayed ${total} subtask(s): ${this.locatorSteps} step(s) by locator, ${this.modelSteps} by the model (${this.modelCalls} model call(s))`,
    );
  }

  private file(n: number): string {
    return `step-${String(n).padStart(3, '0')}.jpg`;
  }

  private async screenshot(): Promise<string> {
    const { shot, file } = await stepShot(this.o.screen, this.guard, this.artifacts, this.n, this.metrics);
    this.shot = shot;
    return file;
  }

  private outcome(status: RunnerOutcome['status'], summary: string, questions: ClarifyingQuestion[] = []) {
    const cost = this.metrics.cost(this.prompt.config, this.model);
    const perCall = this.modelCalls
      ? (this.metrics.tokens.input + this.metrics.tokens.output) / this.modelCalls
      : undefined;
    return ended(status, summary, questions, {
      ...this.metrics.report(this.api, this.model, cost, this.o),
      replayLocatorSteps: this.locatorSteps,
      replayModelSteps: this.modelSteps,
      replayModelCalls: this.modelCalls,
      // measured per call when the run made any, else estimated from the queries it did not send
      tokensSavedEstimate: Math.round(perCall !== undefined ? perCall * this.locatorSteps : this.tokensSaved),
    });
  }

  private end(status: RunnerOutcome['status'], summary: string, questions: ClarifyingQuestion[] = []): Ended {
    return { ended: this.outcome(status, summary, questions) };
  }

  private mayGoOn(): Ended | null {
    if (this.signal.aborted) return this.end('failed', 'cancelled');
    if (this.n >= this.o.maxSteps)
      return this.end(
        'failed',
        `the step budget (${this.o.maxSteps} steps) ran out before the workflow was done`,
      );
    if (this.metrics.elapsedMs() > this.o.maxDurationMs)
      return this.end(
        'failed',
        `the time budget (${this.o.maxDurationMs} ms) ran out before the workflow was done`,
      );
    return null;
  }

  private query(sub: PlanSubtask, steps: PlanStep[], history: HistoryEntry[], ask: string): string {
    const extracts: Values = {};
    for (const d of sub.dependencies) if (Object.hasOwn(this.extracts, d)) extracts[d] = this.extracts[d]!;
    return userQuery(this.prompt.template, {
      task: this.plan.task,
      description: this.plan.description,
      subtask: sub,
      values: this.secrets.modelParams(),
      memory: this.memory,
      history,
      reference: steps,
      extracts,
      ask: this.secrets.hide(ask),
    });
  }

  private async subtask(sub: PlanSubtask): Promise<Ended | null> {
    const values = { ...this.values, ...this.extracts };
    // The subtask as the locators and checks use it: parameters and upstream extracts filled in.
    // What the model is shown has a sensitive parameter's value withheld (it is never sent out): its
    // `{name}`, which the model may type (modelTurn types the value in its place).
    const forModel = fillTemplates(sub, { ...this.secrets.modelValues, ...this.extracts });
    sub = fillTemplates(sub, values);
    const steps = sub.steps;
    const history: HistoryEntry[] = [];
    let turns = 0;
    const unfinished = (u: { summary: string; question: string }): Ended =>
      this.end('needs-input', u.summary, [u.question]);
    // One model turn, within the subtask's allowance of them.
    const ask = (step: PlanStep | undefined, what: string): Promise<Turn> => {
      if (turns >= this.o.maxModelTurnsPerSubtask)
        return Promise.resolve(unfinished(tooManyTurns(sub, turns)));
      turns++;
      return this.modelTurn(forModel, forModel.steps, history, step, what);
    };
    for (let i = 0; i < steps.length;) {
      const stop = this.mayGoOn();
      if (stop) return stop;
      const step = steps[i]!;
      const extract = step.action.type === 'extract';
      // By its locator first: an extract's element read (as the person would look at it), a step done.
      const t0 = performance.now();
      const done = extract ? await this.locator.read(step) : await this.locator.run(step);
      if (typeof done !== 'string') {
        this.locatorSteps++;
        this.tokensSaved += this.estimateTokens(this.query(forModel, forModel.steps, history, ''));
        const read = done === true ? undefined : done.value;
        await this.afterAction(
          step,
          sub,
          'locator',
          performance.now() - t0,
          read === undefined ? undefined : { ok: true, value: read },
        );
        if (read !== undefined) this.keep(step, read, 'locator');
        history.push({
          step: step.n,
          action: extract ? 'extract by locator' : `${step.action.type} by locator`,
          observation: step.intent,
        });
        i++;
        continue;
      }
      const r = await ask(step, askForStep(step, done));
      if ('ended' in r) return r;
      if (extract && r.kind === 'done') this.keep(step, r.value, 'model');
      const next = nextAfterTurn(step, r.kind);
      if (next === 'steps-done') break;
      if (next === 'next') i++;
    }
    if (!sub.check) return null;
    if (await this.locator.holds(sub.check, this.signal)) return null;
    let falseDone = 0;
    // In words for the model and the card's question: a sensitive value withheld, as in the query.
    const want = describeCheck(forModel.check ?? sub.check);
    for (;;) {
      const stop = this.mayGoOn();
      if (stop) return stop;
      const r = await ask(undefined, askForOutcome(want));
      if ('ended' in r) return r;
      if (await this.locator.holds(sub.check, this.signal)) return null;
      if (r.kind === 'done') {
        falseDone++;
        history.push({
          step: this.n,
          action: 'done',
          observation: `the expected outcome is still not on screen (${want})`,
        });
        if (falseDone >= FALSE_DONE_LIMIT) return unfinished(outcomeNeverAppeared(sub, want));
      }
    }
  }

  /** An extract's value, kept for the subtasks that depend on it. */
  private keep(step: PlanStep, value: string, by: 'locator' | 'model'): void {
    const name = step.action.variable || `extract_${step.n}`;
    this.extracts[name] = value;
    this.ctx.log('info', `extract ${name} = ${JSON.stringify(value)} (by ${by})`, {
      kind: 'replay-extract',
      name,
      value,
      by,
    });
  }

  private estimateTokens(query: string): number {
    // about 4 characters a token; an image about (w * h) / 750 tokens; a short tool call back
    return Math.ceil(query.length / 4) + Math.ceil((this.shot.width * this.shot.height) / 750) + 60;
  }

  private async afterAction(
    step: PlanStep,
    sub: PlanSubtask,
    mode: 'locator',
    ms: number,
    result: Record<string, unknown> = { ok: true },
  ): Promise<void> {
    this.n++;
    const t = performance.now();
    const file = await this.screenshot();
    const a = step.action as Record<string, unknown>;
    this.emit({
      step: this.n,
      tool: 'desktop_action',
      action: String(a.type),
      // a sensitive value typed is recorded by its name, `{pin}`
      args: typeof a.text === 'string' ? { ...a, text: this.secrets.hide(a.text) } : a,
      result,
      screenshot: file,
      modelText: undefined,
      timings: { modelMs: 0, toolMs: round(ms), captureMs: round(performance.now() - t) },
      tokens: { input: 0, output: 0 },
      replay: { mode, subtask: sub.id, planStep: step.n },
    });
    this.records.push({ n: this.n, subtask: sub.text, planStep: step.n, action: String(a.type), mode, ms });
  }

  private emit(e: Omit<CuStep, 'kind' | 'modelText'> & { modelText: string | undefined }): void {
    const { modelText, ...rest } = e;
    const mode = e.replay?.mode === 'model' ? 'by the model' : 'by locator';
    this.ctx.log(
      e.error ? 'warn' : 'info',
      `step ${e.step}: ${e.action} ${mode}${e.error ? ` (${e.error})` : ''}`,
      {
        kind: 'cu-step',
        ...rest,
        ...(modelText ? { modelText: modelText.slice(0, 2000) } : {}),
      } satisfies CuStep,
    );
  }

  /** One predict_action turn and what it asked for, carried out. */
  private async modelTurn(
    sub: PlanSubtask,
    steps: PlanStep[],
    history: HistoryEntry[],
    step: PlanStep | undefined,
    ask: string,
  ): Promise<Turn> {
    await this.screenshot(); // what the model sees is the screen now
    const query = this.query(sub, steps, history, ask);
    const caption = fill(this.prompt.config.screenshot_caption, {
      WIDTH: String(this.shot.width),
      HEIGHT: String(this.shot.height),
      STEP: String(this.n),
    });
    const t0 = performance.now();
    let requestBytes = 0;
    const sent = await sendWithRetry(
      async () => {
        const p = await predict(
          this.api,
          {
            baseUrl: this.ctx.spec.model!.baseUrl,
            token: this.ctx.spec.model!.token,
            model: this.model,
            maxOutputTokens: this.prompt.config.llm.max_output_tokens ?? this.o.maxOutputTokens,
            timeoutMs: this.o.requestTimeoutMs,
          },
          this.prompt.config,
          query,
          this.shot,
          caption,
          this.signal,
          this.documentTools,
        );
        requestBytes = p.requestBytes;
        return p.turn;
      },
      this.signal,
      this.o.maxRetries,
      logRetry(this.ctx, this.metrics),
    );
    if (!sent.ok) {
      if (sent.rateLimitedUntil) this.metrics.rateLimitedUntil = sent.rateLimitedUntil;
      return this.end('failed', sent.why);
    }
    const turn = sent.value;
    const modelMs = performance.now() - t0;
    this.metrics.turn(turn.usage, modelMs);
    this.modelCalls++;
    this.n++;
    const at = step ? ` at step ${step.n}` : '';
    const record = (
      tool: string,
      action: string,
      args: unknown,
      extra: Partial<CuStep> = {},
      ms = 0,
    ): void => {
      this.emit({
        step: this.n,
        tool,
        action,
        args,
        screenshot: extra.screenshot ?? this.file(this.n - 1),
        modelText: turn.text,
        timings: {
          modelMs: round(modelMs),
          toolMs: round(ms),
          requestBytes,
          imageBytes: this.shot.base64Bytes,
        },
        tokens: turn.usage,
        replay: { mode: 'model', subtask: sub.id, ...(step ? { planStep: step.n } : {}), ask },
        ...extra,
      });
      this.records.push({
        n: this.n,
        subtask: sub.text,
        ...(step ? { planStep: step.n } : {}),
        action,
        mode: 'model',
        why: ask,
        ms: modelMs + ms,
        tokens: turn.usage.input + turn.usage.output,
        ...(extra.error ? { error: extra.error } : {}),
      });
    };
    const invalid = (why: string, tool = 'predict_action'): Turn => {
      record(tool, tool, null, { error: why });
      return this.end(
        'needs-input',
        `stopped in subtask "${sub.text}"${at}: the model's answer could not be carried out (${why})`,
        [
          `Replay asked the model for help in "${sub.text}"${at} and its answer could not be carried out (${why}). How should this be done?`,
        ],
      );
    };
    if (turn.calls.length !== 1)
      return invalid(
        `it must make exactly one tool call (computer_use, done or stuck); it made ${turn.calls.length}`,
      );
    const call = turn.calls[0]!;
    if (call.parseError) return invalid(`its arguments are not valid JSON: ${call.parseError}`, call.name);
    const args = (call.args ?? {}) as Record<string, unknown>;
    const note = typeof args.observation === 'string' ? args.observation : '';
    if (typeof args.memory === 'string') this.memory = args.memory;
    if (call.name === 'done') {
      record('done', 'done', args);
      history.push({ step: this.n, action: 'done', observation: note });
      return { kind: 'done', value: typeof args.value === 'string' ? args.value : '' };
    }
    if (call.name === 'stuck') {
      record('stuck', 'stuck', args);
      const q =
        typeof args.question === 'string' && args.question.trim()
          ? args.question
          : `The model is stuck in "${sub.text}": ${note}`;
      return this.end('needs-input', `stuck in subtask "${sub.text}"${at}: ${note || q}`, [q]);
    }
    if (this.documentTools.some((d) => d.name === call.name)) {
      // a document tool: its result goes to the next query through the history (each query is fresh)
      const tDoc = performance.now();
      try {
        const r = await runTool(this.toolCtx, call.name, args);
        record(call.name, call.name, args, { result: r.output }, performance.now() - tDoc);
        const out = r.output as { ok: boolean; text?: string; error?: string };
        const said = out.ok ? (out.text ?? '') : `error: ${out.error ?? ''}`;
        history.push({
          step: this.n,
          action: `${call.name} ${JSON.stringify(args)}`,
          observation: said.slice(0, 8000),
        });
        return { kind: 'read' };
      } catch (err) {
        if (err instanceof InvalidToolCall) return invalid(err.message, call.name);
        if (!(err instanceof PermissionNeeded) && !(err instanceof ActionFailed)) throw err;
        record(call.name, call.name, args, { error: err.message });
        return this.end(
          'needs-input',
          `stopped in subtask "${sub.text}"${at}: permission needed (${err.message})`,
          [`Replay's model was not allowed to run ${err.message}. Allow it, or do it yourself?`],
        );
      }
    }
    if (call.name !== 'computer_use') return invalid(`unknown tool "${call.name}"`, call.name);
    this.modelSteps++;
    const tAct = performance.now();
    const { observation: _o, memory: _m, ...action } = args;
    // The model types a sensitive parameter by its name; replay types the value, which the model never saw.
    const byName =
      action.action === 'type' && typeof action.text === 'string'
        ? this.secrets.typedByName(action.text)
        : undefined;
    const typed = byName?.names ?? [];
    const toDo = byName && typed.length ? { ...action, text: byName.text } : action;
    try {
      if (typed.length) await this.locator.typedSecret(undefined); // masked before it is typed (live view)
      const r = await desktopAction(this.toolCtx, toDo);
      if (typed.length) {
        await this.locator.typedSecret(undefined);
        this.secretNotes.push(
          `Step ${this.n}: the model typed the sensitive parameter${typed.length > 1 ? 's' : ''} ${typed.map((k) => `\`${k}\``).join(', ')} by name; its value was typed by replay and never sent to the model.`,
        );
      }
      const actMs = performance.now() - tAct;
      const file = await this.screenshot();
      record(
        'desktop_action',
        String(action.action),
        action,
        { result: r.output, ...(r.screen ? { screen: r.screen } : {}), screenshot: file },
        actMs,
      );
      history.push({ step: this.n, action: `${String(action.action)} by the model`, observation: note });
      return { kind: 'acted' };
    } catch (err) {
      if (this.signal.aborted) return this.end('failed', 'cancelled');
      if (err instanceof InvalidToolCall) return invalid(err.message, 'computer_use');
      if (!(err instanceof ActionFailed)) throw err;
      record('desktop_action', String(action.action), action, { error: err.message });
      return this.end('needs-input', `stopped in subtask "${sub.text}"${at}: ${err.message}`, [
        `The desktop action in "${sub.text}"${at} failed (${err.message}); desktop actions are not retried. How should replay proceed?`,
      ]);
    }
  }
}
