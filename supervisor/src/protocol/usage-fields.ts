/**
 * The usage fields of a model answer in each wire format (OpenAI Responses and Chat Completions,
 * Anthropic Messages, Gemini), read the same by the supervisor's model proxy as answers pass
 * (node/proxy-usage.ts) and by the board when it shows a run's debug log. Pure.
 */
/** One answer's usage, as far as it has been read. */
export interface AnswerUsage {
  model?: string;
  input?: number;
  output?: number;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
const sum = (...v: (number | undefined)[]): number | undefined =>
  v.some((x) => x !== undefined) ? v.reduce<number>((a, x) => a + (x ?? 0), 0) : undefined;

/** Folds one parsed answer (or streamed event) into `u`. */
export function foldUsage(u: AnswerUsage, data: unknown): void {
  const o = obj(data);
  if (!o) return;
  const inner = obj(o.response) ?? obj(o.message); // Responses stream events; Anthropic's message_start
  const model = o.model ?? inner?.model ?? o.modelVersion;
  if (typeof model === 'string' && model) u.model = model;
  const gm = obj(o.usageMetadata);
  if (gm) {
    const input = num(gm.promptTokenCount);
    const output = sum(num(gm.candidatesTokenCount), num(gm.thoughtsTokenCount));
    if (input !== undefined) u.input = input;
    if (output !== undefined) u.output = output;
    return;
  }
  const usage = obj(o.usage) ?? obj(inner?.usage);
  if (!usage) return;
  const input =
    num(usage.prompt_tokens) ??
    sum(num(usage.input_tokens), num(usage.cache_read_input_tokens), num(usage.cache_creation_input_tokens));
  const output = num(usage.completion_tokens) ?? num(usage.output_tokens);
  if (input !== undefined) u.input = input;
  if (output !== undefined) u.output = output;
}
