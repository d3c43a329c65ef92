import { describe, expect, it } from 'vitest';
import { Arrivals, compareCards, moveRefusal, ranksForMove, type Ranked } from './board-model.ts';

describe('board model', () => {
  const col = [
    { id: 'a', file: 'a.md', rank: 1024 },
    { id: 'b', file: 'b.md', rank: 2048 },
    { id: 'c', file: 'c.md', rank: 3072 },
  ];

  it('orders by rank, then unranked by file', () => {
    const cards = [{ id: 'z', file: 'z.md' }, { id: 'y', file: 'y.md' }, ...col];
    expect([...cards].sort(compareCards).map((c) => c.id)).toEqual(['a', 'b', 'c', 'y', 'z']);
  });

  it('puts cards without a rank in the order the board first saw them: a new card goes to the bottom', () => {
    const seen: Record<string, number> = { 'demo.md': 100, 'a-gen-001.md': 500, 'a-gen-002.md': 500 };
    const arrivals = new Arrivals((f) => seen[f]!);
    const cards = ['a-gen-002.md', 'demo.md', 'a-gen-001.md'].map((file) => ({
      id: file,
      file,
      arrival: arrivals.of(file),
    }));
    expect([...cards, col[0]!].sort(compareCards).map((c) => c.id)).toEqual([
      'a',
      'demo.md',
      'a-gen-001.md',
      'a-gen-002.md',
    ]);
    seen['demo.md'] = 900; // edited later: it keeps its place
    expect(arrivals.of('demo.md')).toBe(100);
  });

  it('a move writes one rank between the neighbours', () => {
    expect([...ranksForMove(col, 'c', 0)]).toEqual([['c', 0]]);
    expect([...ranksForMove(col, 'a', 1)]).toEqual([['a', 2560]]);
    expect([...ranksForMove(col, 'x', 3)]).toEqual([['x', 4096]]);
    expect([...ranksForMove([], 'x', 0)]).toEqual([['x', 1024]]);
  });

  it('renumbers a column whose neighbours have no rank', () => {
    const out = ranksForMove([{ id: 'p', file: 'p.md' }, ...col], 'x', 1);
    expect(out.get('p')).toBe(1024);
    expect(out.get('x')).toBe(2048);
    expect(out.get('c')).toBe(5120);
  });

  it('a move into a rankless tail ranks only the cards up to the drop point', () => {
    const tail: Ranked[] = [
      ...col,
      { id: 'p', file: 'p.md' },
      { id: 'q', file: 'q.md' },
      { id: 'r', file: 'r.md' },
    ];
    expect([...ranksForMove(tail, 'x', 0)]).toEqual([['x', 0]]);
    expect([...ranksForMove(tail, 'x', 3)]).toEqual([['x', 4096]]);
    expect([...ranksForMove(tail, 'x', 5)]).toEqual([
      ['p', 4096],
      ['q', 5120],
      ['x', 6144],
    ]);
    const rankless = [
      { id: 'p', file: 'p.md' },
      { id: 'q', file: 'q.md' },
    ];
    expect([...ranksForMove(rankless, 'x', 0)]).toEqual([['x', 1024]]);
    expect([...ranksForMove(rankless, 'q', 0)]).toEqual([['q', 1024]]);
    // the result keeps the order: ranked first, then the rest by file
    const out = ranksForMove(tail, 'x', 4);
    const after = [...tail, { id: 'x', file: 'x.md' }]
      .map((c) => ({ ...c, rank: out.get(c.id) ?? c.rank }))
      .sort(compareCards)
      .map((c) => c.id);
    expect(after).toEqual(['a', 'b', 'c', 'p', 'x', 'q', 'r']);
  });

  it('a running card is locked', () => {
    expect(moveRefusal('running', 'backlog', true)).toMatch(/locked/);
    expect(moveRefusal('backlog', 'running', false)).toMatch(/Queued/);
    expect(moveRefusal('backlog', 'queued', false)).toBeUndefined();
    expect(moveRefusal('queued', 'backlog', false)).toBeUndefined();
    // Done and Failed only from a run's end (or from each other, or from Needs input)
    expect(moveRefusal('backlog', 'done', false)).toMatch(/reaches Done when its run ends/);
    expect(moveRefusal('queued', 'failed', false)).toMatch(/reaches Failed when its run ends/);
    expect(moveRefusal('done', 'done', false)).toBeUndefined();
    expect(moveRefusal('done', 'failed', false)).toBeUndefined();
    expect(moveRefusal('needs-input', 'done', false)).toBeUndefined();
  });
});
