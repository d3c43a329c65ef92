/**
 * Pure board rules: column order, where a moved card lands (which moves a person may make: card-lifecycle.ts).
 * No I/O; the BoardService applies the answers.
 */
import type { Ranked } from '../shared/card-order.ts';

export { compareCards, type Ranked } from '../shared/card-order.ts';
/** Which moves a person may make is part of the card lifecycle. */
export { moveRefusal } from './card-lifecycle.ts';

/**
 * When the board first saw each card file: its modification time then (a card present at start was
 * written before one added later), remembered so a later edit does not move the card.
 */
export class Arrivals {
  private readonly seen = new Map<string, number>();
  constructor(private readonly mtimeOf: (file: string) => number) {}
  of(file: string): number {
    let t = this.seen.get(file);
    if (t === undefined) {
      try {
        t = this.mtimeOf(file);
      } catch {
        t = Date.now();
      }
      this.seen.set(file, t);
    }
    return t;
  }
}

const STEP = 1024;

/**
 * Ranks to write so that `movedId` sits at `index` of `column` (the column's cards in order, the moved
 * card possibly among them). Usually one write (the moved card, between its neighbours); when the
 * neighbours have no room (or no ranks), the whole column is renumbered.
 */
export function ranksForMove(column: readonly Ranked[], movedId: string, index: number): Map<string, number> {
  const others = column.filter((c) => c.id !== movedId);
  const at = Math.max(0, Math.min(index, others.length));
  const prev = others[at - 1];
  const next = others[at];
  const out = new Map<string, number>();
  const pr = prev ? prev.rank : undefined;
  const nr = next ? next.rank : undefined;
  // Cards without a rank sort after the ranked ones. When the column is in that shape (as sorted by
  // compareCards), a move into the rankless tail ranks only the cards up to the drop point: moving to the
  // top of a 700-card column of rankless cards is one write, not 700.
  const firstRankless = others.findIndex((c) => c.rank === undefined);
  const tidy = firstRankless === -1 || others.slice(firstRankless).every((c) => c.rank === undefined);
  if (tidy && ((prev && pr === undefined) || (next && nr === undefined))) {
    let rank = others.slice(0, Math.min(at, firstRankless)).reduce((m, c) => Math.max(m, c.rank!), 0);
    for (const c of others.slice(firstRankless, at)) out.set(c.id, (rank += STEP));
    out.set(movedId, rank + STEP);
    return out;
  }
  if ((prev && pr === undefined) || (next && nr === undefined)) {
    const order = [...others.slice(0, at).map((c) => c.id), movedId, ...others.slice(at).map((c) => c.id)];
    order.forEach((id, i) => {
      const want = (i + 1) * STEP;
      const had = column.find((c) => c.id === id)?.rank;
      if (had !== want) out.set(id, want);
    });
    return out;
  }
  let rank: number;
  if (pr === undefined && nr === undefined) rank = STEP;
  else if (pr === undefined) rank = nr! - STEP;
  else if (nr === undefined) rank = pr + STEP;
  else {
    rank = (pr + nr) / 2;
    if (!(rank > pr && rank < nr)) {
      // no room left between them (float precision): renumber
      const order = [...others.slice(0, at).map((c) => c.id), movedId, ...others.slice(at).map((c) => c.id)];
      order.forEach((id, i) => out.set(id, (i + 1) * STEP));
      return out;
    }
  }
  out.set(movedId, rank);
  return out;
}
