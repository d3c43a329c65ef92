/**
 * Asking for one JSON object and checking it, with one retry: the request itself is the shared
 * model stack's one-shot call (worker/src/models/client.ts: text and images through the supervisor's proxy, any provider). The retry sends the
 * same request again with the model's first answer and what was wrong with it after the images.
 */
import type { CallInput, CallOptions, ModelClient } from '../../models/client.ts';

/**
 * The JSON object in a model's text: the whole text, or the first fenced block, or from the first `{`
 * to the last `}` (models wrap answers in prose or fences however they are asked).
 */
export function jsonIn(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  if (!text.includes('{')) return { ok: false, error: 'the answer holds no JSON object' };
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n\s*```/.exec(text);
  const candidates = [text.trim(), fenced?.[1]];
  const a = text.indexOf('{');
  const b = text.lastIndexOf('}');
  if (a >= 0 && b > a) candidates.push(text.slice(a, b + 1));
  let error = 'the answer holds no JSON object';
  for (const c of candidates) {
    if (!c) continue;
    try {
      const v: unknown = JSON.parse(c);
      if (v && typeof v === 'object' && !Array.isArray(v)) return { ok: true, value: v };
      error = 'the answer is JSON but not an object';
    } catch (e) {
      error = `the answer is not valid JSON (${(e as Error).message})`;
    }
  }
  return { ok: false, error };
}

/** A model's answer that did not validate twice: what was wrong the second time. */
export class InvalidAnswer extends Error {
  constructor(
    readonly what: string,
    readonly problems: string[],
    readonly answer: string,
  ) {
    super(`${what}: the model's answer was invalid twice:\n${problems.map((p) => `- ${p}`).join('\n')}`);
  }
}

export interface Asked<T> {
  value: T;
  usage: { input: number; output: number };
  calls: number;
  retried: boolean;
}

/**
 * Asks, checks the answer with `check` (problems, or the value), and when it does not pass asks once
 * more with its answer and the problems (`fixPrompt`); a second invalid answer throws InvalidAnswer.
 */
export async function askChecked<T>(
  client: ModelClient,
  options: CallOptions,
  what: string,
  first: CallInput,
  check: (json: unknown) => { ok: true; value: T } | { ok: false; problems: string[] },
  fixPrompt: (answer: string, problems: string) => string,
): Promise<Asked<T>> {
  const usage = { input: 0, output: 0 };
  let input = first;
  for (let attempt = 0; ; attempt++) {
    const a = await client.call(input, options);
    usage.input += a.usage.input;
    usage.output += a.usage.output;
    const json = jsonIn(a.text);
    const r = json.ok ? check(json.value) : { ok: false as const, problems: [json.error] };
    if (r.ok) return { value: r.value, usage, calls: attempt + 1, retried: attempt > 0 };
    if (attempt === 1) throw new InvalidAnswer(what, r.problems, a.text);
    const fix = fixPrompt(a.text.slice(0, 20_000), r.problems.map((p) => `- ${p}`).join('\n'));
    input = { ...first, after: first.after ? `${first.after}\n\n${fix}` : fix };
  }
}
