// A recording's pause and the input still on its way to the recorder when it comes (decision 120, and
// decision 123 for the order of the steps around it). The person's input is made by another process
// (desktop-cli, spawnSync): while it runs this process's JavaScript is blocked, so every event of it
// is still in flight (in the X server, the recorder's thread or the addon's queue) when the pause or
// the answer comes right after. That is a recorder running behind on a loaded machine, made certain:
// no sleeps, no load needed. The steps' order is asserted. An extract added without a Ctrl+I (the
// Pause button, or not paused) is placed at its own instant among the input and carries the screen and
// the element as they are when it is added (decision 130).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  desktop,
  Recording,
  type Element,
  type ManifestStep,
  type RecordingOptions,
} from '../../native/src/index.ts';
import { decodePng } from './png.ts';
import { centre, crop, differing, manifest, painted } from './recorder-helpers.ts';
import { DesktopSession, eventually, findElement } from './session.ts';

const TITLE = 'Runboard Recorder Pause Form';
let s: DesktopSession;
let out: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  await s.startForm(TITLE);
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-recorder-pause-'));
});

afterAll(async () => {
  await s?.stop(); // first: a beforeAll that failed half-way leaves no desktop behind either
  if (out) rmSync(out, { recursive: true, force: true });
  expect(s?.leftovers() ?? [], 'processes the suite started and left running').toEqual([]);
});

const find = (role: string, name: string): Promise<Element> => findElement(TITLE, role, name);

/** The person's input, from another process; this process's JavaScript waits for it (nothing is read meanwhile). */
function person(...args: string[]): void {
  const r = s.run(args);
  expect(r.code, `desktop-cli ${args.join(' ')}: ${r.stderr}`).toBe(0);
}

/** A recording into the suite's folder, without the border (no window of its own over the form). */
const record = (options: Omit<RecordingOptions, 'dir'> = {}): Promise<Recording> =>
  Recording.start({ dir: out, border: false, ...options });

/** Stops the recording and reads its steps. */
async function steps(rec: Recording): Promise<ManifestStep[]> {
  await rec.stop();
  return manifest(rec.dir);
}

/** The steps' instants never go back. */
function inOrder(got: ManifestStep[]): void {
  expect(got.map((x) => x.at)).toEqual([...got.map((x) => x.at)].sort((a, b) => a - b));
}

describe('input in flight at a pause', () => {
  // Each test starts with the Name field focused and empty, before its recording starts (none of this
  // is recorded); the pointer rests on the field (its click).
  beforeEach(async () => {
    const name = await find('text', 'Name');
    await desktop.click(...centre(name));
    await desktop.key('ctrl+a', { waitHandled: true });
    await desktop.key('BackSpace', { waitHandled: true });
    expect(await eventually(async () => (await find('text', 'Name')).value === '', 15_000)).toBe(true);
  });

  it('Pause (pause()) right after typing: the typing is a step before the extract and the note added while paused, not part of the typing after the resume', async () => {
    const rec = await record();
    person('type', '--text', 'before');
    // At once: none of the typing has reached this process yet.
    rec.pause();
    rec.addExtract('the name typed');
    rec.addDetails('after the pause');
    rec.resume();
    person('type', '--text', 'after');
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'before' },
      { type: 'extract', query: 'the name typed' },
      { type: 'type', text: 'after' },
    ]);
    expect(got.map((x) => x.details)).toEqual([undefined, undefined, 'after the pause']);
    inOrder(got);
  });

  it('Ctrl+I right after typing: the typing is a step before the extract', async () => {
    let asked = 0;
    const rec = await record({ onContextRequest: () => asked++ });
    person('type', '--text', 'typed');
    person('type', '--key', 'ctrl+i');
    expect(await eventually(async () => rec.isPaused, 15_000)).toBe(true);
    expect(asked).toBe(1);
    rec.addExtract('the name typed');
    rec.resume();
    person('type', '--text', 'next');
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'typed' },
      { type: 'extract', query: 'the name typed' },
      { type: 'type', text: 'next' },
    ]);
    inOrder(got);
  });

  it('Ctrl+I answered before the recorder has read the keys after it: they are still not recorded, and the note goes to the step after the resume', async () => {
    let answered!: () => void;
    const asked = new Promise<void>((res) => (answered = res));
    let answer = (): void => {};
    const rec = await record({ onContextRequest: () => answer() });
    answer = () => {
      // Answered at once, as the person's answer comes before a recorder running far behind has read
      // the keys typed after the Ctrl+I (still in flight here: the person's process ran to its end).
      rec.addExtract('the name typed');
      rec.addDetails('the next step');
      rec.resume();
      answered();
    };
    person('type', '--text', 'kept');
    person('type', '--key', 'ctrl+i');
    person('type', '--text', 'asked'); // after the Ctrl+I, before the answer: not part of the recording
    await asked;
    person('type', '--key', 'Tab');
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'kept' },
      { type: 'extract', query: 'the name typed' },
      { type: 'press', key: 'Tab' },
    ]);
    expect(got.map((x) => x.details)).toEqual([undefined, undefined, 'the next step']);
  });

  it("Pause, then an extract: it carries the screen and the element as they are when it is added, not the start's screen and no element", async () => {
    const field = (await find('text', 'Name')).bounds;
    const whole: [number, number, number, number] = [0, 0, field[2], field[3]];
    const rec = await record();
    const startFile = path.join(rec.dir, 'screenshots', 'start.png');
    expect(await eventually(async () => existsSync(startFile), 15_000)).toBe(true);
    const start = crop(decodePng(readFileSync(startFile)), field); // the field empty
    person('type', '--text', 'before');
    rec.pause();
    person('type', '--text', 'during'); // while paused: not recorded, but on the screen at the extract
    expect(await eventually(async () => (await find('text', 'Name')).value === 'beforeduring', 15_000)).toBe(
      true,
    );
    await painted(field, start, 0.02);
    rec.addExtract('the name typed');
    rec.resume();
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'before' },
      { type: 'extract', query: 'the name typed' },
    ]);
    const extract = got[1]!;
    expect(extract.element).toMatchObject({ role: 'text', name: 'Name' });
    expect(extract.window?.title).toBe(TITLE);
    expect(extract.elementMissing).toBeUndefined();
    // The screen when it was added shows the typed name; the start's had the field empty.
    const seen = crop(decodePng(readFileSync(path.join(rec.dir, extract.screenshot))), field);
    expect(differing(seen, start, whole), "the typed name in the extract's screenshot").toBeGreaterThan(0.02);
  });

  it('an extract added while not paused goes where it happened among the input still on its way', async () => {
    const rec = await record();
    person('type', '--text', 'first');
    // At once: none of the typing has reached this process yet; the extract comes after all of it.
    rec.addExtract('the first word');
    person('type', '--text', 'second');
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'first' },
      { type: 'extract', query: 'the first word' },
      { type: 'type', text: 'second' },
    ]);
    expect(got[1]!.element).toMatchObject({ role: 'text', name: 'Name' });
    inOrder(got);
  });

  it('a note added while not paused goes to the step after it, not to the typing still on its way', async () => {
    const rec = await record();
    person('type', '--text', 'first');
    rec.addDetails('the second word'); // at once: the typing has not reached this process yet
    person('type', '--text', 'second');
    const got = await steps(rec);
    expect(got.map((x) => x.action)).toEqual([
      { type: 'type', text: 'first' },
      { type: 'type', text: 'second' },
    ]);
    expect(got.map((x) => x.details)).toEqual([undefined, 'the second word']);
  });
});
