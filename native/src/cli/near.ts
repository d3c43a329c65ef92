// --near (click --text T --near): the interactive element nearest an element found by its text, as
// the public desktop-cli does for controls the text labels (a check box left of its label, an entry
// right of it). Pure: the window's compact tree in, the anchor and the pick out.
import type { CompactElement } from '../desktop/compact.ts';
import { allCompact, textMatches } from './format.ts';

export const NEAR_DIRECTIONS = ['left', 'right', 'up', 'down'] as const;
export type NearDirection = (typeof NEAR_DIRECTIONS)[number];

type Box = CompactElement['b'];
const cx = (b: Box) => b[0] + b[2] / 2;
const cy = (b: Box) => b[1] + b[3] / 2;
const interactive = (el: CompactElement) => el.a !== undefined || el.r === 'input';
const contains = (o: Box, i: Box) =>
  o[0] <= i[0] && o[1] <= i[1] && o[0] + o[2] >= i[0] + i[2] && o[1] + o[3] >= i[1] + i[3];

/** The gap between two boxes (0 when they touch or overlap). */
function gap(a: Box, b: Box): number {
  const dx = Math.max(0, a[0] - (b[0] + b[2]), b[0] - (a[0] + a[2]));
  const dy = Math.max(0, a[1] - (b[1] + b[3]), b[1] - (a[1] + a[3]));
  return Math.hypot(dx, dy);
}

function inDirection(anchor: Box, b: Box, dir: NearDirection | undefined): boolean {
  switch (dir) {
    case 'left':
      return cx(b) < cx(anchor);
    case 'right':
      return cx(b) > cx(anchor);
    case 'up':
      return cy(b) < cy(anchor);
    case 'down':
      return cy(b) > cy(anchor);
    default:
      return true;
  }
}

/**
 * The elements whose text matches: the label itself is wanted here, so text elements are preferred
 * to the controls they name (a GTK entry takes its label's name), exact matches to partial ones.
 */
export function nearAnchors(tree: CompactElement[], text: string, exact = false): CompactElement[] {
  let hits = allCompact(tree).filter((el) => el.b[2] > 0 && el.b[3] > 0 && textMatches(el, text, exact));
  const exactHits = hits.filter((el) => textMatches(el, text, true));
  if (exactHits.length > 0) hits = exactHits;
  const passive = hits.filter((el) => !interactive(el));
  return passive.length > 0 ? passive : hits;
}

/**
 * The interactive element nearest the anchor (the smallest gap between the boxes, then the nearest
 * centre), in one direction when given; never the anchor or an element that holds it (its row, its
 * window). Undefined when there is none.
 */
export function nearest(
  tree: CompactElement[],
  anchor: CompactElement,
  dir?: NearDirection,
): CompactElement | undefined {
  let best: { el: CompactElement; g: number; c: number } | undefined;
  for (const el of allCompact(tree)) {
    if (el.i === anchor.i || !interactive(el) || el.b[2] <= 0 || el.b[3] <= 0) continue;
    if (contains(el.b, anchor.b) || !inDirection(anchor.b, el.b, dir)) continue;
    const g = gap(anchor.b, el.b);
    const c = Math.hypot(cx(el.b) - cx(anchor.b), cy(el.b) - cy(anchor.b));
    if (!best || g < best.g || (g === best.g && c < best.c)) best = { el, g, c };
  }
  return best?.el;
}

/** Where to click when nothing interactive is near: just outside the text, on the side asked (left by default). */
export function besideText(anchor: CompactElement, dir: NearDirection = 'left'): [number, number] {
  const [x, y, w, h] = anchor.b;
  const off = 10;
  switch (dir) {
    case 'right':
      return [x + w + off, Math.round(y + h / 2)];
    case 'up':
      return [Math.round(x + w / 2), y - off];
    case 'down':
      return [Math.round(x + w / 2), y + h + off];
    default:
      return [Math.max(0, x - off), Math.round(y + h / 2)];
  }
}
