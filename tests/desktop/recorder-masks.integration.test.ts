// The recorder's masks over windows the person never touches (decision 136): a password manager
// beside the form the steps are made in, a window that opens during the recording, one that moves, and
// one whose app does not answer. Every screenshot (a step's, an extract's) and the video must have
// every password field on screen grey, not only those of the windows the steps went to.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  desktop,
  Recording,
  type Element,
  type ManifestStep,
  type RecordingSummary,
  type Rect,
  type WindowInfo,
} from '../../native/src/index.ts';
import { centre, manifest, unmasked } from './recorder-helpers.ts';
import { DesktopSession, eventually, findElement, sleep, videoFrame } from './session.ts';

const STEPS = 'Runboard Masks Steps';
const VAULT = 'Runboard Masks Vault';
const LATE = 'Runboard Masks Late';
const HUNG = 'Runboard Masks Hung';
let s: DesktopSession;
let out: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  await s.startKeysApp(STEPS); // the window the steps are made in (no password field of its own)
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-recorder-masks-'));
});

afterAll(async () => {
  if (!process.env.KEEP_RECORDINGS) rmSync(out, { recursive: true, force: true });
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

const password = (title: string): Promise<Element> => findElement(title, 'password text', 'Password');

describe('password fields in windows the steps never went to', () => {
  let dir: string;
  let steps: ManifestStep[];
  let summary: RecordingSummary;
  let vault: WindowInfo;
  let vaultField: Rect;
  let movedField: Rect;
  let lateField: Rect;
  let hungField: Rect;
  let width: number;

  beforeAll(async () => {
    // A password manager beside the form, its password filled in, never touched by the person.
    vault = await s.startForm(VAULT, {}, [
      ...['--password', 'vault-master-pw', '--x', '700', '--y', '40'],
      ...['--move-on-usr1', '700,180'],
    ]);
    vaultField = (await password(VAULT)).bounds;
    width = (await desktop.capture({ format: 'raw' })).width;
    const code = centre(await findElement(STEPS, 'text', 'Code'));
    const small = centre(await findElement(STEPS, 'radio button', 'Small'));
    const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
    dir = rec.dir;
    const settle = async (): Promise<void> => {
      await sleep(300);
      await rec.idle();
    };
    await settle();
    await desktop.click(...code);
    await settle();
    await desktop.type('7', { delayMs: 20 });
    await settle();
    await desktop.click(...small);
    await settle();
    rec.addExtract('the code');
    await settle();
    // A window that opens during the recording (a second dialog), never read by a step.
    await s.startForm(LATE, {}, ['--password', 'late-dialog-pw', '--x', '200', '--y', '420']);
    lateField = (await password(LATE)).bounds;
    await desktop.click(...code);
    await settle();
    await desktop.type('8', { delayMs: 20 });
    await settle();
    // The password manager moves (its fields were read where it was).
    process.kill(vault.pid, 'SIGUSR1');
    const moved = await eventually(async () => (await password(VAULT)).bounds[1] !== vaultField[1], 15_000);
    expect(moved, 'the vault window moved').toBe(true);
    movedField = (await password(VAULT)).bounds;
    await desktop.click(...small);
    await settle();
    // A window whose app does not answer: it cannot be checked, and the recording says so.
    const hung = await s.startForm(HUNG, {}, ['--password', 'hung-app-pw', '--x', '1000', '--y', '460']);
    hungField = (await password(HUNG)).bounds;
    process.kill(hung.pid, 'SIGSTOP');
    try {
      await desktop.click(...code);
      await settle();
    } finally {
      process.kill(hung.pid, 'SIGCONT');
    }
    await sleep(800);
    summary = await rec.stop();
    steps = manifest(dir);
  }, 120_000);

  it('made the steps in the one window', () => {
    expect(steps.map((x) => x.action.type)).toEqual([
      'click',
      'type',
      'click',
      'extract',
      'click',
      'type',
      'click',
      'click',
    ]);
    expect(steps.filter((x) => x.window).every((x) => x.window!.title === STEPS)).toBe(true);
  });

  it('masks the untouched window’s password in every screenshot, a step’s and an extract’s, where it is', () => {
    const start = path.join(dir, 'screenshots', 'start.png');
    expect(unmasked(start, vaultField), 'start.png: the vault’s password').toBe(0);
    steps.forEach((x, i) => {
      const field = i < 6 ? vaultField : movedField;
      expect(unmasked(path.join(dir, x.screenshot), field), `${x.screenshot}: the vault’s password`).toBe(0);
    });
  });

  it('masks a window that opened during the recording from the first screenshot after it', () => {
    for (const x of steps.slice(4))
      expect(
        unmasked(path.join(dir, x.screenshot), lateField),
        `${x.screenshot}: the late window’s password`,
      ).toBe(0);
  });

  it('masks a window whose app stopped: read as it appeared, or grey whole and named in the warnings', () => {
    // The recorder reads a window when the server says it mapped (decision 140): before the app stopped,
    // or not; either way its password is grey, and a window it could not check is named once.
    const last = steps.at(-1)!.screenshot;
    expect(unmasked(path.join(dir, last), hungField), `${last}: the stopped app’s password`).toBe(0);
    const named = summary.warnings.filter((w) => w.includes(HUNG));
    expect(named.length).toBeLessThanOrEqual(1);
    for (const w of named) expect(w).toMatch(/could not be checked for secret fields/);
    const meta = JSON.parse(readFileSync(path.join(dir, 'recording.json'), 'utf8')) as { warnings: string[] };
    expect(meta.warnings).toEqual(summary.warnings);
  });

  it('covers each of those fields in the video', () => {
    expect(summary.video).toMatchObject({ complete: true });
    const file = path.join(dir, 'video.mp4');
    const last = videoFrame(file, -0.2);
    for (const [what, r] of [
      ['the late window’s password', lateField],
      ['the moved vault’s password', movedField],
    ] as const) {
      let grey = 0;
      let n = 0;
      for (let y = r[1] + 4; y < r[1] + r[3] - 4; y++)
        for (let x = r[0] + 4; x < r[0] + r[2] - 4; x++, n++) {
          const i = (y * width + x) * 3;
          if ([0, 1, 2].every((c) => Math.abs(last[i + c]! - 0x80) <= 12)) grey++;
        }
      expect(grey / n, `${what} is grey in the video's last frame`).toBeGreaterThan(0.97);
    }
  });
});
