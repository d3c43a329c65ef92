/**
 * What a model's tokens cost: a price table (USD per million tokens, input and output) and the cost of
 * a run's usage by it. The supervisor's model proxy counts the tokens of every answer (proxy-usage.ts);
 * a price is looked up by the model's exact name, or by that name with a date or `-latest` after it
 * (`gpt-4o-2024-08-06` is priced as `gpt-4o`). A model in no table has no price: its tokens are shown
 * and its cost is unknown (null), never a guessed figure. docs/user-guide.md "Tokens and cost".
 */
import * as z from 'zod/mini';

export const ModelPrice = z.object({
  /** USD per million input (prompt) tokens, cached ones included. */
  input: z.number().check(z.minimum(0), z.maximum(10_000)),
  /** USD per million output tokens (reasoning tokens included, as the providers bill them). */
  output: z.number().check(z.minimum(0), z.maximum(10_000)),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

export const PriceTable = z.record(z.string().check(z.minLength(1), z.maxLength(200)), ModelPrice);
export type PriceTable = z.infer<typeof PriceTable>;

/**
 * The default prices (the providers' list prices, standard tier, as published in November 2026 for
 * these models; no cache or batch discounts). config.yaml's `prices:` adds models or overrides these.
 */
export const DEFAULT_PRICES: PriceTable = {
  // OpenAI
  'gpt-4o': { input: 2.5, output: 10 },
  'gpt-4o-mini': { input: 0.15, output: 0.6 },
  'gpt-4.1': { input: 2, output: 8 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4 },
  'gpt-5': { input: 1.25, output: 10 },
  'gpt-5-mini': { input: 0.25, output: 2 },
  'gpt-5-nano': { input: 0.05, output: 0.4 },
  o3: { input: 2, output: 8 },
  'o4-mini': { input: 1.1, output: 4.4 },
  'computer-use-preview': { input: 3, output: 12 },
  // Anthropic
  'claude-opus-4-1': { input: 15, output: 75 },
  'claude-opus-4': { input: 15, output: 75 },
  'claude-sonnet-4-5': { input: 3, output: 15 },
  'claude-sonnet-4': { input: 3, output: 15 },
  'claude-3-7-sonnet': { input: 3, output: 15 },
  'claude-haiku-4-5': { input: 1, output: 5 },
  'claude-3-5-haiku': { input: 0.8, output: 4 },
  // Google (prompts up to 200k tokens)
  'gemini-2.5-pro': { input: 1.25, output: 10 },
  'gemini-2.5-flash': { input: 0.3, output: 2.5 },
  'gemini-2.5-flash-lite': { input: 0.1, output: 0.4 },
  'gemini-2.0-flash': { input: 0.1, output: 0.4 },
};

/** A dated or `-latest` variant of a priced name: `-2024-08-06`, `-20250514`, `-latest`, `-001`. */
const VARIANT = /^-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest|\d{3})$/;

/** The price of `model` in `prices` (then the defaults), or null when neither table knows it. */
export function priceOf(name: string, prices: PriceTable = {}): ModelPrice | null {
  const model = name.replace(/^models\//, ''); // Gemini's resource name
  for (const table of [prices, DEFAULT_PRICES]) {
    if (Object.hasOwn(table, model)) return table[model]!;
    for (const [name, price] of Object.entries(table))
      if (model.startsWith(name) && VARIANT.test(model.slice(name.length))) return price;
  }
  return null;
}

/** USD for `input` and `output` tokens of `model`, or null when it has no price. */
export function costOf(model: string, input: number, output: number, prices?: PriceTable): number | null {
  const p = priceOf(model, prices);
  return p ? (input * p.input + output * p.output) / 1e6 : null;
}

/** A `debug: true` run's model requests and responses, one JSON line each, in its log folder. */
export const MODEL_DEBUG_FILE = 'model-debug.jsonl';
