/** Which cards the board shows: a search over titles (and file names), one flow, one column. Pure. */
import type { CardView, Column } from '../shared/board-types.ts';

export interface CardFilter {
  text: string;
  flow: string;
  status: Column | '';
}

export const NO_FILTER: CardFilter = { text: '', flow: '', status: '' };

export function isFiltering(f: CardFilter): boolean {
  return f.text.trim() !== '' || f.flow !== '' || f.status !== '';
}

/** Every word of the search must be in the title or the file name (any case); flow and column exact. */
export function matches(c: CardView, f: CardFilter): boolean {
  if (f.flow && c.flow !== f.flow) return false;
  if (f.status && c.column !== f.status) return false;
  const words = f.text.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return true;
  const hay = `${c.title}\n${c.file}`.toLowerCase();
  return words.every((w) => hay.includes(w));
}

/** The card a URL names (`#card=<id>`), if any. */
export function cardOfHash(hash: string): string | undefined {
  const id = new URLSearchParams(hash.replace(/^#/, '')).get('card');
  return id ? id : undefined;
}

/** The hash that names `id` (or none). */
export function hashOf(id: string | undefined): string {
  return id ? `#${new URLSearchParams({ card: id }).toString()}` : '';
}
