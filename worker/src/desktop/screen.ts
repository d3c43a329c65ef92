/**
 * Screenshots for the model: the screen (or the flow's region) with the cursor drawn in, downscaled to
 * the flow's width and re-encoded until its base64 form fits the byte budget (lower JPEG quality
 * first, then smaller). The addon captures with XShm and encodes natively, off the JS thread.
 */
import { desktop } from '@runboard/native';
import type { Frame, Rect } from './geometry.ts';

export interface Shot extends Frame {
  data: Buffer;
  mime: 'image/jpeg';
  /** Length of the base64 form (what the budget counts). */
  base64Bytes: number;
  quality: number;
  captureMs: number;
  attempts: number;
}

export interface ScreenOptions {
  region?: Rect | undefined;
  maxWidth: number;
  maxBytes: number;
}

const QUALITIES = [80, 65, 50, 35];
const b64len = (n: number): number => Math.ceil(n / 3) * 4;

/** The grey a masked rectangle is filled with (the recorder's, native/src/desktop/recording.ts). */
const MASK_GREY = 0x80;
/** Around a masked field, as the recorder does: its reported bounds vary by a few pixels between reads. */
const MASK_MARGIN = 12;

export class Screen {
  private sourceSize: [number, number] | null = null;
  /** Screen rectangles filled grey in every capture (replay: password fields, fields given a secret). */
  private readonly masks = new Map<string, Rect>();
  constructor(private readonly opts: ScreenOptions) {}

  /** Masks the rectangle (screen pixels, with a margin) in every later capture; a stale one only masks more. */
  mask(r: Rect): void {
    const m: Rect = [r[0] - MASK_MARGIN, r[1] - MASK_MARGIN, r[2] + 2 * MASK_MARGIN, r[3] + 2 * MASK_MARGIN];
    this.masks.set(m.join(','), m);
  }

  /** The capture, masked: taken raw, filled grey, then encoded (only when something is to be masked). */
  private async grab(scale: number, quality: number) {
    const opts = { ...(this.opts.region ? { region: this.opts.region } : {}), scale, cursor: true };
    if (!this.masks.size) return desktop.capture({ ...opts, format: 'jpeg', quality });
    const raw = await desktop.capture({ ...opts, format: 'raw' });
    const [ox, oy, sw] = raw.source;
    const k = raw.width / sw;
    for (const [rx, ry, rw, rh] of this.masks.values()) {
      const x0 = Math.max(0, Math.floor((rx - ox) * k));
      const y0 = Math.max(0, Math.floor((ry - oy) * k));
      const x1 = Math.min(raw.width, Math.ceil((rx - ox + rw) * k));
      const y1 = Math.min(raw.height, Math.ceil((ry - oy + rh) * k));
      for (let y = y0; y < y1; y++)
        raw.data.fill(MASK_GREY, (y * raw.width + x0) * 4, (y * raw.width + x1) * 4);
    }
    // the alpha bytes were filled too (0x80): encoders ignore alpha for JPEG
    const data = await desktop.encodeImage(
      { data: raw.data, width: raw.width, height: raw.height },
      { format: 'jpeg', quality },
    );
    return { ...raw, data, format: 'jpeg' as const };
  }

  /** Size of what is captured, asked of X once (a tiny capture returns the source rectangle). */
  private async size(): Promise<[number, number]> {
    if (this.opts.region) return [this.opts.region[2], this.opts.region[3]];
    if (!this.sourceSize) {
      const probe = await desktop.capture({ scale: 0.05, format: 'jpeg', quality: 10, cursor: false });
      this.sourceSize = [probe.source[2], probe.source[3]];
    }
    return this.sourceSize;
  }

  async capture(): Promise<Shot> {
    const t0 = performance.now();
    const [w] = await this.size();
    let scale = Math.min(1, this.opts.maxWidth / w);
    let attempts = 0;
    for (;;) {
      for (const quality of QUALITIES) {
        attempts++;
        const r = await this.grab(scale, quality);
        const base64Bytes = b64len(r.data.length);
        if (base64Bytes <= this.opts.maxBytes || (scale <= 0.05 && quality === QUALITIES.at(-1))) {
          return {
            data: r.data,
            mime: 'image/jpeg',
            base64Bytes,
            quality,
            width: r.width,
            height: r.height,
            source: r.source,
            captureMs: performance.now() - t0,
            attempts,
          };
        }
      }
      scale = Math.max(0.05, scale * 0.75);
    }
  }
}

/**
 * One small frame of the whole display for the person watching the run (the inspector's live view), not
 * for the model: the same native capture (cursor drawn in), scaled to `maxWidth`, one JPEG quality, no
 * byte budget.
 */
export async function previewFrame(
  maxWidth: number,
  quality: number,
  screenWidth?: number,
): Promise<{ data: Buffer; width: number; height: number; screenWidth: number }> {
  const w =
    screenWidth ??
    (await desktop.capture({ scale: 0.05, format: 'jpeg', quality: 10, cursor: false })).source[2];
  const r = await desktop.capture({
    scale: Math.min(1, maxWidth / w),
    format: 'jpeg',
    quality,
    cursor: true,
  });
  return { data: r.data, width: r.width, height: r.height, screenWidth: r.source[2] };
}
