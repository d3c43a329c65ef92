/**
 * Tokens and cost as the board and the CLI show them (a run's `usage`, counted by the supervisor's model
 * proxy; a card's as the sum of its runs). A cost the price table cannot give is "cost unknown", never a
 * guess. Pure: imported by the renderer and the CLI.
 */
import type { ModelUsage } from '@runboard/supervisor/protocol/data';

/** The sum of several runs' usage (a card's, or an attempt's runs'); null when none has any. */
export function sumUsage(all: readonly (ModelUsage | undefined)[]): ModelUsage | null {
  const some = all.filter((u): u is ModelUsage => !!u);
  if (!some.length) return null;
  const out: ModelUsage = { requests: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, models: {} };
  for (const u of some) {
    out.requests += u.requests;
    out.inputTokens += u.inputTokens;
    out.outputTokens += u.outputTokens;
    out.costUsd = out.costUsd === null || u.costUsd === null ? null : out.costUsd + u.costUsd;
  }
  return out;
}

const grouped = (n: number): string => n.toLocaleString('en-US');

/** `12,345 tokens`, with `(in 12,000 / out 345)` when `detail`. */
export function tokensText(u: ModelUsage, detail = false): string {
  const all = u.inputTokens + u.outputTokens;
  return `${grouped(all)} tokens${detail ? ` (in ${grouped(u.inputTokens)} / out ${grouped(u.outputTokens)})` : ''}`;
}

/** `$0.0123`, or `cost unknown` when a model has no price. */
export function costText(u: ModelUsage): string {
  if (u.costUsd === null) return 'cost unknown';
  return `$${u.costUsd < 0.01 ? u.costUsd.toFixed(4) : u.costUsd.toFixed(2)}`;
}

/** One line: `12,345 tokens · $0.0123` (or `—` with no usage recorded). */
export function usageText(u: ModelUsage | null | undefined, detail = false): string {
  return u ? `${tokensText(u, detail)} · ${costText(u)}` : '—';
}
