/**
 * When a failed model request is tried again: transient errors (connection reset, 429, 5xx) with
 * exponential backoff and jitter, or the provider's `retry-after`; never credentials, never a wait the
 * run should not sit through. Pure: the caller sleeps and counts.
 */
import { authError, transient } from './errors.ts';

export interface RetryPolicy {
  /** Retries per request (the flow's computerUse.maxRetries). */
  maxRetries: number;
  /** A wait (backoff or retry-after) longer than this is not sat through inside the run. */
  maxWaitMs: number;
}

/** A retry-after longer than this is not waited for inside the run. */
export const MAX_RETRY_WAIT_MS = 30_000;

export type RetryDecision =
  | { retry: true; waitMs: number; status: number | null }
  | { retry: false; why: string; rateLimitedUntil?: string };

/**
 * After attempt `attempt` (0-based) failed with `err`: wait and retry, or give up saying why.
 * `jitter` scales the backoff (0.8–1.2 by default) so runs that failed together do not retry together.
 */
export function retryDecision(
  err: unknown,
  attempt: number,
  policy: RetryPolicy,
  now = Date.now(),
  jitter = 0.8 + Math.random() * 0.4,
): RetryDecision {
  const message = err instanceof Error ? err.message : String(err);
  if (authError(err))
    return {
      retry: false,
      why: `the model provider refused the run's credentials (${message}); check the provider key stored with the supervisor (docs/computer-use.md, "Keys")`,
    };
  const t = transient(err);
  const wait = t.retryAfterMs ?? Math.min(8000, 500 * 2 ** attempt) * jitter;
  if (t.retry && attempt < policy.maxRetries && wait <= policy.maxWaitMs)
    return { retry: true, waitMs: wait, status: t.status };
  if (t.status === 429 && t.retryAfterMs !== null) {
    const until = new Date(now + t.retryAfterMs).toISOString();
    return {
      retry: false,
      why: `rate limited by the model provider until ${until} (${message})`,
      rateLimitedUntil: until,
    };
  }
  return {
    retry: false,
    why: `model request failed${t.retry ? ` after ${attempt + 1} attempts` : ''}: ${message}`,
  };
}

export type Sent<T> = { ok: true; value: T } | { ok: false; why: string; rateLimitedUntil?: string };

/**
 * One model request, tried again by the retry policy: the waits are cut short by a cancel (which ends
 * it as `cancelled`), each retry is reported to `onRetry` before its wait.
 */
export async function sendWithRetry<T>(
  send: () => Promise<T>,
  signal: AbortSignal,
  maxRetries: number,
  onRetry: (r: { attempt: number; status: number | null; waitMs: number; error: string }) => void,
): Promise<Sent<T>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return { ok: true, value: await send() };
    } catch (err) {
      if (signal.aborted) return { ok: false, why: 'cancelled' };
      const d = retryDecision(err, attempt, { maxRetries, maxWaitMs: MAX_RETRY_WAIT_MS });
      if (!d.retry)
        return {
          ok: false,
          why: d.why,
          ...(d.rateLimitedUntil ? { rateLimitedUntil: d.rateLimitedUntil } : {}),
        };
      onRetry({ attempt: attempt + 1, status: d.status, waitMs: d.waitMs, error: (err as Error).message });
      await new Promise<void>((res) => {
        const timer = setTimeout(res, d.waitMs);
        signal.addEventListener('abort', () => (clearTimeout(timer), res()), { once: true });
      });
      if (signal.aborted) return { ok: false, why: 'cancelled' };
    }
  }
}
