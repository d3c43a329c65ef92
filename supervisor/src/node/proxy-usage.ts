/**
 * The model proxy's accounting (model-proxy.ts): every answer that passes through it is read on the way
 * (never held back: the bytes go on to the run as they come) for the usage the provider reports, in each
 * wire format the proxy serves:
 *   OpenAI Responses   usage.{input,output}_tokens (streamed: the `response.completed` event's response.usage)
 *   Chat Completions   usage.{prompt,completion}_tokens (streamed: the last chunk, with include_usage)
 *   Anthropic Messages usage.{input,output}_tokens + cache_{read,creation}_input_tokens (streamed:
 *                      message_start's message.usage, then message_delta's usage, which carries the total)
 *   Gemini             usageMetadata.{promptTokenCount,candidatesTokenCount,thoughtsTokenCount} (each chunk
 *                      carries the total so far)
 * Later figures of one answer replace earlier ones (each is the total so far). A run's tally (RunAccount)
 * adds its answers up per model, prices them (protocol/prices.ts) and says when its budget is spent.
 */
import {
  costOf,
  foldUsage,
  type AnswerUsage,
  type FlowSpec,
  type ModelUsage,
  type PriceTable,
} from '../protocol/index.ts';

export { foldUsage, type AnswerUsage };

/** What every usage field's name contains (usage, usageMetadata, …_usage). */
const USAGE = 'sage';

/** A JSON body larger than this is not read for its usage (model answers are far smaller). */
const MAX_JSON_BODY = 8 << 20;

/**
 * Reads an answer's bytes as they pass for its usage: an event stream line by line (only `data:` lines
 * that mention usage are parsed), a JSON body whole at its end. Anything else is not read.
 */
export class UsageTap {
  readonly usage: AnswerUsage = {};
  private readonly sse: boolean;
  /** An event stream's unfinished line (bytes after the last newline), bounded. */
  private carry: Buffer[] = [];
  private carried = 0;
  private parts: Buffer[] | null = [];
  private size = 0;

  constructor(contentType: string) {
    this.sse = /text\/event-stream/i.test(contentType);
    if (!this.sse && !/json/i.test(contentType)) this.parts = null;
  }

  write(chunk: Buffer): void {
    if (this.sse) {
      // whole lines only, and only those of a chunk that mentions usage are decoded (newline bytes
      // never occur inside a UTF-8 character)
      const nl = chunk.lastIndexOf(10);
      if (nl < 0) {
        this.keep(chunk);
        return;
      }
      const lines = this.carried
        ? Buffer.concat([...this.carry, chunk.subarray(0, nl)])
        : chunk.subarray(0, nl);
      this.carry = [];
      this.carried = 0;
      this.keep(chunk.subarray(nl + 1));
      if (lines.includes(USAGE)) for (const line of lines.toString('utf8').split('\n')) this.line(line);
      return;
    }
    if (!this.parts) return;
    this.size += chunk.length;
    if (this.size > MAX_JSON_BODY) this.parts = null;
    else this.parts.push(chunk);
  }

  /** The answer ended: what it used, or null when it said nothing of its usage. */
  end(): AnswerUsage | null {
    if (this.sse) this.line(Buffer.concat(this.carry).toString('utf8'));
    else if (this.parts) {
      const body = Buffer.concat(this.parts);
      this.parts = null;
      if (body.includes(USAGE))
        try {
          const parsed: unknown = JSON.parse(body.toString('utf8'));
          // Gemini's non-streamed streamGenerateContent (?alt= not sse) is an array of chunks
          for (const d of Array.isArray(parsed) ? parsed : [parsed]) foldUsage(this.usage, d);
        } catch {
          // not JSON after all: no usage
        }
    }
    return this.usage.input !== undefined || this.usage.output !== undefined ? this.usage : null;
  }

  private keep(rest: Buffer): void {
    if (!rest.length) return;
    this.carried += rest.length;
    if (this.carried > MAX_JSON_BODY) {
      this.carry = []; // a line this long is no usage event: dropped
      this.carried = 0;
      return;
    }
    this.carry.push(rest);
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.startsWith('data:') || !line.includes('sage')) return; // usage, usageMetadata
    try {
      foldUsage(this.usage, JSON.parse(line.slice(5)));
    } catch {
      // a data line that is not JSON ([DONE]): nothing to count
    }
  }
}

const empty = (): ModelUsage => ({ requests: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, models: {} });

/**
 * A run's tally of its answers' usage, per model and in all, priced; and its budget (the flow's
 * `budget`): once the tally reaches it, `spent` says why and the proxy refuses the run's next requests.
 */
export class RunAccount {
  readonly usage: ModelUsage = empty();
  private spentWhy: string | null = null;

  constructor(
    private readonly budget: FlowSpec['budget'] = {},
    private readonly prices: PriceTable = {},
    /** The model to count an answer under when the answer names none (the flow's). */
    private readonly defaultModel = 'unknown',
    /** Called after each counted answer; `spent` once, when the budget is first reached. */
    private readonly onChange?: (usage: ModelUsage, spent: string | null) => void,
  ) {}

  /** Why no more requests may be made (the budget is spent), or null. */
  get spent(): string | null {
    return this.spentWhy;
  }

  add(answer: AnswerUsage): void {
    const model = answer.model ?? this.defaultModel;
    const input = answer.input ?? 0;
    const output = answer.output ?? 0;
    const u = this.usage;
    const m = (u.models[model] ??= { requests: 0, inputTokens: 0, outputTokens: 0, costUsd: 0 });
    m.requests++;
    m.inputTokens += input;
    m.outputTokens += output;
    const cost = costOf(model, m.inputTokens, m.outputTokens, this.prices);
    m.costUsd = cost === null ? null : round(cost);
    u.requests++;
    u.inputTokens += input;
    u.outputTokens += output;
    const costs = Object.values(u.models).map((x) => x.costUsd);
    u.costUsd = costs.includes(null) ? null : round(costs.reduce<number>((a, c) => a + (c ?? 0), 0));
    const wasSpent = this.spentWhy;
    this.spentWhy ??= this.over();
    this.onChange?.(u, wasSpent === null ? this.spentWhy : null);
  }

  private over(): string | null {
    const { maxTokens, maxCost } = this.budget ?? {};
    const used = this.usage.inputTokens + this.usage.outputTokens;
    if (maxTokens !== undefined && used >= maxTokens)
      return `token budget spent: ${used} tokens used, the flow allows ${maxTokens} (maxTokens)`;
    if (maxCost !== undefined) {
      const cost = this.usage.costUsd;
      if (cost === null) {
        const unpriced = Object.keys(this.usage.models).filter((k) => this.usage.models[k]!.costUsd === null);
        return `cost budget cannot be kept: model ${unpriced.join(', ')} has no price (add it under prices: in config.yaml)`;
      }
      if (cost >= maxCost)
        return `cost budget spent: $${cost.toFixed(4)} used, the flow allows $${maxCost} (maxCost)`;
    }
    return null;
  }
}

/** Micro-dollar precision: sums of float products otherwise print as 0.30000000000000004. */
const round = (usd: number): number => Math.round(usd * 1e6) / 1e6;
