import { describe, expect, it } from 'vitest';
import { retryDecision } from './retry.ts';

const policy = { maxRetries: 3, maxWaitMs: 30_000 };
const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${status}`), { status, headers });

describe('retryDecision', () => {
  it('retries transient errors with exponential backoff, then gives up saying how often it tried', () => {
    expect(retryDecision(httpError(503), 0, policy, 0, 1)).toEqual({ retry: true, waitMs: 500, status: 503 });
    expect(retryDecision(httpError(503), 2, policy, 0, 1)).toEqual({
      retry: true,
      waitMs: 2000,
      status: 503,
    });
    expect(retryDecision(httpError(503), 3, policy, 0, 1)).toEqual({
      retry: false,
      why: 'model request failed after 4 attempts: HTTP 503',
    });
  });

  it('never retries refused credentials or a request the provider rejected', () => {
    const auth = retryDecision(httpError(401), 0, policy);
    expect(auth.retry).toBe(false);
    expect(!auth.retry && auth.why).toMatch(/refused the run's credentials.*provider key/);
    expect(retryDecision(httpError(400), 0, policy)).toEqual({
      retry: false,
      why: 'model request failed: HTTP 400',
    });
  });

  it('waits as long as retry-after says, unless that is longer than the run may wait', () => {
    expect(retryDecision(httpError(429, { 'retry-after': '2' }), 0, policy)).toMatchObject({
      retry: true,
      waitMs: 2000,
    });
    const long = retryDecision(
      httpError(429, { 'retry-after': '120' }),
      0,
      policy,
      Date.parse('2026-01-01T00:00:00Z'),
    );
    expect(long).toEqual({
      retry: false,
      why: 'rate limited by the model provider until 2026-01-01T00:02:00.000Z (HTTP 429)',
      rateLimitedUntil: '2026-01-01T00:02:00.000Z',
    });
  });
});
