import { describe, expect, it } from 'vitest';
import type { CompactElement } from '../desktop/compact.ts';
import { agentFormat, diff, flatWithPaths, prune, refs, resolveRef, textCandidates } from './format.ts';

const el = (
  i: number,
  r: CompactElement['r'],
  t: string,
  extra: Partial<CompactElement> = {},
): CompactElement => ({ i, r, ...(t ? { t } : {}), b: [i * 10, 0, 8, 8], ...extra });

const tree: CompactElement[] = [
  el(0, 'toolbar', '', {
    c: [el(1, 'btn', 'Back', { a: ['press'] }), el(2, 'btn', 'Forward', { a: ['press'], e: false })],
  }),
  el(3, 'group', '', {
    c: [
      el(4, 'group', 'Dialog', {
        c: [el(5, 'btn', 'OK', { a: ['press'] }), el(6, 'btn', 'OK', { a: ['press'] })],
      }),
      el(7, 'input', 'Search', { v: 'cats' }),
      el(8, 'txt', 'Total', { v: '42' }),
      el(9, 'row', 'Save draft', { c: [el(10, 'btn', 'Save', { a: ['press'] })] }),
    ],
  }),
];

describe('refs', () => {
  it('are landmark paths with slugs; duplicates numbered; a suffix finds a unique one', () => {
    const r = refs(tree);
    expect(r.get(1)).toBe('toolbar/back');
    expect(r.get(5)).toBe('dialog/ok.1');
    expect(r.get(6)).toBe('dialog/ok.2');
    expect(r.get(7)).toBe('search');
    expect(resolveRef(r, 'back')).toEqual({ id: 1 });
    expect(resolveRef(r, 'toolbar/forward')).toEqual({ id: 2 });
    expect(resolveRef(r, 'nothing')).toMatchObject({
      error: expect.stringContaining('no element') as unknown,
    });
  });
});

describe('the agent format', () => {
  it('has a header and one line per element to act on or read, with flags', () => {
    const out = agentFormat({ window: 'W', app: 'A', pid: 7 }, tree).split('\n');
    expect(out[0]).toBe('# W - A (pid: 7)');
    expect(out).toContain('[2|toolbar/forward] btn "Forward" (20,0,8,8) disabled');
    expect(out).toContain('[7|search] input "Search" (70,0,8,8) val="cats"');
    expect(out).toContain('[8|total] txt "Total" (80,0,8,8) display val="42"');
    expect(out.some((l) => l.startsWith('[3'))).toBe(false); // a plain group is not a line
  });
});

describe('prune, text, diff', () => {
  it('prune lifts the children of unnamed groups', () => {
    expect(prune(tree).map((e) => e.i)).toEqual([0, 4, 7, 8, 9]);
  });
  it('text targeting prefers exact, interactive, deepest matches', () => {
    expect(textCandidates(tree, 'save').map((e) => e.i)).toEqual([10]);
    expect(textCandidates(tree, 'ok').map((e) => e.i)).toEqual([5, 6]);
    expect(textCandidates(tree, 'ok', { roles: ['txt'] })).toEqual([]);
  });
  it('diff tells added, removed and changed fields', () => {
    const a = flatWithPaths(tree);
    const b = flatWithPaths([
      { ...tree[0]!, c: [el(1, 'btn', 'Back!', { a: ['press'] })] },
      el(11, 'btn', 'New'),
    ]);
    const d = diff(a, b);
    expect(d.added.map((e) => e.i)).toEqual([11]);
    expect(d.changed).toEqual([{ i: 1, r: 'btn', t: 'Back!', changes: { t: ['Back', 'Back!'] } }]);
    expect(d.removed.map((e) => e.i)).toContain(2);
  });
});
