/**
 * Matching a recorded locator against what the desktop shows now, pure: the window it was in (app,
 * title), then its path from the window's root (role, name and position among same-role siblings at
 * each level). An element at the recorded place, showing and enabled, lets a step run without a model;
 * anything else is drift, said in words for the model and the report. locate.ts reads the desktop and
 * asks these.
 */
import type { Element, ElementPathStep, Rect, WindowInfo } from '@runboard/native';
import type { OutcomeCheck } from '@runboard/supervisor/protocol';
import type { Locator, RecordedWindow } from './plan.ts';

/** How far (px, per axis, relative to its window) an element's centre may be from where it was recorded. */
export const MOVE_TOLERANCE_PX = 16;

export type Located = { ok: true; element: Element; window: WindowInfo } | { ok: false; drift: string };

/** The recorded window among the open ones (or the focused one when none was recorded), or why not. */
export function pickWindow(wins: WindowInfo[], rec: RecordedWindow | undefined): WindowInfo | string {
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

/** Every element of a tree, depth first. */
export function* all(els: Element[]): Generator<Element> {
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

/** The recorded element in a window's tree, if it is there as recorded. */
export function match(
  elements: Element[],
  win: WindowInfo,
  loc: Locator,
  rec: RecordedWindow | undefined,
  /** anywhere: where the element is does not matter (reading a value, not acting at a place). */
  o: { anywhere?: boolean } = {},
): Located {
  let e = loc.path.length ? walk(elements, loc.path) : undefined;
  if (!e) {
    // No path (or it broke): one element with the same role and name anywhere in the window.
    const same = [...all(elements)].filter((x) => x.role === loc.role && x.name === loc.name);
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

/** Whether an outcome check holds in a tree (role, name and value as given). */
export function checkIn(elements: Element[], c: OutcomeCheck): boolean {
  for (const e of all(elements))
    if (
      (c.role === undefined || e.role === c.role) &&
      (c.name === undefined || e.name === c.name) &&
      (c.value === undefined || e.value === c.value)
    )
      return true;
  return false;
}

/** The focused editable element of a tree (where typed keys go), if any. */
export function focusedIn(elements: Element[]): Element | undefined {
  for (const e of all(elements)) if (e.focused && e.editable) return e;
  return undefined;
}
