/**
 * The `judge` runner: picks one of a card's attempts (host/src/core/attempts.ts). The supervisor copied
 * each attempt's end, step report and final screenshot into this run's artifacts folder
 * (`attempts/<n>/`, supervisor/src/node/judge-input.ts); one model request, through the run's proxy
 * route like the flow's own model, compares them against the task (the card) and answers which attempt
 * won, with its reasons. The verdict goes to `artifacts/verdict.json` and the run's metrics
 * (`judgeWinner`: the attempt's number, 0 for none; `judgeReasons`). Prompt text: the flow's prompt
 * folder's `judge.md`, none in code.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ARTIFACTS_DIR, type Metrics } from '@runboard/supervisor/protocol';
import { defaultApi, describeModelError, ModelClient, type Image } from '../models/client.ts';
import { fill } from '../models/prompt.ts';
import type { Runner, RunnerContext, RunnerOutcome } from './runner.ts';

const REQUEST_TIMEOUT_MS = 300_000;
const MAX_OUTPUT_TOKENS = 2048;
/** The most of one attempt's step report the judge is shown (its end matters most: the tail is kept). */
const REPORT_CHARS = 12_000;

export interface Verdict {
  /** The winning attempt's number (from 1), or null when none succeeded. */
  winner: number | null;
  reasons: string;
}

/** The model's answer as a verdict: the first JSON object in it, checked against the attempts' count. */
export function parseVerdict(text: string, count: number): Verdict {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end < start)
    throw new Error(`the judge's answer holds no JSON object: ${text.slice(0, 200)}`);
  const o = JSON.parse(text.slice(start, end + 1)) as { winner?: unknown; reasons?: unknown };
  const w = o.winner;
  if (w !== null && !(typeof w === 'number' && Number.isInteger(w) && w >= 1 && w <= count))
    throw new Error(
      `the judge's winner must be an attempt's number (1 to ${count}) or null; it said ${JSON.stringify(w)}`,
    );
  return { winner: w, reasons: typeof o.reasons === 'string' ? o.reasons : '' };
}

export class JudgeRunner implements Runner {
  private readonly abort = new AbortController();

  cancel(): void {
    this.abort.abort();
  }

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const metrics: Metrics = {};
    const fail = (summary: string): RunnerOutcome => ({ status: 'failed', exitCode: null, summary, metrics });
    if (!spec.model) return fail(`flow "${spec.flow.name}" has no provider: the judge asks the flow's model`);
    if (!spec.flow.prompt) return fail(`flow "${spec.flow.name}" has no prompt folder (with judge.md)`);
    const artifacts = spec.artifactsDir ?? path.join(ctx.env.TMPDIR ?? '/tmp', ARTIFACTS_DIR);
    let template: string;
    let task: string;
    try {
      template = readFileSync(path.join(spec.flow.prompt, 'judge.md'), 'utf8');
      task = readFileSync(spec.card.path, 'utf8');
    } catch (err) {
      return fail(`cannot read the judge's prompt or the card: ${(err as Error).message}`);
    }
    const dir = path.join(artifacts, 'attempts');
    const numbers = existsSync(dir)
      ? readdirSync(dir)
          .map(Number)
          .filter((n) => Number.isInteger(n) && n > 0)
          .sort((a, b) => a - b)
      : [];
    if (!numbers.length) return fail('no attempts to judge (the supervisor gathers them before the run)');
    const images: Image[] = [];
    const parts: string[] = [];
    for (const n of numbers) {
      const at = (f: string): string => path.join(dir, String(n), f);
      const end = existsSync(at('end.json'))
        ? (JSON.parse(readFileSync(at('end.json'), 'utf8')) as {
            status: string;
            summary: string;
            detail?: string;
          })
        : { status: 'unknown', summary: '' };
      const report = existsSync(at('report.md')) ? readFileSync(at('report.md'), 'utf8') : '(no step report)';
      parts.push(
        `## Attempt ${n}\nEnded: ${end.status}${end.summary ? ` — ${end.summary}` : ''}${end.detail ? ` (${end.detail})` : ''}\n\n` +
          `Step report:\n${report.length > REPORT_CHARS ? `…${report.slice(-REPORT_CHARS)}` : report}\n`,
      );
      const shot = ['final.jpg', 'final.png'].map(at).find((f) => existsSync(f));
      if (shot)
        images.push({
          data: readFileSync(shot),
          mime: shot.endsWith('.png') ? 'image/png' : 'image/jpeg',
          caption: `Attempt ${n}: its final screenshot`,
        });
    }
    const provider = spec.model.provider;
    const api = defaultApi(provider);
    const model = spec.model.model ?? 'default';
    Object.assign(metrics, { api, model, attempts: numbers.length, screenshots: images.length });
    ctx.progress(0.5, `asking ${provider} (${model}) to judge ${numbers.length} attempts`);
    const client = new ModelClient(api, spec.model, REQUEST_TIMEOUT_MS);
    let verdict: Verdict;
    try {
      const r = await client.call(
        {
          prompt: fill(template, { COUNT: String(numbers.length), TASK: task }),
          images,
          after: parts.join('\n'),
        },
        {
          model,
          maxOutputTokens: MAX_OUTPUT_TOKENS,
          timeoutMs: REQUEST_TIMEOUT_MS,
          signal: this.abort.signal,
        },
      );
      Object.assign(metrics, {
        inputTokens: r.usage.input,
        outputTokens: r.usage.output,
        requestBytes: r.requestBytes,
      });
      writeFileSync(path.join(artifacts, 'judge-answer.txt'), r.text);
      verdict = parseVerdict(r.text, numbers.length);
    } catch (err) {
      if (this.abort.signal.aborted) return fail('cancelled');
      return fail(
        err instanceof SyntaxError || /judge/.test((err as Error).message)
          ? (err as Error).message
          : describeModelError(err, provider),
      );
    }
    writeFileSync(path.join(artifacts, 'verdict.json'), JSON.stringify(verdict));
    Object.assign(metrics, {
      judgeWinner: verdict.winner ?? 0,
      judgeReasons: verdict.reasons.slice(0, 4000),
    });
    return {
      status: 'succeeded',
      exitCode: 0,
      summary: verdict.winner
        ? `attempt ${verdict.winner} won: ${verdict.reasons}`
        : `no attempt succeeded: ${verdict.reasons}`,
      metrics,
    };
  }
}
