/**
 * A card's `## Questions` section, in plain markdown a person can edit too: the section is the source of truth, open questions are its bullets (a `- None.`
 * placeholder excepted), and an answered question is a ticked item with its answer indented under it:
 *
 *   ## Questions
 *   - [ ] Which branch should the fix go to?          ← open (written by the host from a run's result)
 *   - [x] Keep the old API?                            ← answered (by the person, in the app or an editor)
 *     Answer: yes, until 2.0
 *   - [ ] Which account should I use?                  ← with choices (a run's structured question)
 *     Options: Personal | Work (recommended)
 *
 * Pure text functions: the store applies them in one atomic write together with the card's state.
 */

import type { ClarifyingQuestion } from '@runboard/supervisor/protocol';
import type { Question } from '../shared/board-types.ts';

export type { Question };

const SECTION = /^##\s+Questions\s*$/i;
const NEXT_SECTION = /^#{1,2}\s/;
const ITEM = /^[-*]\s+(?:\[([ xX])\]\s+)?(.*)$/;
const NONE = /^[-*]\s+None\b/i;
const ANSWER = /^\s+Answer:\s?(.*)$/;
const OPTIONS = /^\s+Options:\s?(.*)$/;
const RECOMMENDED = /\s*\(recommended\)\s*$/i;

interface Section {
  /** Line index of the `## Questions` heading. */
  head: number;
  /** Line index after the section's last line. */
  end: number;
}

function section(lines: readonly string[]): Section | undefined {
  const head = lines.findIndex((l) => SECTION.test(l));
  if (head < 0) return undefined;
  let end = head + 1;
  while (end < lines.length && !NEXT_SECTION.test(lines[end]!)) end++;
  return { head, end };
}

interface Item extends Question {
  /** Line of the bullet. */
  line: number;
  /** Line after the item's last line (continuations and answer included). */
  last: number;
}

function items(lines: readonly string[], s: Section): Item[] {
  const out: Item[] = [];
  for (let i = s.head + 1; i < s.end; i++) {
    const line = lines[i]!;
    const m = ITEM.exec(line);
    if (m && !NONE.test(line)) {
      out.push({ text: m[2]!.trim(), answered: (m[1] ?? ' ').toLowerCase() === 'x', line: i, last: i + 1 });
      continue;
    }
    const cur = out.at(-1);
    if (!cur || cur.last !== i || !/^\s+\S/.test(line)) continue;
    const a = ANSWER.exec(line);
    const o = cur.answer === undefined ? OPTIONS.exec(line) : null;
    if (a) cur.answer = a[1]!.trim();
    else if (o) {
      const opts = o[1]!
        .split('|')
        .map((x) => x.trim())
        .filter(Boolean);
      cur.options = opts.map((x) => x.replace(RECOMMENDED, ''));
      const rec = opts.find((x) => RECOMMENDED.test(x));
      if (rec) cur.recommended = rec.replace(RECOMMENDED, '');
    } else if (cur.answer !== undefined) cur.answer += `\n${line.trim()}`;
    else cur.text += `\n${line.trim()}`;
    cur.last = i + 1;
  }
  return out;
}

/** The questions of a card body, in order (open and answered). */
export function parseQuestions(body: string): Question[] {
  const lines = body.split('\n');
  const s = section(lines);
  if (!s) return [];
  return items(lines, s).map(({ text, answered, answer, options, recommended }) => ({
    text,
    answered,
    ...(answer !== undefined ? { answer } : {}),
    ...(options?.length ? { options } : {}),
    ...(recommended !== undefined ? { recommended } : {}),
  }));
}

const textOf = (q: ClarifyingQuestion): string => (typeof q === 'string' ? q : q.question);

/**
 * One question as list lines: the first after `- [ ] `, the rest indented (never a heading), then its
 * choices on one `Options:` line (`|` inside a choice would split it: it becomes `/`).
 */
function itemLines(q: ClarifyingQuestion): string[] {
  const [first = '', ...rest] = textOf(q)
    .trim()
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const out = [`- [ ] ${first}`, ...rest.map((l) => `  ${l}`)];
  const options =
    typeof q === 'string'
      ? []
      : (q.options ?? []).map((o) => o.replace(/\s+/g, ' ').replace(/\|/g, '/').trim());
  if (options.length && typeof q !== 'string') {
    const rec = q.recommended?.replace(/\s+/g, ' ').replace(/\|/g, '/').trim();
    out.push(`  Options: ${options.map((o) => (o === rec ? `${o} (recommended)` : o)).join(' | ')}`);
  }
  return out;
}

/**
 * Appends open questions to the body's `## Questions` section (created at the end when missing,
 * a `- None.` placeholder replaced). A question already open there is not added again.
 */
export function appendQuestions(body: string, questions: readonly ClarifyingQuestion[]): string {
  const lines = body.split('\n');
  let s = section(lines);
  const open = new Set(
    s
      ? items(lines, s)
          .filter((q) => !q.answered)
          .map((q) => norm(q.text))
      : [],
  );
  const fresh = questions.filter((q) => textOf(q).trim() && !open.has(norm(textOf(q))));
  const unique = fresh.filter((q, i) => fresh.findIndex((o) => norm(textOf(o)) === norm(textOf(q))) === i);
  if (unique.length === 0) return body;
  const add = unique.flatMap(itemLines);
  if (!s) {
    while (lines.length && lines.at(-1)!.trim() === '') lines.pop();
    if (lines.length) lines.push('');
    lines.push('## Questions', ...add, '');
    return lines.join('\n');
  }
  // drop the placeholder, then insert after the section's last non-blank line
  for (let i = s.end - 1; i > s.head; i--) if (NONE.test(lines[i]!)) lines.splice(i, 1);
  s = section(lines)!;
  let at = s.end;
  while (at > s.head + 1 && lines[at - 1]!.trim() === '') at--;
  const tail = at === s.end && s.end < lines.length ? [''] : []; // keep a blank line before the next heading
  lines.splice(at, 0, ...add, ...tail);
  return lines.join('\n');
}

/**
 * Answers open questions (by their index among all questions of the section): the item is ticked and
 * `Answer: …` is written under it (a multi-line answer indented). Throws on a bad index.
 */
export function answerQuestions(body: string, answers: readonly { index: number; answer: string }[]): string {
  const lines = body.split('\n');
  const s = section(lines);
  if (!s) throw new Error('the card has no ## Questions section');
  const all = items(lines, s);
  // bottom-up, so earlier line numbers stay valid
  const sorted = [...answers].sort((a, b) => b.index - a.index);
  for (const { index, answer } of sorted) {
    const q = all[index];
    if (!q) throw new Error(`no question ${index}`);
    const text = answer.trim();
    if (!text) continue;
    const [first = '', ...rest] = text.split(/\r?\n/);
    const block = [`  Answer: ${first.trim()}`, ...rest.map((l) => `    ${l.trim()}`)];
    // replace an earlier answer, keep the question's own lines
    let stop = q.last;
    let answerAt = -1;
    for (let i = q.line + 1; i < q.last; i++) if (ANSWER.test(lines[i]!)) answerAt = i;
    if (answerAt >= 0) stop = answerAt;
    lines.splice(stop, q.last - stop, ...block);
    lines[q.line] = lines[q.line]!.replace(/^([-*])\s+(?:\[[ xX]\]\s+)?/, '$1 [x] ');
  }
  return lines.join('\n');
}

function norm(q: string): string {
  return q.trim().replace(/\s+/g, ' ').toLowerCase();
}
