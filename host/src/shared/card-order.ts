/**
 * The order of cards in a column, written once: the host sorts the board with it (board-view.ts,
 * scheduler.ts, board-service.ts) and the renderer re-sorts with it after a delta (board-delta.ts).
 */
export interface Ranked {
  id: string;
  file: string;
  rank?: number | undefined;
  /** For a card without a rank: when the board first saw it (ms), so new cards go to the bottom. */
  arrival?: number | undefined;
}

/**
 * Column order: by rank; cards without one after those with one, oldest first (arrival), then by file
 * name. A card file someone adds lands at the end of its column, not wherever its name sorts.
 */
export function compareCards(a: Ranked, b: Ranked): number {
  const ra = a.rank ?? Number.POSITIVE_INFINITY;
  const rb = b.rank ?? Number.POSITIVE_INFINITY;
  if (ra !== rb) return ra < rb ? -1 : 1;
  const aa = a.arrival ?? 0;
  const ab = b.arrival ?? 0;
  if (aa !== ab) return aa < ab ? -1 : 1;
  return a.file < b.file ? -1 : a.file > b.file ? 1 : 0;
}
