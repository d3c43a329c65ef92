/**
 * One question to a vision model, answered with one JSON object: a prompt with images in, text out,
 * through the supervisor's proxy (the SDK's key is this run's proxy token), in any of the three wire
 * formats: OpenAI Responses, Chat Completions (any OpenAI-compatible server), Anthropic Messages.
 * A follow-up turn (the model's answer and what was wrong with it) makes the retry a conversation.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

export type Api = 'responses' | 'chat' | 'messages';

export interface ModelOptions {
  api: Api;
  baseUrl: string;
  token: string;
  model: string;
  maxOutputTokens: number;
  timeoutMs: number;
}

export interface Image {
  /** e.g. image/png */
  mime: string;
  data: Buffer;
  /** Said before the image (e.g. "PRE: the screen before the action"). */
  caption: string;
}

/** A user turn (text, then its images) or the model's earlier answer. */
export type Turn = { role: 'user'; text: string; images?: Image[] } | { role: 'assistant'; text: string };

export interface Answer {
  text: string;
  usage: { input: number; output: number };
}

export interface Model {
  ask(turns: Turn[], signal: AbortSignal): Promise<Answer>;
}

const b64 = (i: Image): string => i.data.toString('base64');
const dataUrl = (i: Image): string => `data:${i.mime};base64,${b64(i)}`;

export function openModel(o: ModelOptions): Model {
  if (o.api === 'messages') {
    const client = new Anthropic({
      apiKey: o.token,
      baseURL: o.baseUrl,
      maxRetries: 2,
      timeout: o.timeoutMs,
    });
    return {
      async ask(turns, signal) {
        const messages: Anthropic.MessageParam[] = turns.map((t) =>
          t.role === 'assistant'
            ? { role: 'assistant', content: t.text }
            : {
                role: 'user',
                content: [
                  { type: 'text', text: t.text },
                  ...(t.images ?? []).flatMap((i): Anthropic.ContentBlockParam[] => [
                    { type: 'text', text: i.caption },
                    {
                      type: 'image',
                      source: {
                        type: 'base64',
                        media_type: i.mime as 'image/png' | 'image/jpeg',
                        data: b64(i),
                      },
                    },
                  ]),
                ],
              },
        );
        const r = await client.messages.create(
          { model: o.model, max_tokens: o.maxOutputTokens, messages },
          { signal },
        );
        const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
        return { text, usage: { input: r.usage.input_tokens, output: r.usage.output_tokens } };
      },
    };
  }
  const client = new OpenAI({ apiKey: o.token, baseURL: o.baseUrl, maxRetries: 2, timeout: o.timeoutMs });
  if (o.api === 'responses')
    return {
      async ask(turns, signal) {
        const input: OpenAI.Responses.ResponseInputItem[] = turns.map((t) =>
          t.role === 'assistant'
            ? { role: 'assistant', content: t.text }
            : {
                role: 'user',
                content: [
                  { type: 'input_text', text: t.text },
                  ...(t.images ?? []).flatMap((i): OpenAI.Responses.ResponseInputContent[] => [
                    { type: 'input_text', text: i.caption },
                    { type: 'input_image', image_url: dataUrl(i), detail: 'auto' },
                  ]),
                ],
              },
        );
        const r = await client.responses.create(
          { model: o.model, input, store: false, max_output_tokens: o.maxOutputTokens },
          { signal },
        );
        const text = r.output
          .map((item) =>
            item.type === 'message'
              ? item.content.map((c) => (c.type === 'output_text' ? c.text : '')).join('')
              : '',
          )
          .join('');
        return { text, usage: { input: r.usage?.input_tokens ?? 0, output: r.usage?.output_tokens ?? 0 } };
      },
    };
  return {
    async ask(turns, signal) {
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = turns.map((t) =>
        t.role === 'assistant'
          ? { role: 'assistant', content: t.text }
          : {
              role: 'user',
              content: [
                { type: 'text', text: t.text },
                ...(t.images ?? []).flatMap((i): OpenAI.Chat.ChatCompletionContentPart[] => [
                  { type: 'text', text: i.caption },
                  { type: 'image_url', image_url: { url: dataUrl(i) } },
                ]),
              ],
            },
      );
      const r = await client.chat.completions.create(
        { model: o.model, messages, max_completion_tokens: o.maxOutputTokens },
        { signal },
      );
      return {
        text: r.choices[0]?.message.content ?? '',
        usage: { input: r.usage?.prompt_tokens ?? 0, output: r.usage?.completion_tokens ?? 0 },
      };
    },
  };
}

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
 * more with the problems listed; a second invalid answer throws InvalidAnswer.
 */
export async function askChecked<T>(
  model: Model,
  what: string,
  first: Extract<Turn, { role: 'user' }>,
  check: (json: unknown) => { ok: true; value: T } | { ok: false; problems: string[] },
  fixPrompt: (problems: string) => string,
  signal: AbortSignal,
): Promise<Asked<T>> {
  const turns: Turn[] = [first];
  const usage = { input: 0, output: 0 };
  for (let attempt = 0; ; attempt++) {
    const a = await model.ask(turns, signal);
    usage.input += a.usage.input;
    usage.output += a.usage.output;
    const json = jsonIn(a.text);
    const r = json.ok ? check(json.value) : { ok: false as const, problems: [json.error] };
    if (r.ok) return { value: r.value, usage, calls: attempt + 1, retried: attempt > 0 };
    if (attempt === 1) throw new InvalidAnswer(what, r.problems, a.text);
    turns.push(
      { role: 'assistant', text: a.text },
      { role: 'user', text: fixPrompt(r.problems.map((p) => `- ${p}`).join('\n')) },
    );
  }
}
