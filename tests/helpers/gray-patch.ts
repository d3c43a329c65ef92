/**
 * The grey levels of the middle of a screen rectangle in a JPEG of the whole screen, decoded by ffmpeg
 * (not the addon: the test reads the file as any viewer would). Used to check that a field is masked
 * grey (0x80) in a run's screenshots and live frames.
 */
import { execFileSync } from 'node:child_process';

/** `span`: the part of the rectangle read (fractions of its width and height), away from its edges. */
export function grayPatch(
  jpeg: string,
  screenW: number,
  rect: [number, number, number, number],
  span: { x: [number, number]; y: [number, number] } = { x: [0.2, 0.8], y: [0.3, 0.7] },
): { mean: number; min: number; max: number } {
  const [w, h] = execFileSync('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=width,height',
    '-of',
    'csv=p=0',
    jpeg,
  ])
    .toString()
    .trim()
    .split(',')
    .map(Number) as [number, number];
  const gray = execFileSync('ffmpeg', ['-v', 'error', '-i', jpeg, '-f', 'rawvideo', '-pix_fmt', 'gray', '-']);
  const s = w / screenW;
  const x0 = Math.round((rect[0] + rect[2] * span.x[0]) * s);
  const x1 = Math.round((rect[0] + rect[2] * span.x[1]) * s);
  const y0 = Math.round((rect[1] + rect[3] * span.y[0]) * s);
  const y1 = Math.round((rect[1] + rect[3] * span.y[1]) * s);
  const px: number[] = [];
  for (let y = y0; y < Math.min(y1, h); y++)
    for (let x = x0; x < Math.min(x1, w); x++) px.push(gray[y * w + x]!);
  const mean = px.reduce((a, b) => a + b, 0) / px.length;
  return { mean, min: Math.min(...px), max: Math.max(...px) };
}
