import { describe, expect, it } from 'vitest';
import type { BoardView, CardView } from '../shared/board-types.ts';
import { applyDelta } from './board-delta.ts';

const card = (id: string, column: CardView['column'], rank?: number): CardView => ({
  id,
  file: `cards/${id}.md`,
  title: id,
  flow: 'shell',
  column,
  locked: false,
  ...(rank !== undefined ? { rank } : {}),
});
const board = (cards: CardView[]): BoardView => ({
  version: 3,
  project: '/p',
  cards,
  maxConcurrency: 2,
  running: 0,
  waitingForYou: 0,
  flows: [],
  columnLimits: {},
});

describe('applyDelta', () => {
  it('replaces changed cards, keeps the others, re-sorts a moved card into its rank', () => {
    const b = board([card('a', 'backlog', 1024), card('b', 'backlog', 2048), card('c', 'done', 1024)]);
    const next = applyDelta(b, { from: 3, to: 4, cards: [card('b', 'done', 512)], removed: [] });
    expect(next.version).toBe(4);
    expect(next.cards.map((c) => `${c.id}:${c.column}`)).toEqual(['b:done', 'a:backlog', 'c:done']);
    expect(next.cards.filter((c) => c.column === 'done').map((c) => c.id)).toEqual(['b', 'c']);
    expect(next.cards[1]).toBe(b.cards[0]); // untouched cards are the same objects (cheap re-render)
  });

  it('adds and removes cards, applies the rest of the board, keeps broken cards last', () => {
    const broken: CardView = { ...card('broken:cards/x.md', 'backlog'), broken: 'bad YAML' };
    const b = board([card('a', 'backlog'), broken]);
    const next = applyDelta(b, {
      from: 3,
      to: 5,
      cards: [card('z', 'backlog')],
      removed: ['a'],
      meta: { project: '/p', maxConcurrency: 1, running: 0, waitingForYou: 0, flows: [], columnLimits: {} },
    });
    expect(next.cards.map((c) => c.id)).toEqual(['z', 'broken:cards/x.md']);
    expect(next.maxConcurrency).toBe(1);
    expect(next.version).toBe(5);
  });

  it('a delta whose rest of the board has no configError clears the banner (config.yaml fixed)', () => {
    const b = { ...board([card('a', 'backlog')]), configError: 'config.yaml: bad' };
    const meta = {
      project: '/p',
      maxConcurrency: 2,
      running: 0,
      waitingForYou: 0,
      flows: [],
      columnLimits: {},
    };
    const next = applyDelta(b, { from: 3, to: 4, cards: [], removed: [], meta });
    expect(next.configError).toBeUndefined();
    // a delta without meta keeps the rest as it was
    expect(applyDelta(b, { from: 3, to: 4, cards: [], removed: [] }).configError).toBe('config.yaml: bad');
  });
});
