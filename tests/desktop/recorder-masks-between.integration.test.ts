// The recorder's masks between the input events (decision 140): a window that cannot be read is grey
// whole; a window moved between two events is masked in the video at every place it passed, a window
// opened and closed between two events too. Every step of these happens with no input event in between
// (the events are clicks on the bare desktop), so only what the recorder follows between events can
// mask them. The video is checked in every frame, so no check depends on when a frame was taken.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  desktop,
  Recording,
  type RecordingSummary,
  type Rect,
  type WindowInfo,
} from '../../native/src/index.ts';
import { manifest, unmasked } from './recorder-helpers.ts';
import { DesktopSession, eventually, findElement, sleep } from './session.ts';

/** The windows' titles: one dragged, one opened and closed, one without a tree, one whose app stops. */
const [DRAGGED, BRIEF, UNREAD, HUNG, SHIFTED] = ['Dragged', 'Brief', 'Unread', 'Hung', 'Shifted'].map(
  (w) => `Runboard Between ${w}`,
) as [string, string, string, string, string];
/**
 * Points of the bare desktop (no window ever covers them here): the clicks that make the events, each
 * at another point (two at one point soon after each other would be one double click).
 */
const FREE: [number, number][] = [
  [1060, 30],
  [1220, 150],
  [1060, 150],
  [1220, 30],
  [1140, 90],
];
let s: DesktopSession;
let out: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-recorder-between-'));
});

