import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { cover, fieldKey, SecretFields, secretTest } from './recording-masks.ts';
import { ScreenWatch } from './recording-screen.ts';
import type { Element, ReadResult, Rect, WindowInfo } from './types.ts';

const el = (name: string, bounds: Rect, o: Partial<Element> = {}): Element =>
  ({
    role: 'text',
    name,
    bounds,
    editable: true,
    secret: false,
    focused: false,
    children: [],
    ...o,
  }) as Element;

const win = (id: number, bounds: Rect = [0, 0, 500, 400]): WindowInfo =>
  ({ id, bounds, title: `w${id}`, app: 'app' }) as WindowInfo;

const read = (id: number, elements: Element[], bounds?: Rect): ReadResult =>
  ({ window: win(id, bounds), elements }) as unknown as ReadResult;

describe('the recorder’s secret fields', () => {
  it('a password field always; a plain field when the person named it (case and spacing ignored)', () => {
    const test = secretTest(['  PIN  code ']);
    expect(fieldKey(' PIN\tCode ')).toBe('pin code');
    expect(test(el('Pin Code', [0, 0, 1, 1]))).toBe(true);
    expect(test(el('Pin', [0, 0, 1, 1]))).toBe(false);
    expect(test(el('x', [0, 0, 1, 1], { secret: true }))).toBe(true);
    expect(test(el('pin code', [0, 0, 1, 1], { editable: false, role: 'label' }))).toBe(false); // its label
    expect(secretTest([])(el('Pin Code', [0, 0, 1, 1]))).toBe(false);
  });

  it('masks every rectangle seen in a window, with a margin, also in later steps whose read missed it', () => {
    const s = new SecretFields(['PIN']);
    const pin = el('PIN', [100, 100, 200, 30]);
    const first = s.masksFor([{ tree: read(7, [el('Name', [100, 50, 200, 30]), pin]) }]);
    expect(first).toEqual([[88, 88, 224, 54]]);
    // the field grew: both rectangles; a read that failed (no tree) still gets the window's masks
    s.masksFor([{ tree: read(7, [{ ...pin, bounds: [100, 104, 200, 30] }]) }]);
    expect(s.masksFor([{ window: win(7) }])).toHaveLength(2);
    // a step in another window whose list of windows failed: every window known, where it was last
    expect(s.masksFor([{ window: win(8) }])).toHaveLength(2);
    expect(s.near([{ window: win(7) }])).toBe(true);
    expect(s.near([{ window: win(8) }])).toBe(false);
  });

  it('masks every window on screen, a moved one where it is (and where it was, once), a closed one once more', () => {
    const s = new SecretFields();
    const pw = el('Password', [150, 140, 200, 30], { secret: true });
    // Read at the start (window 7 at 100,100); the steps go to window 9, which has none.
    s.masksFor(
      [{ tree: read(7, [pw], [100, 100, 500, 400]) }, { tree: read(9, [], [700, 0, 300, 300]) }],
      [win(7, [100, 100, 500, 400])],
    );
    const on = [win(7, [100, 100, 500, 400]), win(9, [700, 0, 300, 300])];
    expect(s.masksFor([{ window: win(9, [700, 0, 300, 300]) }], on)).toEqual([[138, 128, 224, 54]]);
    // Window 7 moved 40 px down: this screenshot may be from before the move, the next is not.
    const moved = [win(7, [100, 140, 500, 400]), win(9, [700, 0, 300, 300])];
    expect(s.masksFor([], moved)).toEqual([
      [138, 168, 224, 54],
      [138, 128, 224, 54],
    ]);
    expect(s.masksFor([], moved)).toEqual([[138, 168, 224, 54]]);
    // Closed: masked where it was once more (the screenshot may be from before it closed), then no
    // longer (its id may come back as another window); the video keeps it.
    expect(s.masksFor([], [win(9, [700, 0, 300, 300])])).toEqual([[138, 168, 224, 54]]);
    expect(s.masksFor([], [win(9, [700, 0, 300, 300])])).toEqual([]);
    expect(s.masksFor([{ tree: read(7, [], [100, 140, 500, 400]) }], [win(7, [100, 140, 500, 400])])).toEqual(
      [],
    );
    // the video: both places of the field, merged into one box (they overlap)
    expect(s.all()).toEqual([[138, 128, 224, 94]]);
  });

  it('greys a window that cannot be read, whole, until a read answers; the video at every place it had', () => {
    const s = new SecretFields();
    const pw = el('Password', [150, 140, 200, 30], { secret: true });
    s.note(5, { error: 'the app is stopped' });
    expect(s.masksFor([], [win(5, [100, 100, 500, 400])])).toEqual([[100, 100, 500, 400]]);
    s.place(5, [100, 300, 500, 400]); // moved between two events (the server's report)
    s.note(5, { tree: read(5, [{ ...pw, bounds: [150, 340, 200, 30] }], [100, 300, 500, 400]) });
    expect(s.masksFor([], [win(5, [100, 300, 500, 400])])).toEqual([
      [138, 328, 224, 54],
      [138, 128, 224, 54], // where it was at the last screenshot (this one may be from before the move)
    ]);
    // a window mapped, moved and unmapped between two events, never read: whole, at each place
    s.place(6, [900, 0, 100, 100]);
    s.place(6, [900, 500, 100, 100]);
    // (5: whole where it was unread, at both places, which overlap: one box)
    expect(s.all()).toEqual(
      expect.arrayContaining([
        [900, 0, 100, 100],
        [900, 500, 100, 100],
        [100, 100, 500, 600],
      ]),
    );
    expect(s.all().some(([x, y, w, h]) => x <= 138 && y <= 328 && x + w >= 362 && y + h >= 382)).toBe(true);
  });

  it('merges rectangles only where their box is no larger than the two apart', () => {
    expect(
      cover([
        [0, 0, 10, 10],
        [2, 0, 10, 10],
        [4, 0, 10, 10],
        [100, 100, 10, 10],
        [0, 0, 0, 5],
      ]),
    ).toEqual([
      [0, 0, 14, 10],
      [100, 100, 10, 10],
    ]);
  });
});

