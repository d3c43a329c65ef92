/**
 * A provider's 429 as the model proxy sees it pass (proxy-forward.ts), whichever runner made the
 * request (an agent CLI, a document tool, reflect, extract, the judge, computer use): until when the
 * provider says its limit holds, read from the answer's headers. The run reports it with the request's
 * log line (`rateLimitedUntil`), and the board parks the provider's waiting cards until then
 * (host/src/core/scheduler-caps.ts). Headers read, the first that gives a time winning:
 *   retry-after-ms                       milliseconds (OpenAI's SDKs send and read it)
 *   retry-after                          seconds, or an HTTP date
 *   anthropic-ratelimit-<limit>-reset    an RFC 3339 time, per limit (requests, tokens, input-tokens,
 *                                        output-tokens); the one whose remaining is 0 is the one met
 *   x-ratelimit-reset-<limit>            a duration (`1s`, `6m0s`, `20ms`), per limit (requests, tokens);
 *                                        again the one whose x-ratelimit-remaining-<limit> is 0
 * Where no remaining count says which limit was met, the latest reset is taken (the answer is a 429:
 * some limit is spent). A reset further away than a day is taken as a day (a wrong clock or header
 * must not hold a provider's cards for ever).
 */
import type http from 'node:http';

/** The longest a 429 parks a provider for. */
export const MAX_PARK_MS = 24 * 3600_000;

type Headers = http.IncomingHttpHeaders;

const one = (h: Headers, k: string): string | undefined => {
  const v = h[k];
  return Array.isArray(v) ? v[0] : v;
};

/** `1s`, `6m0s`, `1h2m3.5s`, `20ms` (OpenAI's reset durations) → ms; undefined when not one. */
export function durationMs(text: string): number | undefined {
  const t = text.trim();
  if (!t || !/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(t)) return undefined;
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    const n = Number(m[1]);
    ms += m[2] === 'h' ? n * 3600_000 : m[2] === 'm' ? n * 60_000 : m[2] === 's' ? n * 1000 : n;
  }
  return ms;
}

/** The resets of one header family (keys matching `re`, the limit's name its group 1), with whether
 *  that limit's remaining (`remaining(limit)`) is 0. */
function resets(
  h: Headers,
  re: RegExp,
  remaining: (limit: string) => string,
  at: (v: string) => number | undefined,
): { at: number; spent: boolean }[] {
  const out: { at: number; spent: boolean }[] = [];
  for (const k of Object.keys(h)) {
    const limit = re.exec(k)?.[1];
    const v = limit === undefined ? undefined : one(h, k);
    const t = v === undefined ? undefined : at(v);
    if (t === undefined || !Number.isFinite(t)) continue;
    out.push({ at: t, spent: one(h, remaining(limit!)) === '0' });
  }
  return out;
}

/**
 * Until when (epoch ms) a 429's headers say the provider's limit holds, or undefined when they give
 * no time (a 429 without a reset parks nothing: the SDK's own backoff is all there is).
 */
export function rateLimitReset(headers: Headers, now = Date.now()): number | undefined {
  const until = (t: number): number => Math.min(Math.max(t, now), now + MAX_PARK_MS);
  const ms = Number(one(headers, 'retry-after-ms'));
  if (one(headers, 'retry-after-ms') && Number.isFinite(ms) && ms >= 0) return until(now + ms);
  const ra = one(headers, 'retry-after')?.trim();
  if (ra) {
    if (/^\d+(\.\d+)?$/.test(ra)) return until(now + Number(ra) * 1000);
    const d = Date.parse(ra);
    if (Number.isFinite(d)) return until(d);
  }
  const all = [
    ...resets(
      headers,
      /^anthropic-ratelimit-([a-z-]+)-reset$/,
      (l) => `anthropic-ratelimit-${l}-remaining`,
      (v) => Date.parse(v),
    ),
    ...resets(
      headers,
      /^x-ratelimit-reset-([a-z-]+)$/,
      (l) => `x-ratelimit-remaining-${l}`,
      (v) => {
        const d = durationMs(v);
        return d === undefined ? undefined : now + d;
      },
    ),
  ];
  const picked = all.some((r) => r.spent) ? all.filter((r) => r.spent) : all;
  if (!picked.length) return undefined;
  return until(Math.max(...picked.map((r) => r.at)));
}
