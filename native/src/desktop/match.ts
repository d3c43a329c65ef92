// Finding an element again after a fresh read, by a signature rather than by traversal order alone:
// ids shift when the UI changes between `read` and `click --id`.
import type { Rect } from './types.ts';

/** What a read remembers of an element: short role, title, bounds relative to the window's origin. */
export interface Signature {
  r: string;
  t: string;
  b: Rect;
}

export interface Candidate extends Signature {
  i: number;
}

export type MatchResult =
  | { ok: true; id: number; moved: boolean }
  | { ok: false; reason: 'gone' | 'ambiguous'; candidates: number[] };

/** How far (px, per axis of the centre) an element may move and still count as "at the same place". */
export const POSITION_TOLERANCE = 8;

function centre(b: Rect): [number, number] {
  return [b[0] + b[2] / 2, b[1] + b[3] / 2];
}

function near(a: Rect, b: Rect): boolean {
  const [ax, ay] = centre(a);
  const [bx, by] = centre(b);
  return Math.abs(ax - bx) <= POSITION_TOLERANCE && Math.abs(ay - by) <= POSITION_TOLERANCE;
}

/**
 * The element with the same role and title; when several have them, the one still at the same
 * place (its old id breaks a tie). None: gone. Several and none (or several) at the old place: ambiguous.
 */
export function matchSignature(sig: Signature, oldId: number, now: Candidate[]): MatchResult {
  const same = now.filter((c) => c.r === sig.r && c.t === sig.t);
  if (same.length === 0) return { ok: false, reason: 'gone', candidates: [] };
  if (same.length === 1) {
    const only = same[0]!;
    return { ok: true, id: only.i, moved: !near(only.b, sig.b) };
  }
  const here = same.filter((c) => near(c.b, sig.b));
  if (here.length === 1) return { ok: true, id: here[0]!.i, moved: false };
  const sameId = here.find((c) => c.i === oldId);
  if (sameId) return { ok: true, id: sameId.i, moved: false };
  return { ok: false, reason: 'ambiguous', candidates: same.map((c) => c.i) };
}
