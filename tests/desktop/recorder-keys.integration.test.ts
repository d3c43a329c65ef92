// The recorder on the shared test desktop, for focus that moves without Tab (issue 30): a radio group
// moved by the arrow keys while its app runs behind (stopped with SIGSTOP while the keys are pressed),
// and a dialog opened and closed with Enter; and a plain field named secret when the recording starts
// (a PIN that shows its text): kept out of every byte of the recording, grey in every screenshot.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop, Recording, type Element, type ManifestStep } from '../../native/src/index.ts';
import { decodePng } from './png.ts';
import { centre, manifest } from './recorder-helpers.ts';
import { DesktopSession, eventually, findElement, repo, sleep } from './session.ts';

const TITLE = 'Runboard Keys Form';
const PIN = '5920417736';
let s: DesktopSession;
let app: ChildProcess;
let out: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  app = await s.startKeysApp(TITLE);
  await desktop.focus({ title: TITLE });
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-recorder-keys-'));
});

afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  await s?.stop();
});

const find = (role: string, name: string): Promise<Element> => findElement(TITLE, role, name);
/** Whether the element is focused now (false while it is not there). */
const focused = (title: string, role: string, name: string): Promise<boolean> =>
  findElement(title, role, name).then(
    (e) => e.focused,
    () => false,
  );
/** Where each step went: a click's element, a key step's field. */
const fields = (steps: ManifestStep[]): (string | undefined)[] =>
  steps.map((x) => (x.action.type === 'click' ? x.element?.name : x.focus?.name));

describe('focus moved without Tab', () => {
  it('arrow keys in a radio group, the app running behind: each key on the field it left, what follows on the one it entered', async () => {
    const small = await find('radio button', 'Small');
    const rec = await Recording.start({ dir: out, border: false });
    await desktop.click(...centre(small));
    expect(await eventually(() => focused(TITLE, 'radio button', 'Small'), 15_000)).toBe(true);
    await sleep(300);
    await rec.idle();
    process.kill(app.pid!, 'SIGSTOP');
    try {
      // the person's keyboard (not desktop-cli's, which reads the stopped app's tree before typing)
      const r = spawnSync(
        '/usr/bin/python3',
        [path.join(repo, 'tests/fixtures/desktop/person_key.py'), 'Down', 'Down', 'Up'],
        {
          env: s.env,
          encoding: 'utf8',
        },
      );
      expect(r.status, r.stderr).toBe(0);
    } finally {
      process.kill(app.pid!, 'SIGCONT');
    }
    // Down, Down, Up from Small: the focus ends on Medium, having been on Large.
    expect(await eventually(() => focused(TITLE, 'radio button', 'Medium'), 30_000)).toBe(true);
    await rec.idle();
    await rec.stop();
    const got = manifest(rec.dir);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'click', x: centre(small)[0], y: centre(small)[1], button: 'left' },
      { type: 'press', key: 'ArrowDown' },
      { type: 'press', key: 'ArrowDown' },
      { type: 'press', key: 'ArrowUp' },
    ]);
    expect(fields(got)).toEqual(['Small', 'Small', 'Medium', 'Large']);
    expect(got.some((x) => x.focusUnknown)).toBe(false);
  });

  it('Enter that opens a dialog and Enter that closes it: the typing in it is the dialog field’s, after it the field the focus went back to', async () => {
    const code = await find('text', 'Code');
    const rec = await Recording.start({ dir: out, border: false });
    const settle = async (): Promise<void> => {
      await sleep(300);
      await rec.idle();
    };
    await desktop.click(...centre(code));
    await settle();
    await desktop.type('7', { delayMs: 20 });
    await settle();
    await desktop.key('Return');
    const dialog = await eventually(
      async () => (await desktop.listWindows({ title: 'Confirm' })).some((w) => w.title === 'Confirm'),
      15_000,
    );
    expect(dialog, 'the dialog opened').toBe(true);
    expect(await eventually(() => focused('Confirm', 'text', 'Confirm code'), 15_000)).toBe(true);
    await settle();
    await desktop.type('42', { delayMs: 20 });
    await settle();
    await desktop.key('Return');
    expect(
      await eventually(async () => (await desktop.listWindows({ title: 'Confirm' })).length === 0, 15_000),
    ).toBe(true);
    expect(await eventually(() => focused(TITLE, 'text', 'Code'), 15_000)).toBe(true);
    await settle();
    await desktop.type('9', { delayMs: 20 });
    await settle();
    await rec.stop();
    const got = manifest(rec.dir);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'click', x: centre(code)[0], y: centre(code)[1], button: 'left' },
      { type: 'type', text: '7' },
      { type: 'press', key: 'Enter' },
      { type: 'type', text: '42' },
      { type: 'press', key: 'Enter' },
      { type: 'type', text: '9' },
    ]);
    expect(fields(got)).toEqual(['Code', 'Code', 'Code', 'Confirm code', 'Confirm code', 'Code']);
    expect(got[3]!.window?.title).toBe('Confirm');
  });
});

