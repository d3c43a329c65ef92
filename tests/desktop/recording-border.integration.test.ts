// The red border a recording shows around the recorded display (seed 000): on the screen while it
// records, click-through, gone when it stops, and never in what is recorded: the pre-action screenshots
// show what is below it (the windows' own images), the video's outer strips repeat their neighbours.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BORDER_WIDTH,
  desktop,
  Recording,
  type ManifestStep,
  type WindowInfo,
} from '../../native/src/index.ts';
import { decodePng } from './png.ts';
import { DesktopSession, eventually, sleep, videoFrame } from './session.ts';

const TITLE = 'Runboard Border Form';
let s: DesktopSession;
let form: WindowInfo;
let out: string;
let screen: { width: number; height: number };

/** The border's colour (#e0241b), loosely: what an H.264 round trip leaves of it too. */
const isRed = (r: number, g: number, b: number): boolean => r > 170 && g < 90 && b < 90;

/** The pixels of the border's strips ([x, y] pairs) of a width x height screen. */
function stripPixels(width: number, height: number): [number, number][] {
  const out: [number, number][] = [];
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      if (x < BORDER_WIDTH || y < BORDER_WIDTH || x >= width - BORDER_WIDTH || y >= height - BORDER_WIDTH)
        out.push([x, y]);
  return out;
}

/** The screen now, as RGBA. */
async function screenNow(): Promise<Buffer> {
  return (await desktop.capture({ format: 'raw', cursor: false })).data;
}

beforeAll(async () => {
  s = await DesktopSession.start();
  // At the top-left corner: its frame and title bar lie under the border's top and left strips.
  form = await s.startForm(TITLE, {}, ['--x', '0', '--y', '0']);
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-border-'));
  const { source } = await desktop.capture({});
  screen = { width: source[2], height: source[3] };
}, 60_000);

afterAll(async () => {
  if (!process.env.KEEP_RECORDINGS) rmSync(out, { recursive: true, force: true });
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

describe('the recording border', () => {
  it('is on the screen while recording, and in neither the screenshots nor the video', async () => {
    const strips = stripPixels(screen.width, screen.height);
    const redIn = (rgba: Buffer, step = 4): number =>
      strips.filter(([x, y]) => {
        const i = (y * screen.width + x) * step;
        return isRed(rgba[i]!, rgba[i + 1]!, rgba[i + 2]!);
      }).length;
    const before = await screenNow();
    expect(redIn(before), 'no red at the edges before recording').toBe(0);

    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    // The person sees it: every pixel of the strips is red on the screen.
    const shown = await eventually(async () => redIn(await screenNow()) === strips.length, 5000);
    expect(shown, 'the border covers the edges of the screen').toBe(true);
    await sleep(600);
    // Click-through: a click on the left strip, over the form, reaches the form's window.
    const edgeY = form.bounds[1] + Math.floor(form.bounds[3] / 2);
    await desktop.click(1, edgeY);
    await rec.idle();
    await sleep(600);
    const summary = await rec.stop();
    expect(summary.warnings).toEqual([]);
    expect(redIn(await screenNow()), 'the border is gone once the recording stopped').toBe(0);

    const steps = readFileSync(path.join(rec.dir, 'manifest.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ManifestStep);
    expect(steps.map((x) => x.action)).toEqual([{ type: 'click', x: 1, y: edgeY, button: 'left' }]);
    expect(steps[0]!.window?.title).toBe(TITLE);

    // The screenshots: no red, and the strips hold what was below the border (the form's frame, the
    // desktop): the same pixels as the screen before the recording.
    for (const file of ['screenshots/start.png', steps[0]!.screenshot]) {
      const img = decodePng(readFileSync(path.join(rec.dir, file)));
      expect([img.width, img.height]).toEqual([screen.width, screen.height]);
      expect(redIn(Buffer.from(img.rgb), 3), `red border pixels in ${file}`).toBe(0);
      const same = strips.filter(([x, y]) => {
        const i = y * screen.width + x;
        return [0, 1, 2].every((c) => Math.abs(img.rgb[i * 3 + c]! - before[i * 4 + c]!) <= 2);
      }).length;
      expect(same / strips.length, `the strips of ${file} show what is below the border`).toBeGreaterThan(
        0.99,
      );
    }

    // The video: no red at its edges, first frame to last.
    const video = path.join(rec.dir, 'video.mp4');
    for (const at of [0, 0.5, -0.2]) {
      const f = videoFrame(video, at);
      expect(f.length).toBe(screen.width * screen.height * 3);
      expect(redIn(f, 3), `red border pixels in the video at ${at} s`).toBe(0);
    }
  }, 60_000);

  it('can be left out', async () => {
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, border: false });
    await sleep(300);
    const strips = stripPixels(screen.width, screen.height);
    const shot = await screenNow();
    const red = strips.filter(([x, y]) => {
      const i = (y * screen.width + x) * 4;
      return isRed(shot[i]!, shot[i + 1]!, shot[i + 2]!);
    }).length;
    await rec.stop();
    expect(red).toBe(0);
  }, 30_000);
});
