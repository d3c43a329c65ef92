import { describe, expect, it } from 'vitest';
import type { BoardView, CardView } from '../shared/board-types.ts';
import { firstRunState } from './FirstRun.tsx';

const card = (id: string, extra: Partial<CardView> = {}): CardView => ({
  id,
  file: `cards/${id}.md`,
  title: id.toUpperCase(),
  flow: 'shell',
  column: 'backlog',
  locked: false,
  ...extra,
});
const board = (...cards: CardView[]): BoardView => ({ cards }) as unknown as BoardView;
const keyless = (): boolean => true;
const BEING_WRITTEN = 'cards/a.md does not read now (no front matter …)';

describe('Getting started’s card to try', () => {
  it('is not a card whose file is being written when another card reads', () => {
    const s = firstRunState(board(card('a', { unreadable: BEING_WRITTEN }), card('b')), keyless);
    expect(s.toTry).toEqual({ id: 'b', title: 'B' });
  });
  it('is such a card, marked, when it is the only one: it cannot run until its file reads', () => {
    const s = firstRunState(board(card('a', { unreadable: BEING_WRITTEN })), keyless);
    expect(s.toTry).toEqual({ id: 'a', title: 'A', writing: true });
  });
  it('prefers a card of a flow that needs no key, among the cards that read', () => {
    const s = firstRunState(
      board(card('a', { flow: 'agent' }), card('b', { unreadable: BEING_WRITTEN }), card('c')),
      (flow) => flow === 'shell',
    );
    expect(s.toTry).toEqual({ id: 'c', title: 'C' });
  });
});
