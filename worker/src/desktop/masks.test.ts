import { describe, expect, it } from 'vitest';
import { ScreenMasks } from './masks.ts';

/** A raw capture of `source`, scaled to width x height, every byte `v`. */
const raw = (width: number, height: number, source: [number, number, number, number], v = 0xff) => ({
  data: Buffer.alloc(width * height * 4, v),
  width,
  height,
  source,
});

const greyAt = (r: ReturnType<typeof raw>, x: number, y: number): boolean =>
  r.data[(y * r.width + x) * 4] === 0x80;

describe('the run’s screen masks', () => {
  it('fills a field with its 12 px margin grey, scaled to the capture and offset by its source', () => {
    const m = new ScreenMasks();
    m.add([120, 40, 40, 10]); // masked: [108, 28, 64, 34] on the screen
    // a capture of the region at (100, 20), 200x100 on screen, at half size
    const r = raw(100, 50, [100, 20, 200, 100]);
    m.fill(r);
    expect(greyAt(r, 4, 4)).toBe(true); // screen (108, 28)
    expect(greyAt(r, 35, 20)).toBe(true); // screen (170, 60)
    expect(greyAt(r, 3, 3)).toBe(false);
    expect(greyAt(r, 36, 21)).toBe(false);
    expect(greyAt(r, 90, 40)).toBe(false);
  });

  it('keeps each rectangle once; one off the capture changes nothing; none: nothing to do', () => {
    const m = new ScreenMasks();
    expect(m.size).toBe(0);
    m.add([10, 10, 5, 5]);
    m.add([10, 10, 5, 5]);
    m.add([5000, 5000, 5, 5]);
    expect(m.size).toBe(2);
    const r = raw(50, 50, [1000, 1000, 50, 50]);
    m.fill(r);
    expect(r.data.every((b) => b === 0xff)).toBe(true);
  });
});
