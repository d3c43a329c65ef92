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

  it('same field: role, name and bounds within a few pixels', () => {
    expect(sameField(NAME, { ...NAME, bounds: [110, 80, 300, 30] })).toBe(true);
    expect(sameField(NAME, EMAIL)).toBe(false);
    expect(sameField(NAME, { ...NAME, bounds: [100, 400, 300, 30] })).toBe(false);
  });
});
