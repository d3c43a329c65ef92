// The recorder's view of a window's elements (recording.ts): what a point hits, where a field is in the
// tree, which rectangles hold password fields, and a frame with those masked. Pure: no I/O.
import type { ElementPathStep, ManifestElement } from '@runboard/project/recording';
import type { Element, RecorderFrame, Rect } from './types.ts';

const MASK_GREY = 0x80;
const MASK_MARGIN_PX = 12;

function contains(b: Rect, x: number, y: number): boolean {
  return b[2] > 0 && b[3] > 0 && x >= b[0] && y >= b[1] && x < b[0] + b[2] && y < b[1] + b[3];
}

/** Roles whose children are cut off at their edges (AT-SPI reports a scrolled-away child's bounds as they are). */
const CLIPS = new Set(['scroll pane', 'viewport']);

/** An element with the path to it from the window's root. */
type Found = { element: Element; path: ElementPathStep[] };

/**
 * Every element in tree order with its path (each step: its role's index among its siblings).
 * `visit` says 'stop' to end the walk, 'skip' to leave the element's children out.
 */
function walkPaths(
  roots: Element[],
  visit: (e: Element, path: ElementPathStep[]) => 'stop' | 'skip' | void,
): void {
  const walk = (els: Element[], trail: ElementPathStep[]): boolean => {
    const seen = new Map<string, number>();
    for (const e of els) {
      const index = seen.get(e.role) ?? 0;
      seen.set(e.role, index + 1);
      const here = [...trail, { role: e.role, name: e.name, index }];
      const next = visit(e, here);
      if (next === 'stop' || (next !== 'skip' && walk(e.children, here))) return true;
    }
    return false;
  };
  walk(roots, []);
}

/** The deepest element whose bounds hold the point, with the path to it. */
export function hitTest(roots: Element[], x: number, y: number): Found | undefined {
  let best: Found | undefined;
  walkPaths(roots, (e, path) => {
    // A clipping element's children beyond its edges are scrolled out of sight.
    if (!contains(e.bounds, x, y)) return CLIPS.has(e.role) ? 'skip' : undefined;
    const area = e.bounds[2] * e.bounds[3];
    const bestArea = best ? best.element.bounds[2] * best.element.bounds[3] : Infinity;
    if (path.length > (best?.path.length ?? 0) || area < bestArea) best = { element: e, path };
  });
  return best;
}

/** Every element `pick` accepts, each with its path. */
export function all(roots: Element[], pick: (e: Element) => boolean): Found[] {
  const out: Found[] = [];
  walkPaths(roots, (e, path) => {
    if (pick(e)) out.push({ element: e, path });
  });
  return out;
}

/** The first element in tree order that `pick` accepts, with its path. */
export function findPath(roots: Element[], pick: (e: Element) => boolean): Found | undefined {
  let found: Found | undefined;
  walkPaths(roots, (e, path) => {
    if (!pick(e)) return undefined;
    found = { element: e, path };
    return 'stop';
  });
  return found;
}

/**
 * Password fields' bounds (or those `isSecret` accepts), with a margin: AT-SPI reports a GTK entry's
 * bounds up to ~20 px apart between reads.
 */
export function secrets(roots: Element[], isSecret: (e: Element) => boolean = (e) => e.secret): Rect[] {
  const out: Rect[] = [];
  const m = MASK_MARGIN_PX;
  const walk = (els: Element[]): void => {
    for (const e of els) {
      if (isSecret(e)) out.push([e.bounds[0] - m, e.bounds[1] - m, e.bounds[2] + 2 * m, e.bounds[3] + 2 * m]);
      walk(e.children);
    }
  };
  walk(roots);
  return out;
}

export function manifestElement(
  hit: { element: Element; path: ElementPathStep[] },
  isSecret: (e: Element) => boolean = (e) => e.secret,
): ManifestElement {
  const e = hit.element;
  return {
    role: e.role,
    name: e.name,
    bounds: e.bounds,
    path: hit.path,
    ...(isSecret(e) ? { secret: true } : {}),
  };
}

/** A copy of the frame with the rectangles (screen coordinates) filled grey. */
export function masked(frame: RecorderFrame, rects: Rect[]): Buffer {
  if (rects.length === 0) return frame.data;
  const out = Buffer.from(frame.data);
  const [ox, oy] = frame.source;
  for (const [rx, ry, rw, rh] of rects) {
    const x0 = Math.max(0, rx - ox);
    const y0 = Math.max(0, ry - oy);
    const x1 = Math.min(frame.width, rx - ox + rw);
    const y1 = Math.min(frame.height, ry - oy + rh);
    for (let y = y0; y < y1; y++) out.fill(MASK_GREY, (y * frame.width + x0) * 4, (y * frame.width + x1) * 4);
  }
  return out;
}
