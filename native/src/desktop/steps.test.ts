import { describe, expect, it } from 'vitest';
import { StepGrouper, type StepInput } from './steps.ts';

let clock = 0;
const key = (
  k: string,
  text = '',
  modifiers: StepInput['modifiers'] = [],
  modifierKey = false,
): StepInput => ({
  kind: 'keyPress',
  key: k,
  text,
  modifierKey,
  modifiers,
  button: 0,
  x: 0,
  y: 0,
  time: (clock += 50),
});
const button = (kind: 'buttonPress' | 'buttonRelease', b: number, x: number, y: number): StepInput => ({
  kind,
  key: '',
  text: '',
  modifierKey: false,
  modifiers: [],
  button: b,
  x,
  y,
  time: (clock += 50),
});
const clickAt = (b: number, x: number, y: number): StepInput[] => [
  button('buttonPress', b, x, y),
  button('buttonRelease', b, x, y),
];
const typed = (s: string): StepInput[] => [...s].map((c) => key(c === ' ' ? 'space' : c, c));

function group(events: StepInput[]): unknown[] {
  const g = new StepGrouper();
  return [...events.flatMap((e) => g.feed(e)), ...g.flush()].map((s) => s.action);
}

describe('StepGrouper', () => {
  it('groups typing into words and names the other keys as the seed does (type "spotify", press Enter)', () => {
    expect(group([...typed('spotify'), key('Return'), key('Escape')])).toEqual([
      { type: 'type', text: 'spotify' },
      { type: 'press', key: 'Enter' },
      { type: 'press', key: 'Esc' },
    ]);
  });

  it('keeps spaces and shifted characters in the word, applies Backspace to it, and ignores bare modifiers', () => {
    expect(
      group([
        key('Shift_L', '', [], true),
        key('H', 'H', ['shift']),
        ...typed('ello wx'),
        key('BackSpace'),
        ...typed('orld'),
      ]),
    ).toEqual([{ type: 'type', text: 'Hello world' }]);
  });

  it('makes chords presses (ctrl+a, ctrl+shift+t, shift+Tab), never text', () => {
    expect(
      group([
        key('a', 'a', ['ctrl']),
        key('T', 'T', ['ctrl', 'shift']),
        key('ISO_Left_Tab', '', ['shift']),
        key('BackSpace'),
      ]),
    ).toEqual([
      { type: 'press', key: 'ctrl+a' },
      { type: 'press', key: 'ctrl+shift+t' },
      { type: 'press', key: 'shift+Tab' },
      { type: 'press', key: 'Backspace' },
    ]);
  });

  it('tells clicks from drags, sums wheel clicks into one scroll, and ends a word at a click', () => {
    expect(
      group([
        ...typed('ab'),
        button('buttonPress', 1, 10, 10),
        button('buttonRelease', 1, 12, 11),
        button('buttonPress', 3, 50, 50),
        button('buttonRelease', 3, 150, 60),
        button('buttonPress', 5, 20, 20),
        button('buttonRelease', 5, 20, 20),
        button('buttonPress', 5, 21, 20),
        button('buttonPress', 4, 21, 21),
        button('buttonPress', 5, 22, 20),
        key('Return'),
      ]),
    ).toEqual([
      { type: 'type', text: 'ab' },
      { type: 'click', x: 10, y: 10, button: 'left' },
      { type: 'drag', from: [50, 50], to: [150, 60], button: 'right' },
      { type: 'scroll', x: 20, y: 20, dx: 0, dy: 2 },
      { type: 'press', key: 'Enter' },
    ]);
  });

  it('ends a press still held when the recording stops as a click, and drops a release it never saw pressed', () => {
    expect(group([button('buttonRelease', 1, 5, 5), button('buttonPress', 1, 7, 7)])).toEqual([
      { type: 'click', x: 7, y: 7, button: 'left' },
    ]);
  });

  it('makes a double click one step (same button, spot and within 400 ms), and keeps the order around it', () => {
    clock = 0;
    expect(
      group([
        ...clickAt(1, 10, 10),
        ...clickAt(1, 11, 10),
        ...typed('x'),
        ...clickAt(1, 10, 10),
        button('buttonPress', 5, 30, 30),
        ...clickAt(1, 10, 10),
        ...clickAt(1, 60, 60),
      ]),
    ).toEqual([
      { type: 'click', x: 10, y: 10, button: 'left', count: 2 },
      { type: 'type', text: 'x' },
      { type: 'click', x: 10, y: 10, button: 'left' },
      { type: 'scroll', x: 30, y: 30, dx: 0, dy: 1 },
      { type: 'click', x: 10, y: 10, button: 'left' },
      { type: 'click', x: 60, y: 60, button: 'left' },
    ]);
  });
});
