// The token-efficient element schema of desktop-cli and the workers: short keys (i r t v d b f e s c a), the short role
// table, defaults omitted. Pure functions: the CLI and workers serialize the same way.
import type { Element } from './types.ts';

export type ShortRole =
  | 'btn'
  | 'txt'
  | 'lnk'
  | 'img'
  | 'input'
  | 'chk'
  | 'radio'
  | 'menu'
  | 'menuitem'
  | 'tab'
  | 'list'
  | 'row'
  | 'cell'
  | 'group'
  | 'scroll'
  | 'toolbar'
  | 'static'
  | 'web'
  | 'window'
  | 'other';

export interface CompactElement {
  i: number;
  r: ShortRole;
  t?: string;
  v?: string;
  d?: string;
  b: [number, number, number, number];
  f?: true;
  e?: false;
  s?: true;
  c?: CompactElement[];
  a?: string[];
  /** A password field: its value is never read (v is absent). */
  secret?: true;
}

// AT-SPI role names -> short roles. Roles not listed are 'other'.
const ROLE_TABLE: Record<ShortRole, string[]> = {
  btn: ['push button', 'toggle button', 'button', 'push button menu'],
  txt: ['label', 'paragraph', 'heading', 'caption', 'description term', 'description value', 'footnote'],
  lnk: ['link'],
  img: ['image', 'icon', 'canvas', 'animation'],
  input: ['entry', 'password text', 'spin button', 'editbar', 'terminal'],
  chk: ['check box'],
  radio: ['radio button'],
  menu: ['menu', 'menu bar', 'popup menu'],
  menuitem: ['menu item', 'check menu item', 'radio menu item', 'tearoff menu item'],
  tab: ['page tab list', 'page tab'],
  list: ['list', 'list box', 'table', 'tree', 'tree table'],
  row: ['table row', 'list item', 'tree item'],
  cell: ['table cell', 'table column header', 'table row header', 'column header', 'row header'],
  group: [
    'panel',
    'filler',
    'grouping',
    'section',
    'form',
    'split pane',
    'layered pane',
    'block quote',
    'article',
    'landmark',
  ],
  scroll: ['scroll pane', 'viewport'],
  toolbar: ['tool bar'],
  static: ['static'],
  web: ['document web', 'document frame', 'html container'],
  window: ['frame', 'window', 'dialog', 'alert', 'file chooser'],
  other: [],
};

const BY_PLATFORM = new Map<string, ShortRole>();
for (const [short, names] of Object.entries(ROLE_TABLE) as [ShortRole, string[]][])
  for (const n of names) BY_PLATFORM.set(n, short);

/** The short role of a platform role; 'text' is an input when editable, else text. */
export function shortRole(role: string, editable = false): ShortRole {
  if (role === 'text') return editable ? 'input' : 'txt';
  return BY_PLATFORM.get(role) ?? 'other';
}

export const SHORT_ROLES = Object.keys(ROLE_TABLE) as ShortRole[];

/** Platform role names that may map to the given short roles (a superset: 'text' is both). */
export function platformRolesFor(shorts: string[]): string[] {
  const out = new Set<string>();
  for (const s of shorts) {
    if (!(SHORT_ROLES as string[]).includes(s))
      throw new Error(`unknown role "${s}" (roles: ${SHORT_ROLES.join(', ')})`);
    for (const n of ROLE_TABLE[s as ShortRole]) out.add(n);
    if (s === 'input' || s === 'txt') out.add('text');
  }
  return [...out];
}

// AT-SPI action names -> a small action vocabulary (press, cancel, pick, increment, decrement).
// Other names (Chromium's showContextMenu, doDefault, clickAncestor on every node) are left out of
// the compact output; the facade still has them.
const ACTION_TABLE: Record<string, string> = {
  click: 'press',
  press: 'press',
  activate: 'press',
  jump: 'press',
  toggle: 'press',
  open: 'press',
  check: 'press',
  uncheck: 'press',
  select: 'press',
  cancel: 'cancel',
  dismiss: 'cancel',
  close: 'cancel',
  pick: 'pick',
  'expand or contract': 'pick',
  expand: 'pick',
  collapse: 'pick',
  increment: 'increment',
  decrement: 'decrement',
};

const ACTIONS = new Map(Object.entries(ACTION_TABLE));

