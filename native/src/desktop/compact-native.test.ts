// The addon writes the compact tree for desktop-cli's reads (native/src/common/element_json.h
// AppendCompactJson); the workers make it with toCompact. Generated trees (seeded: the same every run)
// that reach every rule: kept and left-out roles, the text leaf that repeats its parent's title, empty
// and non-ASCII text, secret fields, each state bit, actions in any case and repeated.
import { describe, expect, it } from 'vitest';
import { SHORT_ROLES, toCompact } from './compact.ts';
import { desktop } from './desktop.ts';
import type { Element } from './types.ts';

function prng(seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

const ROLES = [
  'push button',
  'label',
  'static',
  'text',
  'link',
  'panel',
  'check box',
  'entry',
  'frame',
  'document web',
  'list item',
  'password text',
  'slider',
  'scroll pane',
  'heading',
  'menu item',
];
const ACTIONS = [
  'click',
  'Click',
  'press',
  'showContextMenu',
  'clickAncestor',
  'Dismiss',
  'close',
  'expand',
  'constructor',
  'doDefault',
  'jump',
  'INCREMENT',
];
const TEXTS = ['', '', 'OK', 'Name', 'héllo ✓', 'say "hi" \\ now', 'tab\there\nline', '世界 😀', 'Item 1'];

function tree(rand: () => number, depth: number, next: { id: number }, parentName: string): Element[] {
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const n = depth > 3 ? 0 : Math.floor(rand() * 4);
  const out: Element[] = [];
  for (let k = 0; k < n; k++) {
    const name = rand() < 0.25 ? parentName : pick(TEXTS);
    const secret = rand() < 0.1;
    const el: Element = {
      id: next.id++,
      role: pick(ROLES),
      name,
      description: rand() < 0.2 ? pick(TEXTS) : '',
      bounds: [Math.floor(rand() * 900), Math.floor(rand() * 700), Math.floor(rand() * 200), 20],
      focused: rand() < 0.2,
      enabled: rand() < 0.8,
      selected: rand() < 0.2,
      visible: rand() < 0.8,
      checked: rand() < 0.2,
      editable: rand() < 0.3,
      focusable: rand() < 0.5,
      secret,
      actions: Array.from({ length: Math.floor(rand() * 4) }, () => pick(ACTIONS)),
      children: [],
    };
    if (!secret) el.value = rand() < 0.4 ? pick(TEXTS) : '';
    el.children = tree(rand, depth + 1, next, name);
    out.push(el);
  }
  return out;
}

describe("the addon's compact tree", () => {
  it("is toCompact's, byte for byte once parsed, for generated trees whole and kept to some roles", () => {
    const rand = prng(18);
    let elements = 0;
    for (let round = 0; round < 300; round++) {
      const next = { id: 0 };
      const els = tree(rand, 0, next, 'Name');
      elements += next.id;
      const keep = round % 3 === 0 ? undefined : SHORT_ROLES.filter(() => rand() < 0.4);
      const mine = JSON.stringify(toCompact(els, keep));
      const addon = desktop.compactJsonForTest(els, keep);
      expect(/^[\x20-\x7e]*$/.test(addon), 'ASCII only').toBe(true);
      expect(JSON.stringify(JSON.parse(addon)), `round ${round}`).toBe(mine);
    }
    expect(elements).toBeGreaterThan(1000);
  });
});