afterAll(async () => {
  if (!process.env.KEEP_RECORDINGS) rmSync(out, { recursive: true, force: true });
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

const passwordOf = async (title: string): Promise<Rect> =>
  (await findElement(title, 'password text', 'Password')).bounds;
/** The mask's grey, give or take what the video's encoder changes. */
const isGrey = (rgb: ArrayLike<number>, i: number): boolean =>
  [0, 1, 2].every((c) => Math.abs(rgb[i + c]! - 0x80) <= 12);

/** The least share of grey in `r` (inset by 4: the encoder blurs edges) over every frame of the video. */
function greyInEveryFrame(file: string, r: Rect, screen: { width: number; height: number }): number {
  const x = Math.max(0, r[0] + 4);
  const y = Math.max(0, r[1] + 4);
  const w = Math.min(screen.width, r[0] + r[2] - 4) - x;
  const h = Math.min(screen.height, r[1] + r[3] - 4) - y;
  const run = spawnSync(
    'ffmpeg',
    [
      '-v',
      'error',
      '-i',
      file,
      '-vf',
      `crop=${w}:${h}:${x}:${y}`,
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-',
    ],
    { maxBuffer: 512 * 1024 * 1024 },
  );
  if (run.status !== 0) throw new Error(`ffmpeg could not read ${file}: ${run.stderr?.toString()}`);
  const size = w * h * 3;
  let least = 1;
  for (let f = 0; f + size <= run.stdout.length; f += size) {
    let grey = 0;
    for (let i = f; i < f + size; i += 3) if (isGrey(run.stdout, i)) grey++;
    least = Math.min(least, grey / (w * h));
  }
  return least;
}

describe('secret fields between the input events, and windows that cannot be read', () => {
  let dir: string;
  let summary: RecordingSummary;
  let screen: { width: number; height: number };
  const dragged: Rect[] = []; // the dragged window's field at each place: before, between, after
  let brief: Rect;
  let unread: WindowInfo;
  let hung: WindowInfo;
  let hungField: Rect;
  let shots: string[];

  beforeAll(async () => {
    const shot = await desktop.capture({ format: 'raw' });
    screen = { width: shot.width, height: shot.height };
    // A form whose window a person drags: it goes through its places with no input event in between.
    const drag = await s.startForm(DRAGGED, {}, [
      ...['--password', 'dragged-pw', '--x', '0', '--y', '0'],
      ...['--path-on-usr2', '0,160;0,330'],
    ]);
    dragged.push(await passwordOf(DRAGGED));
    // An app that does not answer from before the recording: its window cannot be read at the start.
    hung = await s.startForm(HUNG, {}, ['--password', 'hung-pw', '--x', '520', '--y', '640']);
    hungField = await passwordOf(HUNG);
    process.kill(hung.pid, 'SIGSTOP');
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    dir = rec.dir;
    let events = 0;
    const event = async (): Promise<void> => {
      await desktop.click(...FREE[events++]!);
      await sleep(200);
      await rec.idle();
    };
    try {
      await event(); // 1: the hung window is grey whole
    } finally {
      process.kill(hung.pid, 'SIGCONT');
    }
    // 2: the app answers again; a step in its window reads it: from then on its field alone is grey
    await desktop.click(hungField[0] - 60, hungField[1] + hungField[3] / 2);
    await sleep(200);
    await rec.idle();
    // A window with no accessibility tree at all (its app does not answer AT-SPI), its password shown.
    unread = await s.startForm(
      UNREAD,
      { NO_AT_BRIDGE: '1' },
      ['--password', 'unread-pw', '--x', '800', '--y', '620'],
      false,
    );
    const painted = await eventually(async () => {
      const r = await desktop.capture({ region: unread.bounds, format: 'raw', cursor: false });
      return new Set(Array.from({ length: 200 }, (_, i) => r.data[(i * 997 * 4) % r.data.length])).size > 2;
    }, 15_000);
    expect(painted, 'the unread window is painted').toBe(true);
    await event(); // 3: the unread window is grey whole
    process.kill(unread.pid, 'SIGTERM');
    await eventually(async () => (await desktop.listWindows({ title: UNREAD })).length === 0, 15_000);
    await event(); // 4
    // Dragged between two events: through a place no event saw, then on.
    process.kill(drag.pid, 'SIGUSR2');
    expect(await eventually(async () => (await passwordOf(DRAGGED))[1] !== dragged[0]![1], 15_000)).toBe(
      true,
    );
    dragged.push(await passwordOf(DRAGGED));
    await sleep(500); // the video takes frames of it there
    process.kill(drag.pid, 'SIGUSR2');
    expect(await eventually(async () => (await passwordOf(DRAGGED))[1] !== dragged[1]![1], 15_000)).toBe(
      true,
    );
    dragged.push(await passwordOf(DRAGGED));
    // A window opened and closed between two events.
    const b = await s.startForm(BRIEF, {}, ['--password', 'brief-pw', '--x', '520', '--y', '0']);
    brief = await passwordOf(BRIEF);
    await sleep(500);
    process.kill(b.pid, 'SIGTERM');
    await eventually(async () => (await desktop.listWindows({ title: BRIEF })).length === 0, 15_000);
    await event(); // 5
    summary = await rec.stop();
    shots = manifest(dir).map((x) => path.join(dir, x.screenshot));
    for (const pid of [drag.pid, hung.pid]) process.kill(pid, 'SIGTERM'); // the next recording's screen is its own
    await eventually(async () => (await desktop.listWindows()).length === 0, 15_000);
  }, 180_000);

  it('made one step for each event', () => {
    expect(shots).toHaveLength(5);
  });

  it('greys a window that cannot be read, whole, in the screenshots and the video, and says so', () => {
    expect(unmasked(shots[2]!, unread.bounds), 'step 3: the unread window').toBe(0);
    expect(greyInEveryFrame(path.join(dir, 'video.mp4'), unread.bounds, screen)).toBeGreaterThan(0.97);
    expect(summary.warnings.filter((w) => w.includes(UNREAD))).toEqual([
      expect.stringMatching(/could not be checked for secret fields.*grey, whole/),
    ]);
  });

  it('greys an app that does not answer until a read of it answers, then its field alone', () => {
    expect(unmasked(shots[0]!, hung.bounds, 2), 'step 1: the hung window').toBe(0);
    expect(unmasked(shots[3]!, hungField), 'step 4: its field').toBe(0);
    const label: Rect = [hungField[0] - 80, hungField[1] + 4, 40, hungField[3] - 8]; // its "Password" label
    expect(unmasked(shots[3]!, label), 'step 4: its label is shown').toBeGreaterThan(0);
  });

  it('covers a dragged window’s field in the video at every place it passed, between the events too', () => {
    expect(dragged).toHaveLength(3);
    dragged.forEach((r, i) =>
      expect(greyInEveryFrame(path.join(dir, 'video.mp4'), r, screen), `place ${i}`).toBeGreaterThan(0.97),
    );
  });

  it('covers a window opened and closed between two events in the video', () => {
    expect(greyInEveryFrame(path.join(dir, 'video.mp4'), brief, screen)).toBeGreaterThan(0.97);
  });
});

describe('a secret field that moves inside its window, the window keeping its size', () => {
  let dir: string;
  let shots: string[];
  let before: Rect;
  let after: Rect;
  let screen: { width: number; height: number };

  beforeAll(async () => {
    const shot = await desktop.capture({ format: 'raw' });
    screen = { width: shot.width, height: shot.height };
    const form = await s.startForm(SHIFTED, {}, [
      ...['--password', 'shifted-pw', '--x', '0', '--y', '0', '--swap-on-winch'],
    ]);
    const size = form.bounds.slice(2).join('x');
    before = await passwordOf(SHIFTED);
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    dir = rec.dir;
    await desktop.click(...FREE[0]!);
    await rec.idle();
    // A row appears above it, or the layout changes: the field is elsewhere in the same window.
    process.kill(form.pid, 'SIGWINCH');
    expect(await eventually(async () => (await passwordOf(SHIFTED))[1] !== before[1], 15_000)).toBe(true);
    after = await passwordOf(SHIFTED);
    const [now] = await desktop.listWindows({ title: SHIFTED });
    expect(now!.bounds.slice(2).join('x'), 'the window kept its size').toBe(size);
    await sleep(300); // the video takes frames of it there
    await desktop.click(...FREE[1]!);
    await rec.idle();
    await rec.stop();
    shots = manifest(dir).map((x) => path.join(dir, x.screenshot));
  }, 120_000);

  it('masks it where it is now in the next step’s screenshot, and where it was', () => {
    expect(shots).toHaveLength(2);
    expect(unmasked(shots[0]!, before), 'step 1: where it was').toBe(0);
    expect(unmasked(shots[1]!, after), 'step 2: where it is now').toBe(0);
  });

  it('covers both its places in every frame of the video', () => {
    for (const [what, r] of [
      ['where it was', before],
      ['where it went', after],
    ] as const)
      expect(greyInEveryFrame(path.join(dir, 'video.mp4'), r, screen), what).toBeGreaterThan(0.97);
  });
});
