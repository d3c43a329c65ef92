import { describe, expect, it } from 'vitest';
import { all, findPath, hitTest } from './recording-elements.ts';
import type { Element, Rect } from './types.ts';

let id = 0;
function el(role: string, name: string, bounds: Rect, children: Element[] = [], focused = false): Element {
  return {
    id: id++,
    role,
    name,
    description: '',
    bounds,
    focused,
    enabled: true,
    selected: false,
    visible: true,
    checked: false,
    editable: role === 'text',
    focusable: true,
    secret: false,
    actions: [],
    children,
  };
}

// A frame with two fields, and a scroll pane whose second row is scrolled out below its edge.
const tree = [
  el(
    'frame',
    'Form',
    [0, 0, 400, 300],
    [
      el('text', 'Name', [10, 10, 200, 20]),
      el('text', 'Email', [10, 40, 200, 20], [], true),
      el(
        'scroll pane',
        'Log',
        [10, 100, 200, 50],
        [el('label', 'row 1', [10, 100, 200, 20]), el('label', 'row 2', [10, 180, 200, 20])],
      ),
      el('push button', 'Send', [10, 180, 80, 30]),
    ],
  ),
];
const names = (path: { name: string; index: number }[]): string[] => path.map((p) => `${p.name}#${p.index}`);

describe('the recorder finds elements with their paths', () => {
  it('hitTest: the deepest element at the point, with each step its index among siblings of its role', () => {
    const hit = hitTest(tree, 20, 45)!;
    expect(hit.element.name).toBe('Email');
    expect(names(hit.path)).toEqual(['Form#0', 'Email#1']);
    expect(hitTest(tree, 20, 105)!.element.name).toBe('row 1');
    expect(hitTest(tree, 500, 500)).toBeUndefined();
  });

  it('hitTest: a child scrolled out of its pane is not hit; what is really there is', () => {
    expect(hitTest(tree, 20, 185)!.element.name).toBe('Send');
  });

  it('findPath: the first element in tree order that matches; all: every one, in order', () => {
    expect(names(findPath(tree, (e) => e.focused)!.path)).toEqual(['Form#0', 'Email#1']);
    expect(findPath(tree, (e) => e.role === 'slider')).toBeUndefined();
    expect(all(tree, (e) => e.role === 'label').map((f) => names(f.path))).toEqual([
      ['Form#0', 'Log#0', 'row 1#0'],
      ['Form#0', 'Log#0', 'row 2#1'],
    ]);
  });
});
