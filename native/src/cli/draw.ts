// screenshot-coords' drawing: a red box round each element and its centre's coordinates "(x,y)" in
// white on red at the centre, on RGBA rows, with a 3x5 pixel font (digits, parentheses, comma, minus)
// drawn at twice its size. No font library: the labels need thirteen glyphs.

const GLYPHS: Record<string, string[]> = {
  '0': ['111', '101', '101', '101', '111'],
  '1': ['010', '110', '010', '010', '111'],
  '2': ['111', '001', '111', '100', '111'],
  '3': ['111', '001', '111', '001', '111'],
  '4': ['101', '101', '111', '001', '001'],
  '5': ['111', '100', '111', '001', '111'],
  '6': ['111', '100', '111', '101', '111'],
  '7': ['111', '001', '010', '010', '010'],
  '8': ['111', '101', '111', '101', '111'],
  '9': ['111', '101', '111', '001', '111'],
  '(': ['010', '100', '100', '100', '010'],
  ')': ['010', '001', '001', '001', '010'],
  ',': ['000', '000', '000', '010', '100'],
  '-': ['000', '000', '111', '000', '000'],
};

const SCALE = 2;
const RED: [number, number, number] = [230, 20, 20];
const WHITE: [number, number, number] = [255, 255, 255];

function put(px: Buffer, w: number, h: number, x: number, y: number, c: [number, number, number]): void {
  if (x < 0 || y < 0 || x >= w || y >= h) return;
  const o = (y * w + x) * 4;
  px[o] = c[0];
  px[o + 1] = c[1];
  px[o + 2] = c[2];
  px[o + 3] = 255;
}

function rect(
  px: Buffer,
  w: number,
  h: number,
  x: number,
  y: number,
  rw: number,
  rh: number,
  c: [number, number, number],
  fill = false,
): void {
  for (let j = 0; j < rh; j++)
    for (let i = 0; i < rw; i++)
      if (fill || i === 0 || j === 0 || i === rw - 1 || j === rh - 1) put(px, w, h, x + i, y + j, c);
}

/** Text size in pixels at the drawing scale. */
export function textSize(text: string): [number, number] {
  return [text.length * 4 * SCALE - SCALE, 5 * SCALE];
}

/** Draws each box (image pixels) in red and its text centred in it, white on a red background. */
export function drawLabels(
  px: Buffer,
  w: number,
  h: number,
  labels: { box: [number, number, number, number]; text: string }[],
): void {
  for (const { box } of labels)
    rect(
      px,
      w,
      h,
      Math.round(box[0]),
      Math.round(box[1]),
      Math.max(1, Math.round(box[2])),
      Math.max(1, Math.round(box[3])),
      RED,
    );
  for (const { box, text } of labels) {
    const [tw, th] = textSize(text);
    const x0 = Math.round(box[0] + box[2] / 2 - tw / 2);
    const y0 = Math.round(box[1] + box[3] / 2 - th / 2);
    rect(px, w, h, x0 - 2, y0 - 2, tw + 4, th + 4, RED, true);
    let x = x0;
    for (const ch of text) {
      const g = GLYPHS[ch];
      if (g)
        for (let gy = 0; gy < 5; gy++)
          for (let gx = 0; gx < 3; gx++)
            if (g[gy]![gx] === '1')
              rect(px, w, h, x + gx * SCALE, y0 + gy * SCALE, SCALE, SCALE, WHITE, true);
      x += 4 * SCALE;
    }
  }
}
