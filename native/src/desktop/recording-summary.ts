// How a recording (recording.ts) judges its own ending: how far behind the input the recorder ran, and
// the warnings its summary gives when it could not keep up or could not say which field a key went to
// (issue 30: never a silent `stopped`). Pure: no I/O.

/** Beyond this lag the recording says it could not keep up (the reads of element and focus come late). */
export const KEEP_UP_MS = 1000;

export interface Lag {
  p50: number;
  p99: number;
  max: number;
  events: number;
}

/**
 * How far behind the input the recorder handled it: each event's delay (its server time against when it
 * arrived) less the smallest one seen, which is the server-to-local clock offset.
 */
export function lagOf(delays: readonly number[], minDelay: number): Lag {
  const lags = delays.map((d) => d - minDelay).sort((a, b) => a - b);
  const at = (q: number): number =>
    lags.length ? lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]! : 0;
  return { p50: at(0.5), p99: at(0.99), max: lags.at(-1) ?? 0, events: lags.length };
}

/** The warnings a recording ends with, in words for the person, and whether it kept up. */
export function endWarnings(o: { lag: Lag; focusUnavailable: string | undefined; focusUnknown: number }): {
  keptUp: boolean;
  warnings: string[];
} {
  const warnings: string[] = [];
  const keptUp = o.lag.max <= KEEP_UP_MS;
  if (!keptUp)
    warnings.push(
      `the machine was too busy for the recorder: it handled input up to ${(o.lag.max / 1000).toFixed(1)} s after it happened (median ${Math.round(o.lag.p50)} ms); every step was kept, with the focus it had at its own time`,
    );
  if (o.focusUnavailable !== undefined)
    warnings.push(
      `focus changes could not be followed (${o.focusUnavailable}): a key step's field is the one focused when the recorder handled it`,
    );
  if (o.focusUnknown > 0)
    warnings.push(
      `${o.focusUnknown} key step(s) have no field: the app did not report where the focus went (focusUnknown in the manifest)`,
    );
  return { keptUp, warnings };
}

/** How a recording ended, as recording.json says it. */
export interface Ending {
  endedAt: string;
  durationMs: number;
  steps: number;
  bytes: number;
  stopReason: string;
  message: string;
  keptUp: boolean;
  lagMs: Lag;
}

/** recording.json's fields about the ending (of the summary), or `recording: true` while it goes on. */
export function endingMeta(s: Ending | null): Ending | { recording: true } {
  if (!s) return { recording: true };
  const { endedAt, durationMs, steps, bytes, stopReason, message, keptUp, lagMs } = s;
  return { endedAt, durationMs, steps, bytes, stopReason, message, keptUp, lagMs };
}
