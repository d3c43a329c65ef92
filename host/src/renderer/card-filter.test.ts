import { describe, expect, it } from 'vitest';
import type { CardView } from '../shared/board-types.ts';
import { cardOfHash, hashOf, matches, NO_FILTER } from './card-filter.ts';

const c = (title: string, flow: string, column: CardView['column']): CardView => ({
  id: title,
  file: `cards/${title.toLowerCase().replace(/ /g, '-')}.md`,
  title,
  flow,
  column,
  locked: false,
});

describe('card filter', () => {
  it('matches every word of the search in the title or file, any case; flow and column exactly', () => {
    const card = c('Fix the Login page', 'agent', 'failed');
    expect(matches(card, NO_FILTER)).toBe(true);
    expect(matches(card, { ...NO_FILTER, text: 'login FIX' })).toBe(true);
    expect(matches(card, { ...NO_FILTER, text: 'fix-the' })).toBe(true); // the file name
    expect(matches(card, { ...NO_FILTER, text: 'logout' })).toBe(false);
    expect(matches(card, { ...NO_FILTER, flow: 'agent', status: 'failed' })).toBe(true);
    expect(matches(card, { ...NO_FILTER, flow: 'shell' })).toBe(false);
    expect(matches(card, { ...NO_FILTER, status: 'done' })).toBe(false);
  });

  it('a URL names a card by its hash, any id included', () => {
    for (const id of ['quick', 'a b/c&d=e', 'ünï']) expect(cardOfHash(hashOf(id))).toBe(id);
    expect(cardOfHash('')).toBeUndefined();
    expect(hashOf(undefined)).toBe('');
  });
});
