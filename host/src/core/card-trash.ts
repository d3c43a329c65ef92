/**
 * The board's trash folder (`cards/.trash/`): a card file (or a broken entry) and its folder moved
 * there under a dated name, listed newest first, and put back under the old name (or `-restored-N`
 * when that is taken meanwhile). The board store (board-store.ts) keeps its state in step.
 */
import { lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { TrashedCard } from '../shared/board-types.ts';
import { cardFolder, moveFolder, placeBack } from './card-files.ts';
import { parseTrashName, trashName } from './card-edit.ts';

/** Moves `file` (and its folder) into `trashDir`. */
export function trashCardFile(trashDir: string, file: string): TrashedCard {
  mkdirSync(trashDir, { recursive: true });
  const base = path.basename(file);
  const name = trashName(base, new Date());
  const folder = cardFolder(file);
  renameSync(file, path.join(trashDir, name));
  moveFolder(folder, path.join(trashDir, name.replace(/\.md$/, '')));
  return { name, file: base, at: parseTrashName(name)!.at };
}

/** The trash folder's cards, newest first. */
export function trashedCards(trashDir: string): TrashedCard[] {
  let names: string[];
  try {
    names = readdirSync(trashDir);
  } catch {
    return [];
  }
  const out: TrashedCard[] = [];
  for (const name of names) {
    const t = parseTrashName(name);
    if (t) out.push({ name, ...t });
  }
  return out.sort((a, b) => (a.name < b.name ? 1 : -1));
}

/** Puts the trashed card `name` back into `cardsDir`; returns its file (ENOENT: not in the trash). */
export function restoreCardFile(trashDir: string, cardsDir: string, name: string): string {
  const t = parseTrashName(name);
  if (!t) throw new Error(`not a trashed card: ${name}`);
  const from = path.join(trashDir, name);
  lstatSync(from); // ENOENT: not (or no longer) in the trash
  const stem = path.basename(t.file, '.md');
  for (let n = 1; ; n++) {
    const file = path.join(cardsDir, n === 1 ? t.file : `${stem}-restored${n === 2 ? '' : `-${n - 1}`}.md`);
    if (!placeBack(from, file)) continue;
    moveFolder(cardFolder(from), file.replace(/\.md$/, ''));
    return file;
  }
}
