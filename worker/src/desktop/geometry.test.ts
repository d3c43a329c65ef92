import { describe, expect, it } from 'vitest';
import { onImage, toImage, toImageRect, toScreen, type Frame } from './geometry.ts';

describe('screenshot ↔ screen coordinates', () => {
  const half: Frame = { source: [0, 0, 1280, 800], width: 640, height: 400 };
  it('maps a downscaled pixel to the centre of the screen block it stands for', () => {
    expect(toScreen(half, 0, 0)).toEqual([1, 1]);
    expect(toScreen(half, 100, 50)).toEqual([201, 101]);
    expect(toScreen(half, 639, 399)).toEqual([1279, 799]);
  });
  it('adds the offset of the captured monitor (multi-monitor layouts)', () => {
    const right: Frame = { source: [1920, 0, 1280, 1024], width: 640, height: 512 };
    expect(toScreen(right, 10, 10)).toEqual([1941, 21]);
    expect(toImage(right, 1941, 21)).toEqual([10, 10]);
  });
  it('handles non-integer scales (HiDPI 2560x1600 sent as 1280 wide, odd sizes) and clamps', () => {
    const hi: Frame = { source: [0, 0, 2560, 1600], width: 1280, height: 800 };
    expect(toScreen(hi, 640, 400)).toEqual([1281, 801]);
    const odd: Frame = { source: [0, 0, 1366, 768], width: 1024, height: 576 };
    for (const [x, y] of [
      [0, 0],
      [1023, 575],
      [517, 300],
    ] as const) {
      const [sx, sy] = toScreen(odd, x, y);
      expect(toImage(odd, sx, sy)).toEqual([x, y]); // round trip
    }
    expect(toScreen(odd, 1023.9, 575.9)).toEqual([1365, 767]);
  });
  it('maps accessibility rectangles into the image, outward', () => {
    expect(toImageRect(half, [101, 51, 99, 21])).toEqual([50, 25, 50, 11]);
    const right: Frame = { source: [640, 0, 640, 800], width: 320, height: 400 };
    expect(toImageRect(right, [700, 60, 100, 30])).toEqual([30, 30, 50, 15]);
  });
  it('knows what is on the image', () => {
    expect(onImage(half, 639, 399)).toBe(true);
    expect(onImage(half, 640, 0)).toBe(false);
    expect(onImage(half, -1, 0)).toBe(false);
    expect(onImage(half, Number.NaN, 0)).toBe(false);
  });
});
