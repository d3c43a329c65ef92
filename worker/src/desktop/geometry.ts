/**
 * Coordinates between the screenshot the model sees and the screen the input goes to.
 *
 * The model sees `source` (a screen rectangle in physical X pixels: the whole screen, or one monitor
 * of a multi-monitor layout, at its offset) downscaled to `image` pixels. A point it names on the
 * image is a downscaled pixel; it stands for a block of k×k screen pixels (k = source / image), and it
 * maps to that block's centre, offset by the source's origin, clamped into the source. X input
 * (XTest) and X screenshots are both physical pixels, so a HiDPI toolkit scale (GDK_SCALE) needs no
 * factor here; accessibility bounds, which the addon already reports in physical pixels, go the other
 * way through `toImageRect` so that what `desktop_read` tells the model is in the image's coordinates.
 */
export type Rect = [number, number, number, number];

export interface Frame {
  /** Screen rectangle captured [x, y, w, h] (physical pixels). */
  source: Rect;
  /** Size of the image sent to the model. */
  width: number;
  height: number;
}

const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** A point on the image → the screen pixel to act on. */
export function toScreen(frame: Frame, x: number, y: number): [number, number] {
  const [sx, sy, sw, sh] = frame.source;
  const kx = sw / frame.width;
  const ky = sh / frame.height;
  const px = Math.floor((x + 0.5) * kx);
  const py = Math.floor((y + 0.5) * ky);
  return [sx + clamp(px, 0, sw - 1), sy + clamp(py, 0, sh - 1)];
}

/** A screen point → the image pixel that shows it (e.g. the cursor position, for the model). */
export function toImage(frame: Frame, x: number, y: number): [number, number] {
  const [sx, sy, sw, sh] = frame.source;
  return [
    clamp(Math.floor(((x - sx) * frame.width) / sw), 0, frame.width - 1),
    clamp(Math.floor(((y - sy) * frame.height) / sh), 0, frame.height - 1),
  ];
}

/** A screen rectangle → the image rectangle (rounded outward to whole image pixels). */
export function toImageRect(frame: Frame, r: Rect): Rect {
  const [sx, sy, sw, sh] = frame.source;
  const fx = frame.width / sw;
  const fy = frame.height / sh;
  const x0 = Math.floor((r[0] - sx) * fx);
  const y0 = Math.floor((r[1] - sy) * fy);
  const x1 = Math.ceil((r[0] + r[2] - sx) * fx);
  const y1 = Math.ceil((r[1] + r[3] - sy) * fy);
  return [x0, y0, Math.max(0, x1 - x0), Math.max(0, y1 - y0)];
}

/** Whether an image point lies on the image (a point off it is a tool-call error, not a guess). */
export function onImage(frame: Frame, x: number, y: number): boolean {
  return Number.isFinite(x) && Number.isFinite(y) && x >= 0 && y >= 0 && x < frame.width && y < frame.height;
}
