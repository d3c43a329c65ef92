/**
 * The screen rectangles a run keeps grey in every picture it takes of the display (replay: password
 * fields, and every field a sensitive value is typed into): the model's screenshots, the filmstrip
 * (screen.ts) and the live view of a private display (live.ts) share one set, so a field masked for one
 * is masked in all of them from the moment it is added.
 */
import type { Rect } from './geometry.ts';

/** The grey a masked rectangle is filled with (the recorder's, native/src/desktop/recording-elements.ts). */
const MASK_GREY = 0x80;
/** Around a masked field, as the recorder does: its reported bounds vary by a few pixels between reads. */
const MASK_MARGIN = 12;

/** A raw capture (4 bytes a pixel) of `source` (screen pixels), scaled to width x height. */
export interface RawShot {
  data: Buffer;
  width: number;
  height: number;
  source: Rect;
}

export class ScreenMasks {
  private readonly rects = new Map<string, Rect>();

  /** Masks the rectangle (screen pixels, with a margin) in every later picture; a stale one only masks more. */
  add(r: Rect): void {
    const m: Rect = [r[0] - MASK_MARGIN, r[1] - MASK_MARGIN, r[2] + 2 * MASK_MARGIN, r[3] + 2 * MASK_MARGIN];
    this.rects.set(m.join(','), m);
  }

  get size(): number {
    return this.rects.size;
  }

  /** Fills every rectangle grey in a raw capture, in place (the alpha bytes too: JPEG ignores them). */
  fill(raw: RawShot): void {
    const [ox, oy, sw] = raw.source;
    const k = raw.width / sw;
    for (const [rx, ry, rw, rh] of this.rects.values()) {
      const x0 = Math.max(0, Math.floor((rx - ox) * k));
      const y0 = Math.max(0, Math.floor((ry - oy) * k));
      const x1 = Math.min(raw.width, Math.ceil((rx - ox + rw) * k));
      const y1 = Math.min(raw.height, Math.ceil((ry - oy + rh) * k));
      for (let y = y0; y < y1; y++)
        raw.data.fill(MASK_GREY, (y * raw.width + x0) * 4, (y * raw.width + x1) * 4);
    }
  }
}
