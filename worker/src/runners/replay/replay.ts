/**
 * The replay engine: a workflow's subtasks in order, each step by its accessibility locator first
 * (no model), the model (predict_action) only for a step whose element is not there as recorded or
 * whose screen drifted, then back to the locators for the next step. A subtask with an outcome check
 * is done only when the check holds on screen: a model's `done` does not make it so. Every action, by
 * either, is a `cu-step` event with its screenshot (the inspector's filmstrip) and a line of report.md.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { desktop, type Rect, type WindowInfo } from '@runboard/native';
import type { ClarifyingQuestion, CuStep, OutcomeCheck } from '@runboard/supervisor/protocol';
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
import { checkHolds, findWindow, focusedField, locate, onSecretFields } from './locate.ts';
import {
  fillTemplates,
  sensitiveValues,
  shown,
  type Locator,
  type Plan,
  type PlanStep,
  type PlanSubtask,
  type Values,
} from './plan.ts';
import { predict, userQuery, type HistoryEntry, type PredictTool } from './predict.ts';
import { renderReplayReport, type ReplayRecord } from './report.ts';

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

const centre = (b: Rect): [number, number] => [Math.round(b[0] + b[2] / 2), Math.round(b[1] + b[3] / 2)];
const round = (n: number): number => Math.round(n * 10) / 10;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Keys that move the focus to the next or previous field (as the recorder names them). */
const TAB = /(^|\+)Tab$/;
/** How long a locator may take to show what the last action did before the step goes to the model. */
const LOCATOR_SETTLE_MS = 3000;

