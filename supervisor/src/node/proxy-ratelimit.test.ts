// A 429's reset as the model proxy reads it from the provider's headers (proxy-ratelimit.ts).
import { describe, expect, it } from 'vitest';
import { durationMs, MAX_PARK_MS, rateLimitReset } from './proxy-ratelimit.ts';

const now = Date.parse('2026-11-27T12:00:00.000Z');

describe("a 429's reset", () => {
  it('retry-after-ms, then retry-after (seconds or an HTTP date)', () => {
    expect(rateLimitReset({ 'retry-after-ms': '1500', 'retry-after': '99' }, now)).toBe(now + 1500);
    expect(rateLimitReset({ 'retry-after': '20' }, now)).toBe(now + 20_000);
    expect(rateLimitReset({ 'retry-after': 'Fri, 27 Nov 2026 12:01:00 GMT' }, now)).toBe(now + 60_000);
  });

  it("Anthropic's per-limit resets: the spent limit's, else the latest", () => {
    const h = {
      'anthropic-ratelimit-requests-remaining': '12',
      'anthropic-ratelimit-requests-reset': '2026-11-27T12:05:00Z',
      'anthropic-ratelimit-tokens-remaining': '0',
      'anthropic-ratelimit-tokens-reset': '2026-11-27T12:00:30Z',
      'anthropic-ratelimit-tokens-limit': '40000',
    };
    expect(rateLimitReset(h, now)).toBe(now + 30_000);
    const unsaid = { ...h, 'anthropic-ratelimit-tokens-remaining': '5' };
    expect(rateLimitReset(unsaid, now)).toBe(now + 300_000);
  });

  it("OpenAI's reset durations, the spent limit's", () => {
    expect(durationMs('6m0s')).toBe(360_000);
    expect(durationMs('1h2m3.5s')).toBe(3_723_500);
    expect(durationMs('20ms')).toBe(20);
    expect(durationMs('soon')).toBeUndefined();
    const h = {
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '2s',
      'x-ratelimit-remaining-tokens': '100',
      'x-ratelimit-reset-tokens': '6m0s',
    };
    expect(rateLimitReset(h, now)).toBe(now + 2000);
  });

  it('no reset: none; a reset in the past: now; one past a day: a day', () => {
    expect(rateLimitReset({ 'content-type': 'application/json' }, now)).toBeUndefined();
    expect(rateLimitReset({ 'retry-after': 'later, maybe' }, now)).toBeUndefined();
    expect(rateLimitReset({ 'retry-after': 'Thu, 01 Jan 1970 00:00:00 GMT' }, now)).toBe(now);
    expect(rateLimitReset({ 'retry-after': String(10 * 24 * 3600) }, now)).toBe(now + MAX_PARK_MS);
  });
});
