/**
 * Board updates as deltas: the host keeps what it last announced (each card's view as JSON, and the
 * rest of the board) and, at most every 50 ms (at once after a person's move), announces the cards
 * whose view changed, the ids removed and the rest when it changed, numbered `from → to`
 * (docs/board.md, "Board updates: deltas").
 */
import type { BoardDelta, BoardView, CardView } from '../shared/board-types.ts';

export class BoardDeltas {
  private timer: NodeJS.Timeout | undefined;
  private at = 0;
  private current = 0;
  private readonly announced = new Map<string, string>();
  private announcedMeta = '';

  constructor(
    private readonly view: () => Omit<BoardView, 'version'>,
    private readonly announce: (delta: BoardDelta | undefined) => void,
  ) {}

  /** The version of the last delta: a board fetched now includes it. */
  get version(): number {
    return this.current;
  }

  /**
   * Coalesces bursts of changes (progress events, many card writes) into one delta per `ms`; a
   * person's own intent (a move) goes out on the next turn of the event loop (`ms` 0).
   */
  soon(ms = 50): void {
    const at = performance.now() + ms;
    if (this.timer && this.at <= at) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.announce(this.diff());
    }, ms);
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** The cards whose view changed since the last call (and the rest of the board, if it did). */
  diff(): BoardDelta | undefined {
    const { cards, ...meta } = this.view();
    const changed: CardView[] = [];
    const seen = new Set<string>();
    for (const c of cards) {
      seen.add(c.id);
      const json = JSON.stringify(c);
      if (this.announced.get(c.id) === json) continue;
      this.announced.set(c.id, json);
      changed.push(c);
    }
    const removed = [...this.announced.keys()].filter((id) => !seen.has(id));
    for (const id of removed) this.announced.delete(id);
    const metaJson = JSON.stringify(meta);
    const metaChanged = metaJson !== this.announcedMeta;
    this.announcedMeta = metaJson;
    if (!changed.length && !removed.length && !metaChanged) return undefined;
    const from = this.current++;
    return { from, to: this.current, cards: changed, removed, ...(metaChanged ? { meta } : {}) };
  }
}
