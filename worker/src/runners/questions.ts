/**
 * Questions a model asks, as its final answer gives them: a string, or a structured form
 * `{question, options?, recommended?}` (extra fields such as `id` or `allow_freeform` are ignored; a
 * free answer is always possible). Anything else is kept as its JSON text rather than dropped.
 */
import type { ClarifyingQuestion } from '@runboard/supervisor/protocol';

const LIMIT = 4096;

export function toQuestions(v: unknown): ClarifyingQuestion[] {
  if (!Array.isArray(v)) return [];
  const out: ClarifyingQuestion[] = [];
  for (const q of v.slice(0, 50)) {
    const one = toQuestion(q);
    if (one) out.push(one);
  }
  return out;
}

function toQuestion(q: unknown): ClarifyingQuestion | null {
  if (typeof q === 'string') {
    const t = q.trim();
    return t && t.toLowerCase() !== 'none.' && t.toLowerCase() !== 'none' ? t.slice(0, LIMIT) : null;
  }
  if (q && typeof q === 'object' && !Array.isArray(q)) {
    const o = q as Record<string, unknown>;
    const text = typeof o.question === 'string' ? o.question.trim() : '';
    if (text) {
      const options = Array.isArray(o.options)
        ? o.options
            .map((x) =>
              typeof x === 'string'
                ? x
                : typeof (x as { label?: unknown })?.label === 'string'
                  ? (x as { label: string }).label
                  : '',
            )
            .map((x) => x.trim().slice(0, 500))
            .filter(Boolean)
            .slice(0, 20)
        : [];
      const rec = typeof o.recommended === 'string' ? o.recommended.trim().slice(0, 500) : '';
      return {
        question: text.slice(0, LIMIT),
        ...(options.length ? { options } : {}),
        ...(rec && options.includes(rec) ? { recommended: rec } : {}),
      };
    }
  }
  if (q == null) return null;
  return JSON.stringify(q).slice(0, LIMIT);
}
