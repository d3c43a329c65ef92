/**
 * A coding-agent run's status from evidence, not from the CLI's claim. Known CLI behaviour
 * reports some failures as success (exit 0 with a permission denial, an empty result, no closing
 * event), so the order below is fixed and the CLI's own "success" is the last thing believed:
 *
 *   cancelled / killed / non-zero exit ─▶ failed
 *   no final event                       ─▶ failed     (the CLI ended without saying how)
 *   final event says failure             ─▶ failed
 *   permission denied                    ─▶ needs-input (a person must grant it or do it)
 *   agent's RUNBOARD_RESULT: FAILED      ─▶ failed
 *   agent's RUNBOARD_RESULT: NEEDS_CLARIFICATION ─▶ needs-input, with its questions
 *   no result text at all                ─▶ failed     (an empty result is no result)
 *   otherwise                            ─▶ succeeded
 */
import type { ClarifyingQuestion, WorkerStatus } from '@runboard/supervisor/protocol';
import type { AgentEvent } from './agent-events.ts';
import { toQuestions } from './questions.ts';

export interface AgentEvidence {
  cli: string;
  exitCode: number | null;
  signal: string | null;
  cancelled: boolean;
  events: AgentEvent[];
  /** Last lines of the CLI's stderr, for the reason. */
  stderrTail: string;
}

export interface AgentVerdict {
  status: WorkerStatus;
  summary: string;
  /** Machine-readable reason: 'exit', 'no-final-event', 'cli-failed', 'permission-denied', 'agent-failed', 'clarification', 'empty-result', 'ok'. */
  reason: string;
  questions: ClarifyingQuestion[];
}

/** The completion contract the prompts ask for: the last `RUNBOARD_RESULT: {json}` line of the result. */
export interface CompletionClaim {
  status: 'SUCCESS' | 'NEEDS_CLARIFICATION' | 'FAILED';
  summary?: string;
  error?: string;
  questions?: ClarifyingQuestion[];
}

export function parseCompletion(text: string): CompletionClaim | null {
  const lines = text.split('\n').filter((l) => l.includes('RUNBOARD_RESULT:'));
  const last = lines.at(-1);
  if (!last) return null;
  try {
    const v = JSON.parse(
      last.slice(last.indexOf('RUNBOARD_RESULT:') + 'RUNBOARD_RESULT:'.length).trim(),
    ) as Record<string, unknown>;
    const status = String(v.status ?? '').toUpperCase();
    if (status !== 'SUCCESS' && status !== 'NEEDS_CLARIFICATION' && status !== 'FAILED') return null;
    const questions = toQuestions(v.questions);
    return {
      status,
      ...(typeof v.summary === 'string' ? { summary: v.summary } : {}),
      ...(typeof v.error === 'string' ? { error: v.error } : {}),
      questions,
    };
  } catch {
    return null;
  }
}

const tail = (s: string, n = 400): string => {
  const t = s.trim();
  return t.length > n ? '…' + t.slice(-n) : t;
};

export function decideStatus(ev: AgentEvidence): AgentVerdict {
  const v = (
    status: WorkerStatus,
    reason: string,
    summary: string,
    questions: ClarifyingQuestion[] = [],
  ): AgentVerdict => ({
    status,
    reason,
    summary,
    questions,
  });
  const finals = ev.events.filter((e): e is Extract<AgentEvent, { kind: 'final' }> => e.kind === 'final');
  const final = finals.at(-1);
  const errors = ev.events.filter((e) => e.kind === 'error').map((e) => (e as { message: string }).message);
  const why = errors.at(-1) ?? (final && !final.ok ? final.detail : undefined) ?? tail(ev.stderrTail);

  if (ev.cancelled) return v('failed', 'cancelled', `${ev.cli} was stopped (cancelled)`);
  if (ev.signal) return v('failed', 'exit', `${ev.cli} was killed by ${ev.signal}${why ? `: ${why}` : ''}`);
  if (ev.exitCode !== 0)
    return v('failed', 'exit', `${ev.cli} exited with code ${ev.exitCode}${why ? `: ${why}` : ''}`);
  if (!final)
    return v(
      'failed',
      'no-final-event',
      `${ev.cli} exited 0 without its final event: the run's outcome is unknown${why ? ` (${why})` : ''}`,
    );
  if (!final.ok)
    return v('failed', 'cli-failed', `${ev.cli} reported a failure: ${final.detail || why || 'no detail'}`);

  const denials = ev.events.filter(
    (e): e is Extract<AgentEvent, { kind: 'permission-denied' }> => e.kind === 'permission-denied',
  );
  if (denials.length) {
    const list = denials.map(
      (d) => `${d.tool} (${d.detail.length > 160 ? d.detail.slice(0, 160) + '…' : d.detail})`,
    );
    return v(
      'needs-input',
      'permission-denied',
      `${ev.cli} exited 0 but was denied permission ${denials.length} time(s): ${list.join('; ')}. The task is not done; allow it in the flow's config or do that step yourself`,
      denials.map(
        (d) =>
          `The agent was not allowed to run ${d.tool}: ${d.detail.slice(0, 300)}. Allow it, or do it yourself?`,
      ),
    );
  }

  const messages = ev.events.filter(
    (e): e is Extract<AgentEvent, { kind: 'message' }> => e.kind === 'message',
  );
  const resultText = (final.result ?? messages.at(-1)?.text ?? '').trim();
  const claim = parseCompletion(resultText) ?? parseCompletion(messages.map((m) => m.text).join('\n'));
  if (claim?.status === 'FAILED')
    return v(
      'failed',
      'agent-failed',
      `the agent reports FAILED: ${claim.error ?? claim.summary ?? 'no reason given'}`,
    );
  if (claim?.status === 'NEEDS_CLARIFICATION')
    return v(
      'needs-input',
      'clarification',
      `the agent needs clarification: ${claim.summary ?? (claim.questions ?? []).join(' ')}`,
      claim.questions ?? [],
    );
  if (!resultText)
    return v('failed', 'empty-result', `${ev.cli} exited 0 but produced no result (empty final answer)`);
  return v(
    'succeeded',
    'ok',
    claim?.summary ?? (resultText.length > 2000 ? resultText.slice(0, 2000) + '…' : resultText),
  );
}
