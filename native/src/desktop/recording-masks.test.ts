import { describe, expect, it } from 'vitest';
import { fieldKey, SecretFields, secretTest } from './recording-masks.ts';
import type { Element, ReadResult, Rect } from './types.ts';

const el = (name: string, bounds: Rect, o: Partial<Element> = {}): Element =>
  ({
    role: 'text',
    name,
    bounds,
    editable: true,
    secret: false,
    focused: false,
    children: [],
    ...o,
  }) as Element;

const read = (id: number, elements: Element[]): ReadResult =>
  ({ window: { id }, elements }) as unknown as ReadResult;

describe('the recorder’s secret fields', () => {
  it('a password field always; a plain field when the person named it (case and spacing ignored)', () => {
    const test = secretTest(['  PIN  code ']);
    expect(fieldKey(' PIN\tCode ')).toBe('pin code');
    expect(test(el('Pin Code', [0, 0, 1, 1]))).toBe(true);
    expect(test(el('Pin', [0, 0, 1, 1]))).toBe(false);
    expect(test(el('x', [0, 0, 1, 1], { secret: true }))).toBe(true);
    expect(test(el('pin code', [0, 0, 1, 1], { editable: false, role: 'label' }))).toBe(false); // its label
    expect(secretTest([])(el('Pin Code', [0, 0, 1, 1]))).toBe(false);
  });

  it('masks every rectangle seen in a window, with a margin, also in later steps whose read missed it', () => {
    const s = new SecretFields(['PIN']);
    const pin = el('PIN', [100, 100, 200, 30]);
    const first = s.masksFor([{ tree: read(7, [el('Name', [100, 50, 200, 30]), pin]) }]);
    expect(first).toEqual([[88, 88, 224, 54]]);
    // the field grew: both rectangles; a read that failed (no tree) still gets the window's masks
    s.masksFor([{ tree: read(7, [{ ...pin, bounds: [100, 104, 200, 30] }]) }]);
    expect(s.masksFor([{ window: { id: 7 } as never }])).toHaveLength(2);
    expect(s.masksFor([{ window: { id: 8 } as never }])).toEqual([]);
    expect(s.near([{ window: { id: 7 } as never }])).toBe(true);
    expect(s.near([{ window: { id: 8 } as never }])).toBe(false);
  });
});
