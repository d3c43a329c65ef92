// What the recorder's test files share: where to click an element, a recording's steps, and the
// screen's pixels (what the app has painted, what a screenshot shows).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { desktop, type Element, type ManifestStep } from '../../native/src/index.ts';
import { decodePng, type Image } from './png.ts';
import { eventually } from './session.ts';

/** The middle of an element's bounds, where a click on it goes. */
export const centre = (e: Element): [number, number] => [
  e.bounds[0] + Math.floor(e.bounds[2] / 2),
  e.bounds[1] + Math.floor(e.bounds[3] / 2),
];

/** A recording's steps, as its manifest.jsonl holds them. */
export function manifest(dir: string): ManifestStep[] {
  return readFileSync(path.join(dir, 'manifest.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ManifestStep);
}

/** Share of pixels that differ (by more than a little) between two images in a screen rectangle. */
export function differing(a: Image, b: Image, r: [number, number, number, number]): number {
  let n = 0;
  for (let y = r[1]; y < r[1] + r[3]; y++)
    for (let x = r[0]; x < r[0] + r[2]; x++) {
      const i = (y * a.width + x) * 3;
      if (
        Math.abs(a.rgb[i]! - b.rgb[i]!) +
          Math.abs(a.rgb[i + 1]! - b.rgb[i + 1]!) +
          Math.abs(a.rgb[i + 2]! - b.rgb[i + 2]!) >
        30
      )
        n++;
    }
  return n / (r[2] * r[3]);
}

/** The screen (a region of it; [0,0,0,0]: all of it) now, as RGB. */
export async function shot(region: [number, number, number, number]): Promise<Image> {
  const all = region[2] === 0;
  const c = await desktop.capture({ ...(all ? {} : { region }), format: 'raw', cursor: false });
  const rgb = Buffer.alloc(c.width * c.height * 3);
  for (let i = 0, j = 0; i < c.data.length; i += 4, j += 3) c.data.copy(rgb, j, i, i + 3);
  return { width: c.width, height: c.height, rgb };
}

/** Waits until the app has painted a change in `r`: more than `share` of its pixels differ from `before`. */
export async function painted(
  r: [number, number, number, number],
  before: Image,
  share: number,
): Promise<void> {
  const whole: [number, number, number, number] = [0, 0, r[2], r[3]];
  const ok = await eventually(async () => differing(before, await shot(r), whole) > share, 15_000);
  if (!ok) throw new Error(`the app never painted the change at ${r.join(',')}`);
}

/** `r` of a whole-screen image, as an image of its own. */
export function crop(img: Image, r: [number, number, number, number]): Image {
  const rgb = Buffer.alloc(r[2] * r[3] * 3);
  for (let y = 0; y < r[3]; y++)
    rgb.set(
      img.rgb.subarray(((r[1] + y) * img.width + r[0]) * 3, ((r[1] + y) * img.width + r[0] + r[2]) * 3),
      y * r[2] * 3,
    );
  return { width: r[2], height: r[3], rgb };
}

/** The points of `r` (inset by `inset`, clipped to the image) in a PNG screenshot that are not the mask's grey. */
export function unmasked(file: string, r: [number, number, number, number], inset = 0): number {
  const img = decodePng(readFileSync(file));
  let n = 0;
  for (let y = Math.max(0, r[1] + inset); y < Math.min(img.height, r[1] + r[3] - inset); y++)
    for (let x = Math.max(0, r[0] + inset); x < Math.min(img.width, r[0] + r[2] - inset); x++) {
      const i = (y * img.width + x) * 3;
      if (img.rgb[i] !== 0x80 || img.rgb[i + 1] !== 0x80 || img.rgb[i + 2] !== 0x80) n++;
    }
  return n;
}
