/** What a run on the desktop (computer-use, replay) counts as it goes, and the metrics its outcome reports. */
import type { Metrics } from '@runboard/supervisor/protocol';
import { estimateCost, type Pricing } from '../models/prompt.ts';

export interface Budgets {
  maxSteps: number;
  maxDurationMs: number;
}

export class LoopMetrics {
  readonly tokens = { input: 0, output: 0 };
  /** Model turns. */
  turns = 0;
  toolCalls = 0;
  retries = 0;
  modelMs = 0;
  /** Set when the provider rate-limited the run past what it may wait. */
  rateLimitedUntil: string | undefined;
  private readonly images = { total: 0, max: 0, count: 0 };
  /** Loop overhead per step, model time excluded. */
  private readonly overheadMs: number[] = [];
  private readonly t0 = performance.now();

  /** Since the loop started. */
  elapsedMs(): number {
    return performance.now() - this.t0;
  }

  turn(usage: { input: number; output: number }, modelMs: number): void {
    this.turns++;
    this.modelMs += modelMs;
    this.tokens.input += usage.input;
    this.tokens.output += usage.output;
  }

  screenshot(base64Bytes: number): void {
    this.images.total += base64Bytes;
    this.images.count++;
    this.images.max = Math.max(this.images.max, base64Bytes);
  }

  stepOverhead(ms: number): void {
    this.overheadMs.push(ms);
  }

  /** What the tokens so far cost by the prompt folder's pricing (null: no price for the model). */
  cost(cfg: Pricing, model: string): number | null {
    return estimateCost(cfg, model, this.tokens.input, this.tokens.output);
  }

  /** The outcome's metrics. */
  report(api: string, model: string, costUsd: number | null, budgets: Budgets): Metrics {
    const sorted = [...this.overheadMs].sort((a, b) => a - b);
    const pct = (p: number): number =>
      sorted.length
        ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]! * 10) / 10
        : 0;
    return {
      api,
      model,
      steps: this.turns,
      toolCalls: this.toolCalls,
      inputTokens: this.tokens.input,
      outputTokens: this.tokens.output,
      ...(costUsd !== null ? { estimatedCostUsd: costUsd } : {}),
      modelRetries: this.retries,
      modelMs: Math.round(this.modelMs),
      loopMs: Math.round(this.elapsedMs()),
      stepOverheadP50Ms: pct(0.5),
      stepOverheadP95Ms: pct(0.95),
      screenshots: this.images.count,
      imageBytesTotal: this.images.total,
      imageBytesMax: this.images.max,
      stepBudget: budgets.maxSteps,
      durationBudgetMs: budgets.maxDurationMs,
      ...(this.rateLimitedUntil ? { rateLimitedUntil: this.rateLimitedUntil } : {}),
    };
  }
}
