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
// keys after it go to that element when it is a field. Pure: no I/O.
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

/** What moved the focus before a key: a Tab (Shift+Tab) press, or a click (with the element it hit). */
export type FocusCause =
  { kind: 'tab'; time: number } | { kind: 'click'; time: number; element?: Field & { focusable: boolean } };

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

  /**
   * Resolves with the first focus-in after `time` once the timeline has one, or undefined when `bound`
   * settles first (a condition, bounded: the caller says the focus is unknown then).
   */
  async waitInAfter(
    time: number,
    pick: (c: FocusChange) => boolean,
    bound: Promise<unknown>,
  ): Promise<FocusChange | undefined> {
    let over = false;
    void bound.then(() => {
      over = true;
      const ws = this.waiters;
      this.waiters = [];
      for (const w of ws) w();
    });
    for (;;) {
      const found = this.firstInAfter(time, pick);
      if (found || over) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

/**
 * Which field a key step at `time` went to, given every cause (Tab, click) before it in time order.
 * `bound` ends the wait for the change a Tab causes.
 */
export async function attribute(
  timeline: FocusTimeline,
  time: number,
  causes: FocusCause[],
  bound: Promise<unknown>,
): Promise<Attribution> {
  const before = causes.filter((c) => c.time < time);
  const cause = before.at(-1);
  if (cause?.kind === 'tab') {
    // The Tab left the field it was typed in (attributed as a key of its own), and entered the first
    // field after it that is another one: the app handles its input in order, so changes that earlier
    // clicks caused late may come first, and they name the field the Tab left.
    const left = await attribute(timeline, cause.time, before.slice(0, -1), bound);
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
