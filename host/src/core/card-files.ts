/**
 * The card files of a board on disk, without the board's state: atomic writes, a card's own folder, ids
 * from file names, the front matter patch that keeps comments and order. Used by the board store
 * (board-store.ts) and by everything else that writes a card file (recordings, extraction, workflows).
 */
import { linkSync, lstatSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { readRegularFileSync, rewriteInPlaceSync } from './regular-file.ts';

/** Card files are read only as regular files, never through a link (regular-file.ts). */
export const readCard = (file: string): string => readRegularFileSync(file, { noFollow: true });

const FRONT = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/**
 * Writes `text` to `file` only if no entry has that name: a temp file hard-linked into place (the link
 * fails when the name is taken, with no window for a race). False when it was taken.
 */
export function writeNew(file: string, text: string): boolean {
  const tmp = path.join(path.dirname(file), `.new.${process.pid}.${Date.now()}.tmp`);
  writeFileSync(tmp, text, { flag: 'wx' });
  try {
    linkSync(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(tmp);
  }
}

/**
 * Writes `text` to `file` atomically: a crash leaves the old file or the new one, never half of one.
 * With `unchangedFrom`, the file must still hold that text right before the rename (a person's editor
 * may have saved it meanwhile): returns false, writing nothing, when it does not.
 */
export function writeAtomic(file: string, text: string, unchangedFrom?: string): boolean {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(tmp, text);
    if (unchangedFrom !== undefined && readRegularFileSync(file, { noFollow: true }) !== unchangedFrom) {
      unlinkSync(tmp);
      return false;
    }
    renameSync(tmp, file);
    return true;
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // nothing to clean
    }
    throw err;
  }
}

/**
 * Writes a file that runs may have bound read-only (the project's config.yaml) in place, so that their
 * mounts stay on it (rewriteInPlaceSync); as writeAtomic when it is not a regular file of one link.
 */
export function writeBoundFile(file: string, text: string, unchangedFrom?: string): boolean {
  return rewriteInPlaceSync(file, text, unchangedFrom) ?? writeAtomic(file, text, unchangedFrom);
}

/**
 * Moves `from` to `to` unless `to` exists (false then). A file is hard-linked (no race with a file
 * appearing meanwhile); a directory named *.md (a broken card) cannot be, and is renamed after a check.
 */
export function placeBack(from: string, to: string): boolean {
  try {
    linkSync(from, to);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM') throw err;
    try {
      lstatSync(to);
      return false;
    } catch {
      renameSync(from, to);
      return true;
    }
  }
  unlinkSync(from);
  return true;
}

/**
 * A card's own folder (`cards/<card>/`: its workflow and what else belongs to that card), when it is
 * a real directory; a link there is never followed.
 */
export function cardFolder(cardFile: string): string | undefined {
  const dir = cardFile.replace(/\.md$/i, '');
  try {
    return lstatSync(dir).isDirectory() ? dir : undefined;
  } catch {
    return undefined;
  }
}

/** Moves a card's folder along with its file, when there is one and `to` is free. */
export function moveFolder(from: string | undefined, to: string): void {
  if (!from) return;
  try {
    lstatSync(to);
    return; // taken: the folder stays where it is rather than replacing another card's
  } catch {
    renameSync(from, to);
  }
}

/** A card id from its file name: stable, readable, unique within the folder. */
export function idFromFile(file: string): string {
  return (
    path
      .basename(file, '.md')
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'card'
  );
}

/** Sets (or, for undefined, removes) front matter fields, keeping comments, order and the body. */
export function patchFrontMatter(
  text: string,
  patch: Record<string, unknown>,
  editBody: (body: string) => string = (b) => b,
): string {
  const m = FRONT.exec(text);
  if (!m) throw new Error('no front matter');
  const doc = YAML.parseDocument(m[1]!);
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) doc.delete(k);
    else doc.set(k, v);
  }
  const front = doc.toString({ lineWidth: 0 });
  return `---\n${front.endsWith('\n') ? front : front + '\n'}---\n${editBody(m[2]!)}`;
}

/** The text of a card body's `## Questions` section, if any. */
export function questionsOf(body: string): string | undefined {
  const m = /^##\s+Questions\s*$([\s\S]*?)(?=^#{1,2}\s|$(?![\s\S]))/m.exec(body);
  const text = m?.[1]?.trim();
  return text ? text : undefined;
}
