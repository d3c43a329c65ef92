import { describe, expect, it } from 'vitest';
import { attribute, FocusTimeline, sameField, type FocusChange, type FocusCause } from './focus-timeline.ts';

const field = (name: string, y: number, secret = false) => ({
  role: secret ? 'password text' : 'text',
  name,
  bounds: [100, y, 300, 30] as [number, number, number, number],
  editable: true,
  secret,
});
const NAME = field('Name', 70);
const EMAIL = field('Email', 110);
const PASSWORD = field('Password', 150, true);

const change = (time: number, f: ReturnType<typeof field>, focused = true): FocusChange => ({
  ...f,
  time,
  focused,
  app: ':1.1',
  path: `/o/${f.name}`,
});

/** A Tab in GTK: the field left loses the focus, then the next one takes it (same instant). */
function tab(
  t: FocusTimeline,
  time: number,
  from: ReturnType<typeof field>,
  to: ReturnType<typeof field>,
): void {
  t.add(change(time, from, false));
  t.add(change(time, to));
}

const never = new Promise<void>(() => {});
const now = Promise.resolve();

describe('the focus timeline', () => {
  it('holds the newest focus-in at or before a time; a focus-out leaves none until the next focus-in', () => {
    const t = new FocusTimeline();
    t.add(change(100, NAME));
    t.add(change(300, NAME, false));
    t.add(change(200, EMAIL)); // arrives out of order: placed by its time
    expect(t.at(50)).toBeUndefined();
    expect(t.at(150)?.name).toBe('Name');
    expect(t.at(250)?.name).toBe('Email');
    expect(t.at(300)).toBeUndefined();
  });

  it('a click on a field: the keys after it are that field’s even when the app reports the change late', async () => {
    const t = new FocusTimeline();
    t.add(change(0, NAME));
    const causes: FocusCause[] = [{ kind: 'click', time: 100, element: { ...EMAIL, focusable: true } }];
    tab(t, 900, NAME, EMAIL); // the app handled the click at 900, after the typing at 120
    expect(await attribute(t, 120, causes, never)).toMatchObject({ field: { name: 'Email' }, by: 'click' });
  });

  it('a Tab belongs to the field it left; what follows it to the field it entered, however late the app moved the focus', async () => {
    const t = new FocusTimeline();
    t.add(change(0, NAME));
    const causes: FocusCause[] = [
      { kind: 'click', time: 100, element: { ...EMAIL, focusable: true } },
      { kind: 'tab', time: 200 },
    ];
    // The app ran behind: the click's change and the Tab's arrive after all the typing (at 900, 901).
    tab(t, 900, NAME, EMAIL);
    tab(t, 901, EMAIL, PASSWORD);
    expect((await attribute(t, 200, causes, never)).field?.name).toBe('Email');
    const after = await attribute(t, 210, causes, never);
    expect(after.field?.name).toBe('Password');
    expect(after.field?.secret).toBe(true);
  });

  it('after a Tab, waits for the change it causes (a condition), and says the focus is unknown when the bound ends first', async () => {
    const t = new FocusTimeline();
    t.add(change(0, NAME));
    const causes: FocusCause[] = [{ kind: 'tab', time: 200 }];
    const waiting = attribute(t, 210, causes, never);
    tab(t, 400, NAME, EMAIL);
    expect((await waiting).field?.name).toBe('Email');
    const none = await attribute(new FocusTimeline(), 210, causes, now);
    expect(none.field).toBeUndefined();
    expect('reason' in none && none.reason).toMatch(/Tab/);
  });

  it('a change the app reported in time is taken as it is (the person clicked elsewhere after the Tab)', async () => {
    const t = new FocusTimeline();
    t.add(change(0, NAME));
    tab(t, 205, NAME, EMAIL);
    t.add(change(300, PASSWORD)); // not from a recorded cause
    expect((await attribute(t, 310, [{ kind: 'tab', time: 200 }], never)).field?.name).toBe('Password');
  });

  it('an arrow key belongs to the field it left; what follows it to the field the app reports next, however late', async () => {
    // A radio group moved by Down twice while the app ran behind: its changes arrive after both keys.
    const t = new FocusTimeline();
    const SMALL = { ...field('Small', 200), role: 'radio button', editable: false };
    const MEDIUM = { ...field('Medium', 230), role: 'radio button', editable: false };
    const LARGE = { ...field('Large', 260), role: 'radio button', editable: false };
    t.add(change(0, SMALL));
    const causes: FocusCause[] = [
      { kind: 'key', key: 'Down', time: 100 },
      { kind: 'key', key: 'Down', time: 200 },
    ];
    const moved = (f: typeof SMALL) => () => Promise.resolve(f);
    const second = attribute(t, 200, causes, never, moved(LARGE));
    const third = attribute(t, 300, causes, never, moved(LARGE));
    tab(t, 900, SMALL, MEDIUM);
    tab(t, 901, MEDIUM, LARGE);
    expect((await attribute(t, 100, causes, never)).field?.name).toBe('Small'); // the first Down
    expect((await second).field?.name).toBe('Medium'); // the second Down left Medium
    expect((await third).field?.name).toBe('Large'); // what follows both
  });

  it('Enter that opens a dialog: the typing after it is the dialog field’s; the Enter the field it left', async () => {
    const t = new FocusTimeline();
    const CODE = field('Code', 70);
    const CONFIRM = field('Confirm code', 400);
    t.add(change(0, CODE));
    const causes: FocusCause[] = [{ kind: 'key', key: 'Return', time: 100 }];
    const typed = attribute(t, 150, causes, never, () => Promise.resolve(undefined)); // the window lost its focus
    await new Promise((resolve) => setImmediate(resolve)); // the dialog's change comes while it waits
    t.add(change(700, CODE, false));
    t.add(change(700, CONFIRM));
    expect((await typed).field?.name).toBe('Confirm code');
    expect((await attribute(t, 100, causes, never)).field?.name).toBe('Code');
  });

  it('keys sent within one millisecond share their X time: their order is the input order', async () => {
    const t = new FocusTimeline();
    const SMALL = { ...field('Small', 200), role: 'radio button', editable: false };
    const MEDIUM = { ...field('Medium', 230), role: 'radio button', editable: false };
    t.add(change(0, SMALL));
    const causes: FocusCause[] = [
      { kind: 'key', key: 'Down', time: 100, seq: 1 },
      { kind: 'key', key: 'Down', time: 100, seq: 2 },
    ];
    tab(t, 900, SMALL, MEDIUM);
    const moved = () => Promise.resolve(MEDIUM);
    expect((await attribute(t, 100, causes, never, moved, 2)).field?.name).toBe('Medium');
    expect((await attribute(t, 100, causes, never, undefined, 1)).field?.name).toBe('Small');
  });

  it('an arrow or Enter that does not move the focus (a caret in a text field): the field it was typed in', async () => {
    const t = new FocusTimeline();
    t.add(change(0, NAME));
    const causes: FocusCause[] = [{ kind: 'key', key: 'Left', time: 100 }];
    let asked = 0;
    const stayed = () => {
      asked++;
      return Promise.resolve(NAME);
    };
    expect((await attribute(t, 150, causes, never, stayed)).field?.name).toBe('Name');
    expect(asked).toBe(1);
    // Moved, but the app never said where: unknown, never the field it left.
    const none = await attribute(t, 150, causes, now, () => Promise.resolve(EMAIL));
    expect('reason' in none && none.reason).toMatch(/Left/);
  });

  it('same field: role, name and bounds within a few pixels', () => {
    expect(sameField(NAME, { ...NAME, bounds: [110, 80, 300, 30] })).toBe(true);
    expect(sameField(NAME, EMAIL)).toBe(false);
    expect(sameField(NAME, { ...NAME, bounds: [100, 400, 300, 30] })).toBe(false);
  });
});
