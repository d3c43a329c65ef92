/** The completion contract: the model's final message is one JSON object (seed 000). */
import type { ClarifyingQuestion } from '@runboard/supervisor/protocol';
import { toQuestions } from '../questions.ts';

export type CompletionStatus = 'SUCCESS' | 'NEEDS_CLARIFICATION' | 'FAILED';

export interface Completion {
  status: CompletionStatus;
  summary: string;
  error: string;
  questions: ClarifyingQuestion[];
}

/** Parses the final message; a string is the reason it is not a valid completion. */
export function parseCompletion(text: string): Completion | string {
  let t = text.trim();
  const fence = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(t);
  if (fence) t = fence[1]!;
  const start = t.indexOf('{');
  const end = t.lastIndexOf('}');
  if (start < 0 || end < start)
    return t ? 'the final message holds no JSON object' : 'the final message is empty';
  let o: unknown;
  try {
    o = JSON.parse(t.slice(start, end + 1));
  } catch (err) {
    return `the final message is not valid JSON (${(err as Error).message})`;
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return 'the final JSON is not an object';
  const r = o as Record<string, unknown>;
  if (r.status !== 'SUCCESS' && r.status !== 'NEEDS_CLARIFICATION' && r.status !== 'FAILED')
    return `the final JSON's status is ${JSON.stringify(r.status)}, not SUCCESS, NEEDS_CLARIFICATION or FAILED`;
  const s = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v));
  return { status: r.status, summary: s(r.summary), error: s(r.error), questions: toQuestions(r.questions) };
}