/** A recorded key name (`press Enter`, `ctrl+ArrowUp`) as the addon's key combination. */
export function keyCombo(key: string): string {
  return key
    .split('+')
    .map((k) => k.replace(/^Arrow/, '').toLowerCase())
    .join('+');
}

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
  /** Sensitive parameters' values by name: typed, never shown, sent, logged or left on a screenshot. */
  private readonly secrets: Values;
  /** What the model is told of the parameters: a sensitive one as its own `{name}`, which it may type. */
  private readonly modelValues: Values;

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
    this.secrets = sensitiveValues(plan, values);
    this.modelValues = {
      ...values,
      ...Object.fromEntries(Object.keys(this.secrets).map((k) => [k, `{${k}}`])),
    };
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
            names: Object.keys(this.secrets),
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
      values: this.modelParams(),
      memory: this.memory,
      history,
      reference: steps,
      extracts,
      ask: this.hide(ask),
    });
  }

  /** The parameters as the model's query lists them: a sensitive one by its name, to type as `{name}`. */
  private modelParams(): Values {
    return Object.fromEntries(
      Object.entries(this.modelValues).map(([k, v]) => [
        k,
        this.secrets[k] !== undefined
          ? `(sensitive: never shown to you; to type it, type exactly "{${k}}" and replay types the value)`
          : v,
      ]),
    );
  }

  /** A text for the model or the card with every sensitive value replaced by its `{name}`. */
  private hide(text: string): string {
    let out = text;
    for (const [k, v] of Object.entries(this.secrets).sort((a, b) => b[1].length - a[1].length))
      if (v) out = out.split(v).join(`{${k}}`);
    return out;
  }

  /** The names of the sensitive values in `text` (typed, or to be). */
  private secretsIn(text: string): string[] {
    return Object.entries(this.secrets)
      .filter(([, v]) => v && text.includes(v))
      .map(([k]) => k);
  }

  /**
   * A sensitive value was just typed into the focused field of `win` (or `field`): that field is masked
   * in every later screenshot, the filmstrip's and the model's (the field may show what it holds).
   */
  private async typedSecret(win: WindowInfo | undefined, field?: Rect): Promise<void> {
    if (field) this.o.screen.mask(field);
    const w = win ?? (await findWindow(undefined).then((x) => (typeof x === 'string' ? undefined : x)));
    const now = w ? await focusedField(w) : undefined;
    if (now) this.o.screen.mask(now.bounds);
  }

  private async subtask(sub: PlanSubtask): Promise<Ended | null> {
    const values = { ...this.values, ...this.extracts };
    // The subtask as the locators and checks use it: parameters and upstream extracts filled in.
    // What the model is shown has a sensitive parameter's value withheld (it is never sent out): its
    // `{name}`, which the model may type (modelTurn types the value in its place).
    const forModel = fillTemplates(sub, { ...this.modelValues, ...this.extracts });
    sub = fillTemplates(sub, values);
    const steps = sub.steps;
    const history: HistoryEntry[] = [];
    let turns = 0;
    const tooMany = (): Ended =>
      this.end('needs-input', `stopped in subtask "${sub.text}": ${turns} model turns did not get it done`, [
        `Replay could not finish the subtask "${sub.text}" (expected: ${sub.expectedOutcome || 'not stated'}) in ${turns} model turns. Has the app changed? Edit the workflow, or say how it should be done.`,
      ]);
    // One model turn, within the subtask's allowance of them.
    const ask = (step: PlanStep | undefined, what: string): Promise<Turn> => {
      if (turns >= this.o.maxModelTurnsPerSubtask) return Promise.resolve(tooMany());
      turns++;
      return this.modelTurn(forModel, forModel.steps, history, step, what);
    };
    for (let i = 0; i < steps.length;) {
      const stop = this.mayGoOn();
      if (stop) return stop;
      const step = steps[i]!;
      if (step.action.type === 'extract') {
        const name = step.action.variable || `extract_${step.n}`;
        const kept = (value: string, by: 'locator' | 'model'): void => {
          this.extracts[name] = value;
          this.ctx.log('info', `extract ${name} = ${JSON.stringify(value)} (by ${by})`, {
            kind: 'replay-extract',
            name,
            value,
            by,
          });
        };
        // The element the locator names holds the value: read it, as the person would look at it.
        const t0 = performance.now();
        const read = await this.readByLocator(step);
        if (typeof read !== 'string') {
          this.locatorSteps++;
          this.tokensSaved += this.estimateTokens(this.query(forModel, forModel.steps, history, ''));
          await this.afterAction(step, sub, 'locator', performance.now() - t0, {
            ok: true,
            value: read.value,
          });
          kept(read.value, 'locator');
          history.push({ step: step.n, action: 'extract by locator', observation: step.intent });
          i++;
          continue;
        }
        const r = await ask(
          step,
          `Step ${step.n} is an extract (replay could not read it by itself: ${read}): read "${step.action.query}" off the screen and call done with it in \`value\`${step.action.candidates?.length ? ` (it is likely one of: ${step.action.candidates.join(', ')})` : ''}.`,
        );
        if ('ended' in r) return r;
        if (r.kind === 'done') {
          kept(r.value, 'model');
          i++;
        }
        continue;
      }
      const t0 = performance.now();
      const det = await this.byLocator(step);
      if (det === true) {
        this.locatorSteps++;
        this.tokensSaved += this.estimateTokens(this.query(forModel, forModel.steps, history, ''));
        await this.afterAction(step, sub, 'locator', performance.now() - t0);
        history.push({ step: step.n, action: `${step.action.type} by locator`, observation: step.intent });
        i++;
        continue;
      }
      const r = await ask(
        step,
        `Replay could not do step ${step.n} by itself: ${det}. Do what step ${step.n} does on the screen as it is now (one action), or call done if the subtask's expected outcome is already there.`,
      );
      if ('ended' in r) return r;
      if (r.kind === 'done') break;
      if (r.kind === 'read') continue;
      i++;
    }
    if (!sub.check) return null;
    if (await this.waitFor(sub.check)) return null;
    let falseDone = 0;
    // In words for the model and the card's question: a sensitive value withheld, as in the query.
    const want = describeCheck(forModel.check ?? sub.check);
    for (;;) {
      const stop = this.mayGoOn();
      if (stop) return stop;
      const r = await ask(
        undefined,
        `Every step of this subtask ran, but its expected outcome is not on screen (${want}). Act to reach it (one action), call done once it is there, or stuck if it cannot be reached.`,
      );
      if ('ended' in r) return r;
      if (await this.waitFor(sub.check)) return null;
      if (r.kind === 'done') {
        falseDone++;
        history.push({
          step: this.n,
          action: 'done',
          observation: `the expected outcome is still not on screen (${want})`,
        });
        if (falseDone >= 2)
          return this.end(
            'needs-input',
            `subtask "${sub.text}": its expected outcome never appeared (${want})`,
            [
              `Replay finished the steps of "${sub.text}" but its expected outcome never appeared (${want}); the model said it was done, the screen says otherwise. What should happen here?`,
            ],
          );
      }
    }
  }

  /** A check that may need a moment to show (the app redraws after the action). */
  private async waitFor(check: OutcomeCheck): Promise<boolean> {
    const deadline = performance.now() + this.o.settleMs;
    for (;;) {
      if (await checkHolds(check)) return true;
      if (performance.now() > deadline || this.signal.aborted) return false;
      await sleep(50);
    }
  }

  private estimateTokens(query: string): number {
    // about 4 characters a token; an image about (w * h) / 750 tokens; a short tool call back
    return Math.ceil(query.length / 4) + Math.ceil((this.shot.width * this.shot.height) / 750) + 60;
  }

  /**
   * An extract step's value read off its locator's element (a field's text, a label's text), or why
   * not. Where the element is does not matter here, only that it is the one the locator names.
   */
  private async readByLocator(step: PlanStep): Promise<{ value: string } | string> {
    if (!step.element) return 'the step has no locator to read the value from';
    const l = await locate(step.element, step.window, { anywhere: true });
    if (!l.ok) return l.drift;
    const e = l.element;
    if (e.secret) return `${e.role} "${e.name}" is a password field: its value is never read`;
    const value = e.value ?? e.name;
    if (!value.trim()) return `${e.role} "${e.name}" shows no text`;
    return { value };
  }

  /** The step by its recorded element, or why not (drift, in words). */
  private async byLocator(step: PlanStep): Promise<true | string> {
    const a = step.action;
    if (a.type === 'click' || a.type === 'scroll' || a.type === 'drag') {
      if (!step.element) return 'the step has no locator (none was recorded, or it was removed)';
      const element = step.element;
      const l = await this.settled(
        () => locate(element, step.window),
        (x) => x.ok,
      );
      if (!l.ok) return l.drift;
      if (!l.window.focused) await desktop.focus({ windowId: l.window.id });
      const [x, y] = centre(l.element.bounds);
      if (a.type === 'click') await desktop.click(x, y, { button: a.button, count: a.count ?? 1 });
      else if (a.type === 'scroll') await desktop.scroll(x, y, a.dx, a.dy);
      else
        await desktop.drag([x, y], [x + a.to[0] - a.from[0], y + a.to[1] - a.from[1]], { button: a.button });
      return true;
    }
    if (a.type === 'type' || a.type === 'press') {
      if (a.type === 'type' && !('text' in a && a.text))
        return 'the workflow does not say what to type here (no value, or a secret)';
      let field;
      if (step.focus) {
        const focus = step.focus;
        // A Tab press may find the focus still on the field before (tabTo below): no wait for it then.
        const tab = a.type === 'press' && TAB.test(a.key);
        const l = await this.settled(
          () => locate(focus, step.window),
          (x) => x.ok && (tab || x.element.focused),
        );
        if (!l.ok) return l.drift;
        if (!l.window.focused) await desktop.focus({ windowId: l.window.id });
        if (!l.element.focused) {
          // A Tab moves the focus, and the recorder may have read the focus after it moved: the
          // recorded field is then where the key leads, checked once it is pressed.
          if (a.type === 'press' && TAB.test(a.key)) return this.tabTo(a.key, step.focus, l.window);
          return `${step.focus.role} "${step.focus.name}" does not have the keyboard focus`;
        }
        field = l;
      } else {
        // keys sent to whatever has the focus, with nothing recorded to check it against: not blind
        if (!step.window) return 'the step has no locator for the field its keys go to';
        const w = await findWindow(step.window);
        if (typeof w === 'string') return w;
        if (!w.focused) await desktop.focus({ windowId: w.id });
      }
      if (a.type === 'press') {
        await desktop.key(keyCombo(a.key));
        return true;
      }
      const before = field?.element.value ?? '';
      await desktop.type(a.text);
      if (this.secretsIn(a.text).length) await this.typedSecret(field?.window, field?.element.bounds);
      if (!field || field.element.secret) return true;
      // The field holds what was typed (the app took every key): read back, as the person would look.
      const deadline = performance.now() + this.o.settleMs;
      for (;;) {
        const now = (await focusedField(field.window))?.value;
        if (now !== undefined && now.includes(a.text)) return true;
        if (performance.now() > deadline)
          return this.hide(
            `typed "${a.text}" but ${step.focus!.role} "${step.focus!.name}" holds ${JSON.stringify(now ?? before)}`,
          );
        await sleep(30);
      }
    }
    return `replay has no locator action for "${a.type}"`;
  }

  /**
   * `look()` again until `good`, for at most LOCATOR_SETTLE_MS: what the last action started (a window
   * opening, the focus moving after a click) shows in the accessibility tree a moment later, later
   * still on a loaded machine, and a step is not sent to the model for that. Only looks, never acts.
   */
  private async settled<T>(look: () => Promise<T>, good: (t: T) => boolean): Promise<T> {
    const deadline = performance.now() + LOCATOR_SETTLE_MS;
    for (;;) {
      const t = await look();
      if (good(t) || performance.now() >= deadline) return t;
      await sleep(50);
    }
  }

  /** Presses a Tab key and checks that the focus lands on the field `to`; why not, when it does not. */
  private async tabTo(key: string, to: Locator, win: WindowInfo): Promise<true | string> {
    await desktop.key(keyCombo(key));
    const deadline = performance.now() + this.o.settleMs;
    for (;;) {
      const now = await focusedField(win);
      if (now?.role === to.role && now.name === to.name) return true;
      if (performance.now() > deadline)
        return `${key} was pressed, but the keyboard focus went to ${now ? `${now.role} "${now.name}"` : 'no field'}, not to ${to.role} "${to.name}"`;
      await sleep(30);
    }
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
      args: typeof a.text === 'string' ? { ...a, text: this.hide(a.text) } : a,
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
    const typed =
      action.action === 'type' && typeof action.text === 'string'
        ? Object.keys(this.secrets).filter((k) => (action.text as string).includes(`{${k}}`))
        : [];
    const toDo = typed.length
      ? {
          ...action,
          text: typed.reduce((t, k) => t.split(`{${k}}`).join(this.secrets[k]), action.text as string),
        }
      : action;
    try {
      const r = await desktopAction(this.toolCtx, toDo);
      if (typed.length) {
        await this.typedSecret(undefined);
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

function describeCheck(c: OutcomeCheck): string {
  return [
    c.role && `a ${c.role}`,
    c.name !== undefined && `named "${c.name}"`,
    c.value !== undefined && `showing "${c.value}"`,
  ]
    .filter(Boolean)
    .join(' ');
}
