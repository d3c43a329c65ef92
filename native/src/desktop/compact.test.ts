import { describe, expect, it } from 'vitest';
import { flatten, platformRolesFor, shortAction, shortRole, toCompact } from './compact.ts';
import type { Element } from './types.ts';

function el(over: Partial<Element>): Element {
  return {
    id: 1,
    role: 'push button',
    name: '',
    description: '',
    bounds: [1, 2, 3, 4],
    focused: false,
    enabled: true,
    selected: false,
    visible: true,
    checked: false,
    editable: false,
    focusable: false,
    secret: false,
    actions: [],
    children: [],
    ...over,
  };
}

describe('compact schema', () => {
  it('maps platform roles onto the short role table', () => {
    expect(shortRole('push button')).toBe('btn');
    expect(shortRole('text', true)).toBe('input');
    expect(shortRole('text', false)).toBe('txt');
    expect(shortRole('password text')).toBe('input');
    expect(shortRole('document web')).toBe('web');
    expect(shortRole('frame')).toBe('window');
    expect(shortRole('slider')).toBe('other');
    expect(platformRolesFor(['btn'])).toContain('push button');
    expect(platformRolesFor(['input'])).toContain('text');
    expect(() => platformRolesFor(['button'])).toThrow(/unknown role/);
  });

  it('uses short keys in the seed order and omits defaults', () => {
    const out = toCompact([el({ id: 7, name: 'OK', actions: ['Click', 'Press'] })]);
    expect(JSON.stringify(out)).toBe('[{"i":7,"r":"btn","t":"OK","b":[1,2,3,4],"a":["press"]}]');
    const states = toCompact([
      el({ focused: true, enabled: false, selected: true, value: 'x', description: 'd' }),
    ])[0];
    expect(states).toMatchObject({ v: 'x', d: 'd', f: true, e: false, s: true });
  });

  it('never carries a secret value', () => {
    const out = toCompact([el({ role: 'password text', name: 'Password', secret: true, value: 'hunter2' })]);
    expect(JSON.stringify(out)).not.toContain('hunter2');
    expect(out[0]).toMatchObject({ r: 'input', secret: true });
  });

  it('role filtering keeps the children of the elements it leaves out; flatten drops empty containers', () => {
    const tree = [
      el({
        id: 1,
        role: 'panel',
        children: [el({ id: 2, name: 'A' }), el({ id: 3, role: 'label', name: 'L' })],
      }),
    ];
    expect(toCompact(tree, ['btn']).map((e) => e.i)).toEqual([2]);
    const flat = flatten(toCompact(tree));
    expect(flat.map((e) => e.i)).toEqual([2, 3]);
    expect(flat.every((e) => e.c === undefined)).toBe(true);
  });

  it("leaves out text leaves that only repeat their parent's title", () => {
    const link = el({
      id: 1,
      role: 'link',
      name: 'Docs',
      children: [el({ id: 2, role: 'static', name: 'Docs' })],
    });
    expect(toCompact([link])).toEqual([{ i: 1, r: 'lnk', t: 'Docs', b: [1, 2, 3, 4] }]);
    const other = el({
      id: 1,
      role: 'link',
      name: 'Docs',
      children: [el({ id: 2, role: 'static', name: 'More' })],
    });
    expect(toCompact([other])[0]!.c).toHaveLength(1);
    expect(toCompact([link], ['static'])).toEqual([{ i: 2, r: 'static', t: 'Docs', b: [1, 2, 3, 4] }]);
  });

  it('maps action names onto the seed vocabulary', () => {
    expect(shortAction('Click')).toBe('press');
    expect(shortAction('activate')).toBe('press');
    expect(shortAction('increment')).toBe('increment');
    expect(shortAction('showContextMenu')).toBeUndefined();
    // an app's action may be named like a property every object has
    expect(shortAction('constructor')).toBeUndefined();
    expect(shortAction('toString')).toBeUndefined();
  });

  it('gives each short action once, in the order of the first platform action that gives it', () => {
    const button = el({ actions: ['showContextMenu', 'Dismiss', 'click', 'press', 'constructor', 'close'] });
    expect(toCompact([button])[0]!.a).toEqual(['cancel', 'press']);
    expect(toCompact([el({ actions: ['doDefault'] })])[0]!.a).toBeUndefined();
  });
});
