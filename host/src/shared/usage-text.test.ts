import { describe, expect, it } from 'vitest';
import { sumUsage, usageText } from './usage-text.ts';

const u = (input: number, output: number, costUsd: number | null) => ({
  requests: 1,
  inputTokens: input,
  outputTokens: output,
  costUsd,
  models: {},
});

describe('usage text', () => {
  it("a card's usage is its runs' summed; one unpriced run makes the cost unknown", () => {
    expect(usageText(sumUsage([u(1000, 200, 0.0035), undefined, u(10_000, 0, 0.025)]))).toBe(
      '11,200 tokens · $0.03',
    );
    expect(usageText(sumUsage([u(1000, 200, 0.0035), u(5, 5, null)]), true)).toBe(
      '1,210 tokens (in 1,005 / out 205) · cost unknown',
    );
    expect(usageText(u(1000, 100, 0.0035))).toBe('1,100 tokens · $0.0035');
    expect(sumUsage([undefined])).toBeNull();
    expect(usageText(null)).toBe('—');
  });
});
