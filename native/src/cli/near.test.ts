import { describe, expect, it } from 'vitest';
import type { CompactElement } from '../desktop/compact.ts';
import { besideText, nearAnchors, nearest } from './near.ts';

// A form row: a check box left of its label, an entry right of it, a button below; all in a group
// (with an action, as a clickable row can have) that holds them.
const box: CompactElement = { i: 2, r: 'chk', b: [10, 10, 16, 16], a: ['toggle'] };
const label: CompactElement = { i: 3, r: 'txt', t: 'Name', b: [40, 10, 50, 16] };
const entry: CompactElement = { i: 4, r: 'input', t: 'Name', b: [120, 6, 200, 24] };
const button: CompactElement = { i: 5, r: 'btn', t: 'Go', b: [40, 60, 60, 24], a: ['press'] };
const row: CompactElement = {
  i: 1,
  r: 'group',
  b: [0, 0, 400, 100],
  a: ['press'],
  c: [box, label, entry, button],
};
const tree = [row];

describe('--near', () => {
  it('anchors on the label, not on the entry that takes its name', () => {
    expect(nearAnchors(tree, 'Name').map((e) => e.i)).toEqual([3]);
    expect(nearAnchors(tree, 'Go').map((e) => e.i)).toEqual([5]); // only a control matches: it is the anchor
  });

  it('picks the nearest control in any direction, or in the one asked; never the row that holds the label', () => {
    expect(nearest(tree, label)?.i).toBe(2); // gap 14 to the check box, 30 to the entry
    expect(nearest(tree, label, 'left')?.i).toBe(2);
    expect(nearest(tree, label, 'right')?.i).toBe(4);
    expect(nearest(tree, label, 'down')?.i).toBe(5);
    expect(nearest(tree, label, 'up')).toBeUndefined();
  });

  it('says where to click beside the text when nothing is near', () => {
    expect(besideText(label)).toEqual([30, 18]);
    expect(besideText(label, 'right')).toEqual([100, 18]);
    expect(besideText(label, 'up')).toEqual([65, 0]);
    expect(besideText(label, 'down')).toEqual([65, 36]);
  });
});
