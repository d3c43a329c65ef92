/**
 * Screenshots for the model: the screen (or the flow's region) with the cursor drawn in, downscaled to
 * the flow's width and re-encoded until its base64 form fits the byte budget (lower JPEG quality
 * first, then smaller). The addon captures with XShm and encodes natively, off the JS thread.
 */
import { desktop } from '@runboard/native';
import type { Frame, Rect } from './geometry.ts';
import { ScreenMasks } from './masks.ts';

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
  /** The run's masks, shared with its live view (default: this screen's own). */
  masks?: ScreenMasks | undefined;
  /** After each capture for a step (the live view takes a frame then). */
  onShot?: (() => void) | undefined;
}

const QUALITIES = [80, 65, 50, 35];
const b64len = (n: number): number => Math.ceil(n / 3) * 4;

export class Screen {
  private sourceSize: [number, number] | null = null;
  /** Screen rectangles filled grey in every capture (replay: password fields, fields given a secret). */
  private readonly masks: ScreenMasks;
  constructor(private readonly opts: ScreenOptions) {
    this.masks = opts.masks ?? new ScreenMasks();
  }

  /** Masks the rectangle (screen pixels, with a margin) in every later capture; a stale one only masks more. */
  mask(r: Rect): void {
    this.masks.add(r);
  }

  /** The capture, masked: taken raw, filled grey, then encoded (only when something is to be masked). */
  private async grab(scale: number, quality: number) {
    const opts = { ...(this.opts.region ? { region: this.opts.region } : {}), scale, cursor: true };
    if (!this.masks.size) return desktop.capture({ ...opts, format: 'jpeg', quality });
    const raw = await desktop.capture({ ...opts, format: 'raw' });
    this.masks.fill(raw);
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
          this.opts.onShot?.();
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
  masks?: ScreenMasks,
): Promise<{ data: Buffer; width: number; height: number; screenWidth: number }> {
  const w =
    screenWidth ??
    (await desktop.capture({ scale: 0.05, format: 'jpeg', quality: 10, cursor: false })).source[2];
  const scale = Math.min(1, maxWidth / w);
  if (masks?.size) {
    // Taken raw, filled grey, then encoded: the masks read after the pixels were taken (one added while
    // it was taken is in it too).
    const raw = await desktop.capture({ scale, format: 'raw', cursor: true });
    masks.fill(raw);
    const data = await desktop.encodeImage(
      { data: raw.data, width: raw.width, height: raw.height },
      { format: 'jpeg', quality },
    );
    return { data, width: raw.width, height: raw.height, screenWidth: raw.source[2] };
  }
  const r = await desktop.capture({ scale, format: 'jpeg', quality, cursor: true });
  return { data: r.data, width: r.width, height: r.height, screenWidth: r.source[2] };
}
