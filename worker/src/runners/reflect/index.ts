/**
 * The `reflect` runner (seed 002's Reflect): a recording (recordings/<id>/: manifest.jsonl and the
 * pre-action screenshots the recorder wrote) becomes a parameterised workflow. Pass A asks the model
 * about each step with its screenshots before and after; pass B about all of them at once; the result
 * is validated with the one workflow schema and written to the run's artifacts as schema.json, which
 * the host installs in the card's folder when the run succeeds (a run never writes the project's
 * cards). A model answer that does not validate is asked again once, with what was wrong; a second
 * invalid answer ends the run needs-input, saying what was wrong. docs/workflows.md.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  ARTIFACTS_DIR,
  WORKFLOW_FILE,
  serializeWorkflow,
  type Workflow,
} from '@runboard/supervisor/protocol';
import type { Runner, RunnerContext, RunnerOutcome } from '../runner.ts';
import {
  defaultApi,
  describeModelError,
  ModelClient,
  type CallOptions,
  type Image,
} from '../../models/client.ts';
import { fill } from '../../models/prompt.ts';
import { askChecked, InvalidAnswer } from './model.ts';
import {
  checkPassA,
  checkPassB,
  describeAction,
  parseManifest,
  stepInputs,
  stepSummaries,
  type PassAAnswer,
  type Reflected,
  type StepInput,
} from './passes.ts';

const DEFAULTS = { maxOutputTokens: 4096, requestTimeoutMs: 180_000, concurrency: 3 };

interface PassPrompt {
  template: string;
  model?: string;
  maxOutputTokens?: number;
  /** The follow-up after an invalid answer ({{PROBLEMS}}). */
  fix: string;
  captions: { pre: string; post: string; none: string };
}

function loadPass(folder: string): PassPrompt {
  const read = (f: string): string => {
    try {
      return readFileSync(path.join(folder, f), 'utf8');
    } catch (err) {
      throw new Error(`cannot read the reflect prompt ${path.join(folder, f)}: ${(err as Error).message}`, {
        cause: err,
      });
    }
  };
  const template = read('prompt.md');
  const c = parseYaml(read('config.yaml')) as {
    version?: number;
    llm?: { model?: string; max_output_tokens?: number };
    fix_prompt?: string;
    captions?: Partial<PassPrompt['captions']>;
  } | null;
  if (!c || typeof c.version !== 'number' || typeof c.fix_prompt !== 'string')
    throw new Error(`${path.join(folder, 'config.yaml')} needs at least \`version\` and \`fix_prompt\``);
  return {
    template,
    ...(c.llm?.model ? { model: c.llm.model } : {}),
    ...(c.llm?.max_output_tokens ? { maxOutputTokens: c.llm.max_output_tokens } : {}),
    fix: c.fix_prompt,
    captions: {
      pre: c.captions?.pre ?? 'PRE: the screen right before the action.',
      post: c.captions?.post ?? 'POST: the screen right after the action.',
      none: c.captions?.none ?? 'There is no POST screenshot: this was the last step of the recording.',
    },
  };
}