describe('a field named secret when the recording starts', () => {
  it('keeps what is typed there out of every byte of the recording, and greys the field in every screenshot', async () => {
    const pin = await find('text', 'PIN');
    const code = await find('text', 'Code');
    const rec = await Recording.start({ dir: out, border: false, secretFields: [' pin '] });
    await desktop.click(...centre(pin));
    await sleep(300);
    await rec.idle();
    await desktop.type(PIN, { delayMs: 15 });
    expect(await eventually(async () => (await find('text', 'PIN')).value === PIN, 15_000)).toBe(true);
    await sleep(300);
    await rec.idle();
    await desktop.click(...centre(code));
    await sleep(300);
    await rec.idle();
    await rec.stop();
    const got = manifest(rec.dir);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'click', x: centre(pin)[0], y: centre(pin)[1], button: 'left' },
      { type: 'type', secret: true },
      { type: 'click', x: centre(code)[0], y: centre(code)[1], button: 'left' },
    ]);
    expect(got[1]!.focus).toMatchObject({ name: 'PIN', secret: true });
    expect(got[0]!.element).toMatchObject({ name: 'PIN', secret: true });
    // Every byte the recording left: plain, base64 (at any of the three alignments), UTF-16.
    const forms = [
      PIN,
      ...[0, 1, 2].map((k) =>
        Buffer.from('xx'.slice(0, k) + PIN)
          .toString('base64')
          .slice(4, 14),
      ),
      Buffer.from(PIN, 'utf16le').toString('latin1'),
    ];
    const files = readdirSync(rec.dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => path.join(d.parentPath, d.name));
    for (const f of files) {
      const text = readFileSync(f).toString('latin1');
      expect(
        forms.filter((x) => text.includes(x)),
        f,
      ).toEqual([]);
    }
    // The field is grey (0x80) in every screenshot, the start's included (its middle, where the digits are).
    const shots = files.filter((f) => f.endsWith('.png'));
    expect(shots.length).toBeGreaterThanOrEqual(3);
    const [x0, y0] = [pin.bounds[0] + 4, pin.bounds[1] + Math.floor(pin.bounds[3] / 2) - 3];
    for (const f of shots) {
      const img = decodePng(readFileSync(f));
      const off: number[] = [];
      for (let y = y0; y < y0 + 6; y++)
        for (let x = x0; x < pin.bounds[0] + pin.bounds[2] - 4; x++) {
          const i = (y * img.width + x) * 3;
          if (img.rgb[i] !== 0x80 || img.rgb[i + 1] !== 0x80 || img.rgb[i + 2] !== 0x80) off.push(x);
        }
      expect(off.length, `${path.basename(f)}: pixels of the PIN field not grey`).toBe(0);
    }
  });
});
