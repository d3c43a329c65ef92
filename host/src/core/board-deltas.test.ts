import { describe, expect, it } from 'vitest';
import type { BoardView, CardView } from '../shared/board-types.ts';
import { BoardDeltas } from './board-deltas.ts';

const shell = { flow: 'shell', locked: false } as const;
const card = (id: string, column: CardView['column'] = 'backlog'): CardView => ({
  id,
  title: id,
  file: `${id}.md`,
  column,
  ...shell,
});

describe('board deltas', () => {
  it('announce only what changed, numbered from → to; the rest of the board only when it changed', () => {
    let view: Omit<BoardView, 'version'> = {
      project: '/p',
      cards: [card('a'), card('b')],
      maxConcurrency: 2,
      running: 0,
      waitingForYou: 0,
      flows: [],
      columnLimits: {},
    };
    const d = new BoardDeltas(
      () => view,
      () => undefined,
    );
    const first = d.diff()!;
    expect(first).toMatchObject({ from: 0, to: 1, removed: [] });
    expect(first.cards.map((c) => c.id)).toEqual(['a', 'b']);
    expect(first.meta).toBeDefined();
    expect(d.diff()).toBeUndefined();
    view = { ...view, cards: [card('a', 'queued')] };
    const second = d.diff()!;
    expect(second).toEqual({ from: 1, to: 2, cards: [card('a', 'queued')], removed: ['b'] });
    view = { ...view, maxConcurrency: 3 };
    expect(d.diff()).toMatchObject({ from: 2, to: 3, cards: [], meta: { maxConcurrency: 3 } });
    expect(d.version).toBe(3);
  });

  it('coalesces a burst into one announcement', async () => {
    let n = 0;
    const announced: unknown[] = [];
    const d = new BoardDeltas(
      () => ({
        project: '/p',
        cards: [card(`c${n}`)],
        maxConcurrency: 1,
        running: 0,
        waitingForYou: 0,
        flows: [],
        columnLimits: {},
      }),
      (delta) => announced.push(delta),
    );
    for (n = 0; n < 5; n++) d.soon(5);
    await new Promise((r) => setTimeout(r, 30));
    expect(announced).toHaveLength(1);
    d.stop();
  });
});