const FRONT = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** The card's front matter and its task text (the body without its `## Questions`). */
function readCard(file: string): { front: Record<string, unknown>; task: string } {
  const text = readFileSync(file, 'utf8');
  const m = FRONT.exec(text);
  const front = (m ? (parseYaml(m[1]!) as Record<string, unknown> | null) : null) ?? {};
  const body = (m ? m[2]! : text).split(/^## Questions\s*$/m)[0]!;
  const task = body.replace(/^# Task\s*$/m, '').trim();
  return { front, task };
}

const RECORDING_ID = /^rec-\d{8}-\d{6}-[0-9a-f]{6}$/;

/** Runs `fn` over `items`, `n` at a time, keeping their order. */
async function pool<T, R>(items: T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const k = next++;
      out[k] = await fn(items[k]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, worker));
  return out;
}

export class ReflectRunner implements Runner {
  private readonly abort = new AbortController();

  cancel(): void {
    this.abort.abort();
  }

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const metrics = { modelCalls: 0, retries: 0, inputTokens: 0, outputTokens: 0, steps: 0 };
    const fail = (summary: string): RunnerOutcome => ({ status: 'failed', exitCode: null, summary, metrics });
    if (!spec.model)
      return fail(
        `flow "${spec.flow.name}" has no provider: a reflect run needs \`provider:\` (openai, anthropic, or an OpenAI-compatible server)`,
      );
    if (!spec.flow.prompt)
      return fail(
        `flow "${spec.flow.name}" has no prompt folder: set \`prompt:\` to the folder holding reflect_pass_a/ and reflect_pass_b/ (e.g. ../prompts)`,
      );
    const project = spec.card.project ?? path.dirname(path.dirname(spec.card.path));
    let passA: PassPrompt;
    let passB: PassPrompt;
    let card: { front: Record<string, unknown>; task: string };
    let steps: StepInput[];
    let recDir: string;
    try {
      passA = loadPass(path.join(spec.flow.prompt, 'reflect_pass_a'));
      passB = loadPass(path.join(spec.flow.prompt, 'reflect_pass_b'));
      card = readCard(spec.card.path);
      const rec = card.front.recording;
      if (typeof rec !== 'string' || !rec.trim())
        return fail(
          "the card names no recording: add `recording: rec-…` (a folder of the project's recordings/, or a path) to its front matter",
        );
      recDir = RECORDING_ID.test(rec) ? path.join(project, 'recordings', rec) : path.resolve(project, rec);
      const manifest = path.join(recDir, 'manifest.jsonl');
      if (!existsSync(manifest))
        return fail(
          `recording "${rec}" has no manifest.jsonl (looked in ${recDir}): record it again or fix the name`,
        );
      steps = stepInputs(path.basename(recDir), parseManifest(readFileSync(manifest, 'utf8')));
    } catch (err) {
      return fail((err as Error).message);
    }
    if (steps.length === 0) return fail(`the recording in ${recDir} has no steps: nothing to reflect on`);
    metrics.steps = steps.length;

    const client = new ModelClient(defaultApi(spec.model.provider), spec.model, DEFAULTS.requestTimeoutMs);
    const options = (p: PassPrompt): CallOptions => ({
      model: spec.model!.model ?? p.model ?? 'gpt-5-mini',
      maxOutputTokens: p.maxOutputTokens ?? DEFAULTS.maxOutputTokens,
      timeoutMs: DEFAULTS.requestTimeoutMs,
      signal: this.abort.signal,
    });
    const image = (rel: string, caption: string): Image => ({
      mime: /\.jpe?g$/i.test(rel) ? 'image/jpeg' : 'image/png',
      data: readFileSync(path.join(recDir, rel)),
      caption,
    });
    const count = (a: {
      usage: { input: number; output: number };
      calls: number;
      retried: boolean;
    }): void => {
      metrics.modelCalls += a.calls;
      metrics.retries += a.retried ? 1 : 0;
      metrics.inputTokens += a.usage.input;
      metrics.outputTokens += a.usage.output;
    };
    const taskName = String(card.front.title ?? spec.card.title ?? 'Recorded task');
    const artifacts = spec.artifactsDir;
    if (!artifacts) return fail('the supervisor gave this run no artifacts folder to write the workflow to');

    try {
      // Pass A: one question per step, a few at a time.
      let done = 0;
      ctx.progress(0, `pass A: ${steps.length} steps`);
      const cards: PassAAnswer[] = await pool(steps, DEFAULTS.concurrency, async (s) => {
        const images = [image(s.pre, passA.captions.pre)];
        if (s.post) images.push(image(s.post, passA.captions.post));
        const text = fill(passA.template, {
          TASK_NAME: taskName,
          TASK_DESCRIPTION: card.task || '(none given)',
          STEP: String(s.i + 1),
          STEPS: String(steps.length),
          ACTION_JSON: JSON.stringify(describeAction(s)),
          DETAILS: s.recorded.details ?? '(none)',
          POST_NOTE: s.post ? '' : passA.captions.none,
        });
        const a = await askChecked(
          client,
          options(passA),
          `pass A, step ${s.i + 1} (${s.actionType})`,
          { prompt: text, images },
          checkPassA(s),
          (answer, problems) => fill(passA.fix, { ANSWER: answer, PROBLEMS: problems }),
        );
        count(a);
        if (a.retried) ctx.log('warn', `pass A, step ${s.i + 1}: the first answer was invalid; asked again`);
        ctx.progress((++done / steps.length) * 0.8, `pass A: step ${done} of ${steps.length}`);
        return a.value;
      });
      writeFileSync(path.join(artifacts, 'pass_a.json'), JSON.stringify(cards, null, 2) + '\n');

      // Pass B: all steps at once → subtasks, parameters, templated values.
      ctx.progress(0.85, 'pass B: subtasks and parameters');
      const reflected: Reflected = { taskName, taskDescription: card.task, steps, cards };
      const text = fill(passB.template, {
        TASK_NAME: taskName,
        TASK_DESCRIPTION: card.task || '(none given)',
        STEPS_JSON: JSON.stringify(stepSummaries(reflected), null, 2),
        STEP_COUNT: String(steps.length),
      });
      const b = await askChecked<Workflow>(
        client,
        options(passB),
        'pass B',
        { prompt: text },
        checkPassB(reflected),
        (answer, problems) => fill(passB.fix, { ANSWER: answer, PROBLEMS: problems }),
      );
      count(b);
      if (b.retried) ctx.log('warn', 'pass B: the first answer was invalid; asked again');
      writeFileSync(path.join(artifacts, WORKFLOW_FILE), serializeWorkflow(b.value));
      const w = b.value;
      const summary = `workflow "${w.task_name}": ${w.plan.subtasks.length} subtasks, ${steps.length} steps, ${w.task_params.length} parameters (${w.task_params.map((p) => p.name).join(', ') || 'none'})`;
      ctx.log('info', summary, { kind: 'reflect-workflow', file: `${ARTIFACTS_DIR}/${WORKFLOW_FILE}` });
      ctx.progress(1, summary);
      return { status: 'succeeded', exitCode: 0, summary, metrics };
    } catch (err) {
      if (err instanceof InvalidAnswer) {
        ctx.log('error', err.message, { kind: 'reflect-invalid', answer: err.answer.slice(0, 8000) });
        const summary = `${err.what}: the model's answer did not validate, even when asked again with what was wrong`;
        return {
          status: 'needs-input',
          exitCode: null,
          summary,
          metrics,
          questions: [
            `Reflect could not make a valid workflow (${err.what}). What was wrong with the model's second answer:\n${err.problems
              .slice(0, 20)
              .map((p) => `  - ${p}`)
              .join(
                '\n',
              )}\nTry another model (the flow's \`model:\`), or add details to the card's task, then queue it again.`,
          ],
        };
      }
      if (this.abort.signal.aborted) return fail('cancelled');
      return fail(`reflect failed: ${describeModelError(err, spec.model.provider)}`);
    }
  }
}
