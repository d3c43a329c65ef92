// The recorder's focus timeline (issue 30): every accessibility focus change, stamped where it arrived
// and mapped to X server time (recorder_focus_linux.cc), kept in time order, so that a key step is
// attributed to the field that held the focus at the step's OWN time, never at the time the recorder got
// round to handling it (on a loaded machine that is seconds later, after the person moved on).
//
// A key and the focus change it causes order by cause, not by clock: an app handles its input in order,
// so the change a Tab causes comes after the Tab whatever the clocks say, and on a busy machine the keys
// typed after the Tab can reach the server before the app has moved the focus. So: the Tab belongs to the
// field it left (the focus at its time); what follows a Tab belongs to the field the Tab entered (the
// first focus change after the Tab, waited for as a condition, bounded: when it never comes, the step
// says its focus is unknown, never a wrong field). A click's own element is known from where it hit; the
// keys after it go to that element when it is a field. An arrow key or Enter may move the focus (a radio
// group, a dialog that opens) or not (a caret in a text field): it belongs to the field it left like a
// Tab, and what follows goes to the field the app reports next, unless a read of the window once the app
// has had the key shows the focus where it was. Pure: no I/O.
import type { RecordedFocus, Rect } from './types.ts';

/** One focus change (`focused` false: the element losing the focus), as the recorder's focus thread reports it. */
export type FocusChange = RecordedFocus;

/** A field as both sources describe it: a focus change, or the element a click hit. */
export interface Field {
  role: string;
  name: string;
  bounds: Rect;
  editable: boolean;
  secret: boolean;
}

/**
 * What moved the focus before a key: a Tab (Shift+Tab) press, a click (with the element it hit), or a
 * key that may move it (an arrow, Enter).
 */
export type FocusCause = (
  | { kind: 'tab'; time: number }
  | { kind: 'key'; key: string; time: number }
  | { kind: 'click'; time: number; element?: Field & { focusable: boolean } }
) & {
  /** The input's place in the order it came in: keys sent within one millisecond share their time. */
  seq?: number;
};

/** The field a key step is attributed to, or why none is. */
export type Attribution = { field: Field; by: 'timeline' | 'click' } | { field?: undefined; reason: string };

/** AT-SPI reports a GTK entry's bounds up to ~20 px apart between reads. */
const NEAR_PX = 24;

/** The same element (role, name, and bounds near enough). */
export function sameField(a: Field, b: Field): boolean {
  return (
    a.role === b.role &&
    a.name === b.name &&
    Math.abs(a.bounds[0] - b.bounds[0]) <= NEAR_PX &&
    Math.abs(a.bounds[1] - b.bounds[1]) <= NEAR_PX
  );
}

export class FocusTimeline {
  private readonly changes: FocusChange[] = [];
  private waiters: Array<() => void> = [];
  /** Why focus changes cannot be followed (no accessibility bus), when they cannot. */
  unavailable: string | undefined;

  /** Adds a change where its time puts it (they arrive nearly in order). */
  add(c: FocusChange): void {
    let i = this.changes.length;
    while (i > 0 && this.changes[i - 1]!.time > c.time) i--;
    this.changes.splice(i, 0, c);
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }

  get size(): number {
    return this.changes.length;
  }

  /** The element that held the focus at `time`: the newest focus-in at or before it, unless it lost it by then. */
  at(time: number): FocusChange | undefined {
    let i = this.changes.length - 1;
    while (i >= 0 && this.changes[i]!.time > time) i--;
    for (; i >= 0; i--) {
      const c = this.changes[i]!;
      if (c.focused) return c;
      // A focus-out: the focus is nowhere until the next focus-in (GTK sends out, then in, for a Tab).
      // The element that left is not the one held; look no further back.
      return undefined;
    }
    return undefined;
  }

  /** The first focus-in strictly after `time` that `pick` accepts. */
  firstInAfter(time: number, pick: (c: FocusChange) => boolean = () => true): FocusChange | undefined {
    return this.changes.find((c) => c.focused && c.time > time && pick(c));
  }

  /** The newest focus-in, unless a focus-out came after it (the focus is moving). */
  newest(): FocusChange | undefined {
    const c = this.changes.at(-1);
    return c?.focused ? c : undefined;
  }

