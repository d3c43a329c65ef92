/**
 * What an extraction run produces (runner `extract`, docs/extraction.md) and the gate it must pass
 * before anything is stored (seed 000, "Task extraction prompt behavior"): the model's markdown must
 * hold `# Task`, `## Questions` and the control fields `TaskDetected`, `Status`, `NoTaskReason`. The
 * runner checks it to say at once what went wrong; the host checks it again before it writes a card,
 * since the card is the host's and the run is not trusted. Pure text functions.
 */

/** The file (in the run's artifacts dir) holding the model's answer as it came. */
export const EXTRACTION_FILE = 'task.md';

export const CONTROL_FIELDS = ['TaskDetected', 'Status', 'NoTaskReason'] as const;

export type ExtractionGate =
  | {
      ok: true;
      taskDetected: boolean;
      status: string;
      noTaskReason: string;
      /** The card body to store: from `# Task` on, the control fields left out. */
      markdown: string;
      /** Open questions under `## Questions` (bullets, `- None.` excepted). */
      questions: number;
    }
  | { ok: false; why: string };

const CONTROL = /^\s*(?:[-*]\s+)?\**(TaskDetected|Status|NoTaskReason)\**\s*:\s*\**\s*(.*?)\s*$/i;
const TASK = /^#\s+Task\s*$/im;
const QUESTIONS = /^##\s+Questions\s*$/im;

/** The answer without a code fence around all of it (models like to wrap markdown in one). */
function unfence(text: string): string {
  const m = /^\s*```[a-z]*\s*\n([\s\S]*?)\n```\s*$/i.exec(text);
  return m ? m[1]! : text;
}

/** Checks an extraction answer; `ok: false` says what is missing or wrong, in words for the person. */
export function gateExtraction(answer: string): ExtractionGate {
  const text = unfence(answer.replace(/\r\n/g, '\n'));
  if (!text.trim()) return { ok: false, why: 'the model answered with nothing' };
  const fields = new Map<string, string>();
  const kept: string[] = [];
  for (const line of text.split('\n')) {
    const m = CONTROL.exec(line);
    if (m && !fields.has(m[1]!.toLowerCase())) {
      fields.set(m[1]!.toLowerCase(), m[2]!.replace(/\*+$/, '').trim());
      continue;
    }
    kept.push(line);
  }
  const missing = [
    ...(TASK.test(text) ? [] : ['# Task']),
    ...(QUESTIONS.test(text) ? [] : ['## Questions']),
    ...CONTROL_FIELDS.filter((f) => !fields.has(f.toLowerCase())),
  ];
  if (missing.length)
    return { ok: false, why: `the answer lacks ${missing.join(', ')} (the prompt's output contract)` };
  const detected = fields.get('taskdetected')!.toLowerCase();
  if (!['true', 'false', 'yes', 'no'].includes(detected))
    return { ok: false, why: `TaskDetected is "${fields.get('taskdetected')}", not true or false` };
  const body = kept.join('\n');
  const start = body.search(TASK);
  const markdown = body.slice(start).trim() + '\n';
  return {
    ok: true,
    taskDetected: detected === 'true' || detected === 'yes',
    status: fields.get('status')!,
    noTaskReason: fields.get('notaskreason')!,
    markdown,
    questions: openQuestions(markdown),
  };
}

function openQuestions(markdown: string): number {
  const lines = markdown.split('\n');
  const head = lines.findIndex((l) => QUESTIONS.test(l));
  let n = 0;
  for (let i = head + 1; i < lines.length && !/^#{1,2}\s/.test(lines[i]!); i++)
    if (/^[-*]\s+(?:\[ \]\s+)?\S/.test(lines[i]!) && !/^[-*]\s+None\b/i.test(lines[i]!)) n++;
  return n;
}
