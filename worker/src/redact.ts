/**
 * The last line of defence for a replay's sensitive parameter values (issue 30): every string the
 * worker sends the supervisor (log lines and their data, progress, the outcome's summary and
 * questions), which the supervisor writes to the run's events.jsonl and result.json, has each value
 * replaced by `(hidden)`. The runner already avoids them (replay's `shown`, masked screenshots); this
 * catches what a message built from the screen or an app's answer would carry (a field read back).
 * Values shorter than 3 characters are not redacted: replacing every "1" of a log would hide nothing.
 */
export const HIDDEN = '(hidden)';

export type Redact = <T>(v: T) => T;

export function redactor(secrets: Record<string, string> | undefined): Redact {
  const values = Object.values(secrets ?? {})
    .filter((v) => v.length >= 3)
    .sort((a, b) => b.length - a.length); // a value inside a longer one is replaced after it
  if (!values.length) return (v) => v;
  const str = (s: string): string => values.reduce((out, v) => out.split(v).join(HIDDEN), s);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return str(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [str(k), walk(x)]));
    return v;
  };
  return <T>(v: T) => walk(v) as T;
}