/**
 * The tables the addon makes the same compact tree by (native/src/common/element_json.h
 * AppendCompactJson, for desktop-cli's reads), as [key, value, key, value, ...]: platform role -> short
 * role, platform action (lowercase) -> short action. The rules are toCompact's, written in C++ too;
 * tests/desktop/desktop.integration checks the two trees are the same on real windows.
 */
export const compactTables = {
  roles: [...BY_PLATFORM].flat(),
  actions: [...ACTIONS].flat(),
};

/** The compact name of a platform action, or undefined when it has none. */
export function shortAction(name: string): string | undefined {
  return ACTIONS.get(name.toLowerCase()); // a Map: an action named "constructor" is not Object's
}

/** The platform action name behind a short action name on an element, if it has one. */
export function platformAction(el: Element, short: string): string | undefined {
  return el.actions.find((a) => shortAction(a) === short || a.toLowerCase() === short.toLowerCase());
}

/** Tree-shaped compact elements; `roles` (short) prunes elements whose short role is not listed, keeping their children. */
export function toCompact(elements: Element[], roles?: string[], parentTitle?: string): CompactElement[] {
  const out: CompactElement[] = [];
  for (const el of elements) {
    const r = shortRole(el.role, el.editable);
    const shown = !roles || roles.length === 0 || roles.includes(r);
    const children = toCompact(el.children, roles, shown ? el.name || undefined : undefined);
    if (!shown) {
      out.push(...children);
      continue;
    }
    // The short actions, each once, in the order of the first platform action that gives it. A plain
    // loop: this runs once per element of a one-shot process that never warms up (a 6,000-node page).
    let actions: string[] | undefined;
    for (const a of el.actions) {
      const short = shortAction(a);
      if (short !== undefined && !actions?.includes(short)) (actions ??= []).push(short);
    }
    // A text leaf that only repeats its parent's title (Chromium: a link's or a button's text run)
    // carries nothing an agent can use: leave it out.
    if (
      parentTitle !== undefined &&
      el.children.length === 0 &&
      (r === 'static' || r === 'txt') &&
      el.name === parentTitle &&
      actions === undefined
    )
      continue;
    const c = { i: el.id, r } as CompactElement;
    if (el.name) c.t = el.name;
    if (!el.secret && el.value) c.v = el.value;
    if (el.description) c.d = el.description;
    c.b = el.bounds;
    if (el.focused) c.f = true;
    if (!el.enabled) c.e = false;
    if (el.selected) c.s = true;
    if (children.length > 0) c.c = children;
    if (actions) c.a = actions;
    if (el.secret) c.secret = true;
    out.push(c);
  }
  return out;
}

/**
 * --compact: a flat list without children. Elements that carry nothing but their place in the tree
 * (no title, value, description, actions, focus or selection: plain groups and scroll areas) are dropped.
 */
export function flatten(elements: CompactElement[]): CompactElement[] {
  const out: CompactElement[] = [];
  const walk = (els: CompactElement[]) => {
    for (const el of els) {
      const c = el.c;
      const empty = !el.t && !el.v && !el.d && !el.a && !el.f && !el.s && !el.secret;
      // an element without children goes in as it is (a copy of it would serialize the same)
      if (!(empty && (el.r === 'group' || el.r === 'scroll' || el.r === 'other')))
        out.push(c ? (({ c: _c, ...rest }) => rest)(el) : el);
      if (c) walk(c);
    }
  };
  walk(elements);
  return out;
}

/** The same tree with full key names and every field: the baseline the compact form is measured against. */
export function toVerbose(elements: Element[]): unknown[] {
  return elements.map((el) => ({
    id: el.id,
    role: el.role,
    title: el.name,
    value: el.value ?? '',
    description: el.description,
    bounds: { x: el.bounds[0], y: el.bounds[1], width: el.bounds[2], height: el.bounds[3] },
    focused: el.focused,
    enabled: el.enabled,
    selected: el.selected,
    visible: el.visible,
    actions: el.actions,
    children: toVerbose(el.children),
  }));
}

/** Depth-first list of every element. */
export function allElements(elements: Element[]): Element[] {
  const out: Element[] = [];
  const walk = (els: Element[]) => {
    for (const e of els) {
      out.push(e);
      walk(e.children);
    }
  };
  walk(elements);
  return out;
}
