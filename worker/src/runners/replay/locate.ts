/**
 * Finding a recorded element again by its accessibility locator: the windows and trees read off the
 * desktop, matched by match.ts (pure: the window, the element's path, drift in words).
 */
import { desktop, type Element, type Rect, type WindowInfo } from '@runboard/native';
import type { OutcomeCheck } from '@runboard/supervisor/protocol';
import { all, checkIn, focusedIn, match, pickWindow, type Located } from './match.ts';
import type { Locator, RecordedWindow } from './plan.ts';

/** Told the bounds of every password field a read comes across (replay masks them in its screenshots). */
let secretFields: ((r: Rect) => void) | undefined;
export function onSecretFields(fn: ((r: Rect) => void) | undefined): void {
  secretFields = fn;
}

/** A window's tree, read, with its password fields told to onSecretFields. */
async function readTree(windowId: number) {
  const tree = await desktop.read({ windowId, actions: false });
  if (secretFields) for (const e of all(tree.elements)) if (e.secret && e.visible) secretFields(e.bounds);
  return tree;
}

export async function findWindow(rec: RecordedWindow | undefined): Promise<WindowInfo | string> {
  return pickWindow(await desktop.listWindows().catch(() => []), rec);
}

/** The recorded element, if it is there as recorded. */
export async function locate(
  loc: Locator,
  rec: RecordedWindow | undefined,
  /** anywhere: where the element is does not matter (reading a value, not acting at a place). */
  o: { anywhere?: boolean } = {},
): Promise<Located> {
  const win = await findWindow(rec);
  if (typeof win === 'string') return { ok: false, drift: win };
  let tree;
  try {
    tree = await readTree(win.id);
  } catch (err) {
    return {
      ok: false,
      drift: `the window "${win.title}" has no readable accessibility tree (${(err as Error).message})`,
    };
  }
  return match(tree.elements, win, loc, rec, o);
}

/** Whether an outcome check holds in some window now (role, name and value as given). */
export async function checkHolds(c: OutcomeCheck): Promise<boolean> {
  const wins = await desktop.listWindows().catch(() => []);
  for (const w of wins) {
    const tree = await readTree(w.id).catch(() => undefined);
    if (tree && checkIn(tree.elements, c)) return true;
  }
  return false;
}

/** The focused editable element of a window (where typed keys go), if any. */
export async function focusedField(win: WindowInfo): Promise<Element | undefined> {
  const tree = await readTree(win.id).catch(() => undefined);
  return tree ? focusedIn(tree.elements) : undefined;
}
