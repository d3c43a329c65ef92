import { describe, expect, it } from 'vitest';
import { all, findPath, hitTest } from './recording-elements.ts';
import { extractSource } from './recording-extract.ts';
import type { Element, ReadResult, Rect, WindowInfo } from './types.ts';

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

// An extract's element (recording-extract.ts), from a read of the form.
const window: WindowInfo = {
  id: 7,
  pid: 1,
  app: 'form',
  appClass: 'Form',
  title: 'The Form',
  bounds: [0, 0, 400, 300],
  focused: true,
};
const formRead = (focusedField: boolean): ReadResult => ({
  window,
  scale: 1,
  stats: { nodes: 3, returned: 3, roundTrips: 1, ms: 1 },
  elements: [
    el(
      'frame',
      'Form',
      [0, 0, 400, 300],
      [el('text', 'Name', [10, 10, 200, 20], [], focusedField), el('label', 'Total', [10, 40, 200, 20])],
    ),
  ],
});
const secret = (e: Element): boolean => e.secret;
const win = { id: 7, app: 'form', title: 'The Form', bounds: [0, 0, 400, 300] };

describe("an extract's element", () => {
  it('is the one under the pointer, else the focused field, with its window', () => {
    const under = extractSource({ lookup: { tree: formRead(true), window }, pointer: [20, 45] }, secret);
    expect(under).toMatchObject({ window: win, element: { role: 'label', name: 'Total' } });
    expect(under.elementMissing).toBeUndefined();
    const field = extractSource({ lookup: { tree: formRead(true), window }, pointer: [900, 900] }, secret);
    expect(field).toMatchObject({ window: win, element: { role: 'text', name: 'Name' } });
  });

  it('is absent with why: no window, a tree that could not be read, nothing there', () => {
    expect(extractSource({ lookup: {}, why: 'no window had the keyboard focus' }, secret)).toEqual({
      window: null,
      elementMissing: 'no window had the keyboard focus',
    });
    expect(extractSource({ lookup: { window, error: 'APP_NOT_RESPONDING' } }, secret)).toEqual({
      window: null,
      elementMissing:
        'the accessibility tree of the window "The Form" (form) could not be read (APP_NOT_RESPONDING)',
    });
    expect(extractSource({ lookup: { tree: formRead(false), window }, pointer: [900, 900] }, secret)).toEqual(
      {
        window: null,
        elementMissing:
          'nothing in the window "The Form" (form) lay under the pointer at (900, 900), and no field there had the focus',
      },
    );
  });
});
