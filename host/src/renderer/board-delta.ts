/** Pure board updates of the renderer: applying a host delta (see BoardDelta in api.ts). */
import type { BoardDelta, BoardMeta, BoardView, CardView } from '../shared/board-types.ts';
import { compareCards } from '../shared/card-order.ts';

/** Column order as the host sorts (compareCards), broken cards last. */
export function order(a: CardView, b: CardView): number {
  if (!a.broken !== !b.broken) return a.broken ? 1 : -1;
  return compareCards(a, b);
}

/** The board with a delta applied (cards replaced by id, re-sorted only when one moved). */
export function applyDelta(board: BoardView, d: BoardDelta): BoardView {
  const next = new Map(d.cards.map((c) => [c.id, c]));
  const gone = new Set(d.removed);
  let resort = gone.size > 0;
  const cards: CardView[] = [];
  for (const c of board.cards) {
    if (gone.has(c.id)) continue;
    const n = next.get(c.id);
    if (!n) {
      cards.push(c);
      continue;
    }
    next.delete(c.id);
    if (n.column !== c.column || n.rank !== c.rank) resort = true;
    cards.push(n);
  }
  if (next.size) resort = true;
  cards.push(...next.values());
  if (resort) cards.sort(order);
  // A delta's meta is the whole rest of the board: a field it lacks (configError once config.yaml is
  // fixed) is gone, not kept from before.
  const meta = d.meta ?? metaOf(board);
  return { ...meta, version: d.to, cards };
}

function metaOf(board: BoardView): BoardMeta {
  const { cards: _cards, version: _version, ...meta } = board;
  return meta;
}
