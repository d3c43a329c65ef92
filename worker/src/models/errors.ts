/**
 * A model request's failure, read the same for every wire format: whether to try again (transient,
 * authError; retry.ts decides) and what to tell the person (describeModelError).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

/** Transient transport errors worth a retry: connection trouble, 408/409/429, 5xx. */
export function transient(err: unknown): {
  retry: boolean;
  status: number | null;
  retryAfterMs: number | null;
} {
  const e = err as { status?: number; headers?: Headers | Record<string, string> | undefined; name?: string };
  if (err instanceof OpenAI.APIUserAbortError || err instanceof Anthropic.APIUserAbortError)
    return { retry: false, status: null, retryAfterMs: null };
  const conn = err instanceof OpenAI.APIConnectionError || err instanceof Anthropic.APIConnectionError;
  const status = typeof e.status === 'number' ? e.status : null;
  let retryAfterMs: number | null = null;
  const h = e.headers;
  const get = (k: string): string | null | undefined =>
    h
      ? typeof (h as Headers).get === 'function'
        ? (h as Headers).get(k)
        : (h as Record<string, string>)[k]
      : null;
  const ms = get('retry-after-ms');
  const s = get('retry-after');
  if (ms && Number.isFinite(Number(ms))) retryAfterMs = Number(ms);
  else if (s && Number.isFinite(Number(s))) retryAfterMs = Number(s) * 1000;
  else if (s) {
    const d = Date.parse(s);
    if (Number.isFinite(d)) retryAfterMs = Math.max(0, d - Date.now());
  }
  const retry =
    conn || status === 408 || status === 409 || status === 429 || (status !== null && status >= 500);
  return { retry, status, retryAfterMs };
}

/** Whether an error is the provider refusing the key/token (no retry: guidance instead). */
export function authError(err: unknown): boolean {
  const s = (err as { status?: number }).status;
  return s === 401 || s === 403;
}

/**
 * A model request's failure in words for the person: who refused what (the provider's status and
 * message, the proxy's refusal) or that the network failed, and what to do about a key.
 */
export function describeModelError(err: unknown, provider: string): string {
  const e = err as { status?: number; message?: string; cause?: { code?: string; message?: string } };
  const status = typeof e.status === 'number' ? e.status : undefined;
  // the OpenAI and Anthropic SDKs start their messages with the status; it is said once here
  const message = (e.message ?? String(err))
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\d{3}\s+/, '');
  if (status === 401 || status === 403)
    return `the model provider ${provider} refused the request (${status}): ${message}. Check the key: runboard key set ${provider}`;
  if (status === 429) return `rate limited by the model provider ${provider} (429): ${message}`;
  if (status !== undefined) return `the model provider ${provider} answered ${status}: ${message}`;
  const code = e.cause?.code;
  if (err instanceof OpenAI.APIConnectionError || err instanceof Anthropic.APIConnectionError || code)
    return `cannot reach the model provider ${provider} (network: ${code ?? e.cause?.message ?? message})`;
  return `the model request to ${provider} failed: ${message}`;
}
