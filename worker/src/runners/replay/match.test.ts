import { describe, expect, it } from 'vitest';
import type { Element, WindowInfo } from '@runboard/native';
import { checkIn, focusedIn, match, MOVE_TOLERANCE_PX, pickWindow } from './match.ts';
import type { Locator, RecordedWindow } from './plan.ts';

const el = (role: string, name: string, more: Partial<Element> = {}): Element => ({
  id: 0,
  role,
  name,
  description: '',
  bounds: [110, 220, 80, 20],
  focused: false,
  enabled: true,
  selected: false,
  visible: true,
  checked: false,
  editable: false,
  focusable: true,
  secret: false,
  actions: [],
  children: [],
  ...more,
});
const win = (more: Partial<WindowInfo> = {}): WindowInfo =>
  ({ id: 7, app: 'form', title: 'Form', bounds: [100, 200, 400, 300], focused: true, ...more }) as WindowInfo;
const rec: RecordedWindow = { app: 'form', title: 'Form', bounds: [0, 0, 400, 300] };
const submit: Locator = {
  role: 'push button',
  name: 'Submit',
  bounds: [10, 20, 80, 20],
  path: [
    { role: 'panel', name: '', index: 0 },
    { role: 'push button', name: 'Submit', index: 1 },
  ],
};
const tree = (button: Partial<Element> = {}): Element[] => [
  el('panel', '', {
    children: [el('push button', 'Cancel'), el('push button', 'Submit', button), el('text', 'Name')],
  }),
];

describe("a recorded locator matched against the desktop's tree", () => {
  it('finds the element by its path, relative to a window that moved', () => {
    const r = match(tree(), win(), submit, rec);
    expect(r.ok && r.element.name).toBe('Submit');
  });

  it('finds it by role and name when the path broke, but not when two match', () => {
    const broken = { ...submit, path: [{ role: 'filler', name: '', index: 0 }] };
    expect(match(tree(), win(), broken, rec).ok).toBe(true);
    const twice = [...tree(), el('push button', 'Submit')];
    expect(match(twice, win(), { ...submit, path: [] }, rec)).toEqual({
      ok: false,
      drift: '2 elements are push button "Submit": which one is meant is not clear',
    });
  });

  it('says in words what drifted: renamed, hidden, disabled, moved', () => {
    const renamed = [el('panel', '', { children: [el('push button', 'Cancel'), el('push button', 'Send')] })];
    expect(match(renamed, win(), submit, rec)).toEqual({
      ok: false,
      drift: 'no push button "Submit" in "Form" (renamed, or not on screen)',
    });
    expect(match(tree({ visible: false }), win(), submit, rec)).toMatchObject({
      drift: 'push button "Submit" is not showing',
    });
    expect(match(tree({ enabled: false }), win(), submit, rec)).toMatchObject({
      drift: 'push button "Submit" is disabled',
    });
    const far = tree({ bounds: [110 + MOVE_TOLERANCE_PX + 1, 220, 80, 20] });
    expect(match(far, win(), submit, rec)).toMatchObject({
      drift: 'push button "Submit" moved from where it was recorded',
    });
    // reading a value: where it is, and whether it is enabled, do not matter
    expect(match(far, win(), submit, rec, { anywhere: true }).ok).toBe(true);
    expect(match(tree({ bounds: [110 + MOVE_TOLERANCE_PX, 220, 80, 20] }), win(), submit, rec).ok).toBe(true);
  });

  it('picks the recorded window, the focused one of the same title, or the only one of its app', () => {
    const a = win({ id: 1, focused: false });
    const b = win({ id: 2, focused: true });
    expect(pickWindow([a, b], rec)).toBe(b);
    const other = win({ id: 3, title: 'Form (2)' });
    expect(pickWindow([other], rec)).toBe(other);
    expect(pickWindow([other, win({ id: 4, title: 'Form (3)' })], rec)).toBe(
      'the window "Form" (form) is not open',
    );
    expect(pickWindow([], undefined)).toBe('no window is open');
  });

  it('an outcome check holds when some element has the role, name and value given; the focused field', () => {
    const t = [
      el('panel', '', {
        children: [
          el('label', 'Status', { value: 'Sent' }),
          el('text', 'Name', { focused: true, editable: true }),
        ],
      }),
    ];
    expect(checkIn(t, { role: 'label', value: 'Sent' })).toBe(true);
    expect(checkIn(t, { role: 'label', value: 'Draft' })).toBe(false);
    expect(focusedIn(t)?.name).toBe('Name');
    expect(focusedIn(tree())).toBeUndefined();
  });
});