  /** Resolves once `cond` holds (checked at each change), or when `bound` settles first. */
  async waitFor(cond: () => boolean, bound: Promise<unknown>): Promise<boolean> {
    let over = false;
    void bound.then(() => {
      over = true;
      const ws = this.waiters;
      this.waiters = [];
      for (const w of ws) w();
    });
    for (;;) {
      if (cond()) return true;
      if (over) return false;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /**
   * Resolves with the first focus-in after `time` once the timeline has one, or undefined when `bound`
   * settles first (a condition, bounded: the caller says the focus is unknown then).
   */
  async waitInAfter(
    time: number,
    pick: (c: FocusChange) => boolean,
    bound: Promise<unknown>,
  ): Promise<FocusChange | undefined> {
    await this.waitFor(() => this.firstInAfter(time, pick) !== undefined, bound);
    return this.firstInAfter(time, pick);
  }
}

/**
 * Which field a key step at `time` went to, given every cause (Tab, click, arrow/Enter) before it in
 * time order (`seq`: the step's place in the input order, for causes that carry theirs). `bound` ends the waits for the change a Tab or key causes. `settle` reads the element
 * focused now, in the window the step went to (asked when the last cause is an arrow or Enter): the app
 * has had the keys by then, so the timeline is waited for until its newest focus is that element (the
 * focus thread may come a moment after the read), and it tells whether the key moved the focus.
 */
export async function attribute(
  timeline: FocusTimeline,
  time: number,
  causes: FocusCause[],
  bound: Promise<unknown>,
  settle?: () => Promise<Field | undefined>,
  seq?: number,
): Promise<Attribution> {
  // Before the step: by input order when known (X time has a millisecond's grain), else by time.
  const before = causes.filter((c) =>
    seq !== undefined && c.seq !== undefined ? c.seq < seq : c.time < time,
  );
  let after: Field | null | undefined;
  if (settle && before.at(-1)?.kind === 'key') {
    const now = await settle();
    after = now ?? null;
    if (now) await timeline.waitFor(() => sameNewest(timeline, now), bound);
  }
  return attributeAt(timeline, time, before, bound, after);
}

function sameNewest(timeline: FocusTimeline, f: Field): boolean {
  const n = timeline.newest();
  return n !== undefined && sameField(n, f);
}

/** attribute() once settled; `after`: the element focused once the app had the keys (null: none; undefined: not asked). */
async function attributeAt(
  timeline: FocusTimeline,
  time: number,
  before: FocusCause[],
  bound: Promise<unknown>,
  after?: Field | null,
): Promise<Attribution> {
  const cause = before.at(-1);
  if (cause?.kind === 'key') {
    const left = await attributeAt(timeline, cause.time, before.slice(0, -1), bound);
    const pick = (c: FocusChange): boolean => !left.field || !sameField(c, left.field);
    let entered = timeline.firstInAfter(cause.time, pick);
    if (!entered) {
      // Not asked (a key before another cause: the timeline is settled by then), or the app still
      // shows the field it left: the key did not move the focus (a caret moved, a button pressed).
      const stayed = after === undefined || (after !== null && !!left.field && sameField(after, left.field));
      if (stayed) {
        const held = timeline.at(time) ?? left.field;
        return held ? { field: held, by: 'timeline' } : { reason: 'no field had the focus at its time' };
      }
      entered = await timeline.waitInAfter(cause.time, pick, bound);
      if (!entered)
        return { reason: `the app did not report where the ${cause.key} before it moved the focus` };
    }
    const held = entered.time < time ? timeline.at(time) : entered;
    return held ? { field: held, by: 'timeline' } : { reason: 'no field had the focus' };
  }
  if (cause?.kind === 'tab') {
    // The Tab left the field it was typed in (attributed as a key of its own), and entered the first
    // field after it that is another one: the app handles its input in order, so changes that earlier
    // clicks caused late may come first, and they name the field the Tab left.
    const left = await attributeAt(timeline, cause.time, before.slice(0, -1), bound);
    const entered = await timeline.waitInAfter(
      cause.time,
      (c) => !left.field || !sameField(c, left.field),
      bound,
    );
    if (!entered) return { reason: 'the app did not report where the Tab before it moved the focus' };
    // Later changes up to the step's own time count too (the person clicked elsewhere meanwhile).
    const held = entered.time < time ? timeline.at(time) : entered;
    return held ? { field: held, by: 'timeline' } : { reason: 'no field had the focus' };
  }
  if (cause?.kind === 'click') {
    const hit = cause.element;
    // The click's own field when it is one (the app may report the change late, or not at all when the
    // field had the focus already); else what the app reported by the step's time.
    if (hit?.editable) return { field: hit, by: 'click' };
  }
  const held = timeline.at(time);
  return held ? { field: held, by: 'timeline' } : { reason: 'no field had the focus at its time' };
}
