/**
 * Finding a recorded element again by its accessibility locator: the window it was in (app, title),
 * then its path from the window's root (role, name and position among same-role siblings at each
 * level). A locator that resolves to an element at the recorded place, showing and enabled, lets a step
 * run without a model; anything else is drift, said in words for the model and the report.
 */
import { desktop, type Element, type ElementPathStep, type Rect, type WindowInfo } from '@runboard/native';
import type { OutcomeCheck } from '@runboard/supervisor/protocol';
import type { Locator, RecordedWindow } from './plan.ts';

/** How far (px, per axis, relative to its window) an element's centre may be from where it was recorded. */
export const MOVE_TOLERANCE_PX = 16;

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

export type Located = { ok: true; element: Element; window: WindowInfo } | { ok: false; drift: string };

export async function findWindow(rec: RecordedWindow | undefined): Promise<WindowInfo | string> {
  const wins = await desktop.listWindows().catch(() => []);
  if (!rec) return wins.find((w) => w.focused) ?? wins.at(-1) ?? 'no window is open';
  const exact = wins.filter((w) => w.title === rec.title && (!rec.app || w.app === rec.app));
  if (exact.length >= 1) return exact.find((w) => w.focused) ?? exact[0]!;
  const sameApp = wins.filter((w) => rec.app && w.app === rec.app);
  if (sameApp.length === 1) return sameApp[0]!;
  return `the window "${rec.title}" (${rec.app || 'any app'}) is not open`;
}

function pathStep(els: Element[], s: ElementPathStep): Element | undefined {
  const same = els.filter((e) => e.role === s.role);
  const at = same[s.index];
  if (at && at.name === s.name) return at;
  // The same role and name elsewhere among the siblings (one more came before it): still this one.
  const named = same.filter((e) => e.name === s.name);
  return named.length === 1 ? named[0] : undefined;
}

function walk(roots: Element[], p: ElementPathStep[]): Element | undefined {
  let level = roots;
  let found: Element | undefined;
  for (const s of p) {
    found = pathStep(level, s);
    if (!found) return undefined;
    level = found.children;
  }
  return found;
}

function* all(els: Element[]): Generator<Element> {
  for (const e of els) {
    yield e;
    yield* all(e.children);
  }
}

const centre = (b: Rect): [number, number] => [b[0] + b[2] / 2, b[1] + b[3] / 2];

/** Where the element is now against where it was recorded, both relative to their window. */
function moved(now: Element, win: WindowInfo, loc: Locator, rec: RecordedWindow | undefined): boolean {
  if (!loc.bounds || !rec?.bounds) return false;
  const [nx, ny] = centre(now.bounds);
  const [rx, ry] = centre(loc.bounds);
  const dx = nx - win.bounds[0] - (rx - rec.bounds[0]);
  const dy = ny - win.bounds[1] - (ry - rec.bounds[1]);
  return Math.abs(dx) > MOVE_TOLERANCE_PX || Math.abs(dy) > MOVE_TOLERANCE_PX;
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
  let e = loc.path.length ? walk(tree.elements, loc.path) : undefined;
  if (!e) {
    // No path (or it broke): one element with the same role and name anywhere in the window.
    const same = [...all(tree.elements)].filter((x) => x.role === loc.role && x.name === loc.name);
    if (same.length === 1) e = same[0];
    else if (same.length > 1)
      return {
        ok: false,
        drift: `${same.length} elements are ${loc.role} "${loc.name}": which one is meant is not clear`,
      };
  }
  if (!e)
    return { ok: false, drift: `no ${loc.role} "${loc.name}" in "${win.title}" (renamed, or not on screen)` };
  if (e.role !== loc.role || e.name !== loc.name)
    return {
      ok: false,
      drift: `the element at the recorded place is ${e.role} "${e.name}", not ${loc.role} "${loc.name}"`,
    };
  if (!e.visible || e.bounds[2] <= 0 || e.bounds[3] <= 0)
    return { ok: false, drift: `${loc.role} "${loc.name}" is not showing` };
  if (!o.anywhere && !e.enabled) return { ok: false, drift: `${loc.role} "${loc.name}" is disabled` };
  if (!o.anywhere && moved(e, win, loc, rec))
    return { ok: false, drift: `${loc.role} "${loc.name}" moved from where it was recorded` };
  return { ok: true, element: e, window: win };
}

/** Whether an outcome check holds in some window now (role, name and value as given). */
export async function checkHolds(c: OutcomeCheck): Promise<boolean> {
  const wins = await desktop.listWindows().catch(() => []);
  for (const w of wins) {
    const tree = await readTree(w.id).catch(() => undefined);
    if (!tree) continue;
    for (const e of all(tree.elements))
      if (
        (c.role === undefined || e.role === c.role) &&
        (c.name === undefined || e.name === c.name) &&
        (c.value === undefined || e.value === c.value)
      )
        return true;
  }
  return false;
}

/** The focused editable element of a window (where typed keys go), if any. */
export async function focusedField(win: WindowInfo): Promise<Element | undefined> {
  const tree = await readTree(win.id).catch(() => undefined);
  if (!tree) return undefined;
  for (const e of all(tree.elements)) if (e.focused && e.editable) return e;
  return undefined;
}
