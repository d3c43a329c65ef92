/**
 * The end of a run the sandbox refused something: the permissions the person may allow, from the run's
 * denials (asks.ts decides what may be asked). A failed run with asks ends needs-input: the card asks
 * instead of retrying into the same wall.
 */
import type { RunEvent, RunResult } from '../protocol/index.ts';
import { deriveAsks, type AskContext } from './asks.ts';
import type { EndVerdict } from './classify-end.ts';
import type { Denial } from './denials.ts';

/** Whether a run that ended so may ask: failed on a sandbox denial, or finished needing input. */
export function mayAsk(verdict: EndVerdict): boolean {
  return (
    (verdict.status === 'failed' && verdict.reason === 'sandbox-denial') ||
    (verdict.status === 'needs-input' && verdict.reason === 'finished')
  );
}

/**
 * The run's end with its asks: `verdict` unchanged when there is nothing to ask, else needs-input and
 * the asks in `result.asks`; what was not asked, and the asks, are said as the run's log events.
 * `ctx`: what the run may do already (made only when there are denials to look at).
 */
export function askAtEnd(
  verdict: EndVerdict,
  denials: readonly Denial[],
  result: RunResult,
  flowName: string,
  event: (type: RunEvent['type'], message: string, data?: Record<string, unknown>) => void,
  ctx: () => AskContext,
): EndVerdict {
  if (!mayAsk(verdict) || denials.length === 0) return verdict;
  const { asks, refused } = deriveAsks(denials, ctx());
  for (const r of refused)
    event('log', `not asked: ${r.why}`, { kind: 'ask-refused', line: r.denial.line, level: 'warn' });
  if (asks.length === 0) return verdict;
  result.asks = asks;
  const what = asks.map((a) => `${a.kind} ${a.path ?? `port ${a.port}`}`).join('; ');
  event('log', `the card asks the person to allow: ${what}`, { kind: 'ask', asks });
  return {
    status: 'needs-input',
    reason: verdict.reason,
    detail: `the sandbox refused: ${what}; allow it once, always for flow ${flowName}, or deny it`,
  };
}

/** The run's `denial` event (its message and data) for what the sandbox refused. */
export function denialLine(d: Denial): [message: string, data: Record<string, unknown>] {
  return [
    `sandbox denied: ${d.path ?? (d.port ? `port ${d.port}` : d.line)}`,
    {
      path: d.path,
      line: d.line,
      ...(d.port ? { port: d.port } : {}),
      ...(d.remove ? { remove: true } : {}),
    },
  ];
}