describe('the windows on screen at each event', () => {
  it('reads a window once when it appears, again when it changes size, never when it only moves', async () => {
    let windows: WindowInfo[] = [win(1), win(2, [600, 0, 300, 300])];
    const reads: number[] = [];
    const watch = new ScreenWatch(
      new SecretFields(),
      () => {},
      () => Promise.resolve(windows),
      async (id) => {
        reads.push(id);
        const w = windows.find((x) => x.id === id)!;
        // 3: an app that does not answer (its read times out); 4: no tree yet, just mapped
        if (id === 3) return sleep(600).then(() => Promise.reject(new Error('the app is stopped')));
        if (id === 4 && reads.filter((r) => r === 4).length === 1) throw new Error('no accessibility tree');
        return read(id, [], w.bounds);
      },
    );
    const first = await watch.now();
    expect(await watch.settle([first])).toMatchObject({ warnings: [] });
    expect(reads).toEqual([1, 2]);
    await watch.now();
    windows = [win(1, [40, 40, 500, 400]), win(2, [600, 0, 320, 300]), win(3)];
    const later = await watch.now();
    expect(reads).toEqual([1, 2, 2, 3]); // 1 moved (no read), 2 resized, 3 new
    const { warnings } = await watch.settle([later, later]);
    expect(warnings).toEqual([
      'the window "w3" (app) could not be checked for secret fields: its accessibility tree could not be ' +
        'read (the app is stopped); it is grey, whole, in the screenshots and the video until a read of ' +
        'it answers (a step in it, or its resize)',
    ]);
    await watch.now(); // not read again when it timed out, nor warned about twice
    expect(reads).toEqual([1, 2, 2, 3]);
    expect((await watch.settle([later])).warnings).toEqual([]);
    // A new window whose first read failed at once (its tree not registered yet): read again next time.
    windows = [...windows, win(4)];
    await watch.settle([await watch.now()]);
    await watch.settle([await watch.now()]);
    await watch.now();
    expect(reads).toEqual([1, 2, 2, 3, 4, 4]);
    // Closed, and a window with its id opens: that one is read.
    windows = [win(1, [40, 40, 500, 400])];
    await watch.now();
    windows = [win(1, [40, 40, 500, 400]), win(2, [600, 0, 320, 300])];
    await watch.now();
    expect(reads).toEqual([1, 2, 2, 3, 4, 4, 2]);
  });

  it('looks for a window’s secret fields again at each listing, the window keeping its size', async () => {
    const fieldReads: string[][] = [];
    let at: Rect = [150, 140, 200, 30];
    const secrets = new SecretFields();
    const watch = new ScreenWatch(
      secrets,
      () => {},
      () => Promise.resolve([win(1)]),
      (id) => Promise.resolve(read(id, [el('Password', at, { secret: true })])),
      (id, roles) => {
        fieldReads.push(roles);
        return Promise.resolve(read(id, [el('Password', at, { secret: true })]));
      },
    );
    expect((await watch.masksAt([await watch.now()])).masks).toEqual([[138, 128, 224, 54]]);
    expect(fieldReads).toEqual([]); // read whole as it appeared
    at = [150, 40, 200, 30]; // a row above it went away
    expect((await watch.masksAt([await watch.now()])).masks).toEqual([
      [138, 128, 224, 54],
      [138, 28, 224, 54],
    ]);
    expect(fieldReads).toEqual([['password text']]);
  });
});
