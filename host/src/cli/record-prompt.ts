/**
 * The small prompt window of `runboard record` (Ctrl+I, seed 002): an extract (a query to read off the
 * screen as it is now, with optional candidate values) or details (a note for the next step). A GTK
 * dialog by zenity (a well-kept tool for exactly this; the addon has no toolkit of its own): one form
 * with the kind, the query or note, and the candidates. Cancelled or closed: nothing is added.
 */
import { spawn } from 'node:child_process';

export type PromptAnswer = (
  | { kind: 'extract'; query: string; candidates: string[] }
  | { kind: 'details'; note: string }
  | { kind: 'none' }
) & { warning?: string };

export const PROMPT_TITLE = 'Runboard: add to the recording';

/** Reads zenity's answer: "Kind|text|candidates" (the separator is a tab here). */
export function parseAnswer(out: string): PromptAnswer {
  const [rawKind = '', text = '', candidates = ''] = out.replace(/\n$/, '').split('\t');
  const kind = rawKind.trim(); // zenity answers " " for a combo left alone
  if (!text.trim()) return { kind: 'none' };
  const list = candidates
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  // No kind chosen: candidates make it an extract, else a note.
  if (kind === 'Extract' || (kind === '' && list.length > 0))
    return { kind: 'extract', query: text.trim(), candidates: list };
  return { kind: 'details', note: text.trim() };
}

export function askContext(zenity = 'zenity'): Promise<PromptAnswer> {
  return new Promise((resolve) => {
    const child = spawn(
      zenity,
      [
        '--forms',
        `--title=${PROMPT_TITLE}`,
        '--text=The recording is paused. Extract: what to read off the screen now. Details: a note for the next step.',
        '--add-combo=Kind',
        '--combo-values=Extract|Details',
        '--add-entry=Query or note',
        '--add-entry=Candidate values (extract, comma-separated)',
        '--separator=\t',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => (out += d));
    child.once('error', (err) =>
      resolve({
        kind: 'none',
        warning: `the Ctrl+I window could not be shown (${err.message}): install zenity; nothing was added`,
      }),
    );
    child.once('exit', (code) => resolve(code === 0 ? parseAnswer(out) : { kind: 'none' }));
  });
}
