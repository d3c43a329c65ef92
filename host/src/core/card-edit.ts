/**
 * Card files written from the board: a new card's text (front matter a person would write, then the
 * markdown body), a copy's text, file names from titles, and the names of trashed cards. Pure: the
 * store (board-store.ts) does the file system.
 */
import YAML from 'yaml';

/** Front matter the host writes about a card's runs: a copy starts without any of it. */
const RUN_STATE = ['id', 'status', 'rank', 'lastRun', 'failures', 'nextTryAt', 'lastError', 'needs'] as const;

const FRONT = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** A card file's text: `---`, the fields in the order given (undefined ones left out), `---`, the body. */
export function cardText(front: Record<string, unknown>, body: string): string {
  const fields = Object.fromEntries(Object.entries(front).filter(([, v]) => v !== undefined));
  const yaml = new YAML.Document(fields).toString({ lineWidth: 0 });
  const text = body.replace(/\r\n/g, '\n');
  return `---\n${yaml}---\n${text === '' || text.endsWith('\n') ? text : `${text}\n`}`;
}

/** A file name stem from a title: lowercase words joined by dashes, at most 60 characters. */
export function slugOf(title: string): string {
  const slug = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return slug || 'card';
}

/**
 * The text of a copy of a card: the same file with the host's run state left out (a copy is a new
 * card in Backlog that never ran) and its title marked as a copy; comments and the body stay.
 */
export function duplicateText(text: string, title: string): string {
  const m = FRONT.exec(text);
  if (!m) throw new Error('no front matter');
  const doc = YAML.parseDocument(m[1]!);
  for (const k of RUN_STATE) doc.delete(k);
  doc.set('title', `${title} (copy)`);
  const front = doc.toString({ lineWidth: 0 });
  return `---\n${front.endsWith('\n') ? front : front + '\n'}---\n${m[2]!}`;
}

/** A trashed card's name in the trash folder: when it was trashed, then its file name. */
export function trashName(file: string, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.(\d+)Z$/, '$1Z');
  return `${stamp}-${file}`;
}

const TRASHED = /^(\d{8}T\d{9}Z)-([^/\\]+\.md)$/;

/** The original file name and trash time of a trash entry, or undefined when `name` is none. */
export function parseTrashName(name: string): { file: string; at: string } | undefined {
  const m = TRASHED.exec(name);
  if (!m || m[2]!.startsWith('.')) return undefined;
  const s = m[1]!;
  const at = `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}.${s.slice(15, 18)}Z`;
  return { file: m[2]!, at };
}
