// Which field a recorded step went to (recording.ts): for a click, the element under the point; for a
// key step, the field focused at the step's own X time (the focus timeline, focus-timeline.ts), given
// what moved the focus before it (a Tab, a click, an arrow key or Enter).
import type { ElementPathStep, ManifestElement } from '@runboard/project/recording';
import { desktop } from './desktop.ts';
import { attribute, FocusTimeline, type Field, type FocusCause } from './focus-timeline.ts';
import { all, findPath, hitTest, manifestElement } from './recording-elements.ts';
import type { Lookup, SecretFields } from './recording-masks.ts';
import type { Element, RecordedInput, Rect } from './types.ts';

/** What moved the focus (a Tab, a click, a key), with the read of the window a click went to. */
type Cause = FocusCause & {
  x?: number;
  y?: number;
  lookup?: Promise<Lookup>;
  described?: Promise<FocusCause>;
  /** After a key: the element focused once the app had it, per window a step after it went to (read once). */
  settled?: Map<number, Promise<Field | undefined>>;
};

/**
 * How long a key step after a Tab waits for the app to report the focus change the Tab caused (a bound
 * on a condition: the step is written as soon as the change is in the focus timeline).
 */
const FOCUS_WAIT_MS = 10_000;

/** How long a click's element is asked for again of an app that does not answer (each ask waits ~5 s). */
const READ_RETRY_MS = 60_000;

/** Keys that may move the focus without Tab: arrows (a radio group, a combo's list), Enter (a dialog). */
const MOVING_KEYS = new Set(['Up', 'Down', 'Left', 'Right', 'KP_Up', 'KP_Down', 'Return', 'KP_Enter']);

/** The cause an input event is, if it may move the focus (a chord never is: ctrl+Tab is the app's). */
export function causeOf(
  e: Pick<RecordedInput, 'kind' | 'key' | 'modifiers' | 'button' | 'time'>,
): FocusCause | undefined {
  const chord = e.modifiers.some((m) => m === 'ctrl' || m === 'alt' || m === 'super');
  if (e.kind === 'keyPress' && !chord) {
    if (e.key === 'Tab' || e.key === 'ISO_Left_Tab') return { kind: 'tab', time: e.time };
    if (MOVING_KEYS.has(e.key)) return { kind: 'key', key: e.key, time: e.time };
  }
  if (e.kind === 'buttonPress' && e.button >= 1 && e.button <= 3) return { kind: 'click', time: e.time };
  return undefined;
}

export class StepFocus {
  /** Accessibility focus changes, each at its own server time. */
  readonly timeline = new FocusTimeline();
  private readonly causes: Cause[] = [];
  /** Key steps whose field is unknown (the app never said where the focus went). */
  unknown = 0;

  constructor(private readonly secrets: SecretFields) {}

  /** Notes an input event that may move the focus (a click's element comes from its window's read). */
  note(e: RecordedInput & { seq: number }, lookup: Promise<Lookup>): void {
    const c = causeOf(e);
    if (!c) return;
    this.causes.push(
      c.kind === 'click' ? { ...c, seq: e.seq, x: e.x, y: e.y, lookup } : { ...c, seq: e.seq },
    );
  }

  /** The field a key step went to: the one focused at its own time (the focus timeline). */
  async of(
    first: RecordedInput & { seq: number },
    lookups: Lookup[],
  ): Promise<{ element?: ManifestElement; secret: boolean; unknown?: string }> {
    const trees = lookups.map((l) => l.tree?.elements).filter((t) => t !== undefined);
    const isSecret = this.secrets.isSecret;
    if (this.timeline.unavailable !== undefined) {
      // No timeline: the focused field the step's reads saw (read when the step was handled).
      const focused = trees
        .map((t) => findPath(t, (e) => e.focused && e.editable))
        .filter((f) => f !== undefined);
      const f = focused.find((x) => isSecret(x.element)) ?? focused[0];
      return f ? { element: manifestElement(f, isSecret), secret: isSecret(f.element) } : { secret: false };
    }
    const before = this.causes.filter((c) => (c.seq ?? 0) < first.seq);
    const causes = await Promise.all(before.map((c) => this.described(c)));
    const last = before.at(-1);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise((resolve) => (timer = setTimeout(resolve, FOCUS_WAIT_MS)));
    const settle =
      last?.kind === 'key'
        ? () => {
            last.settled ??= new Map();
            const known = last.settled.get(first.window);
            if (known) return known;
            const read = focusedNow(first.window);
            last.settled.set(first.window, read);
            return read;
          }
        : undefined;
    const a = await attribute(this.timeline, first.time, causes, bound, settle, first.seq);
    clearTimeout(timer);
    if (!a.field) {
      // Never a wrong field; what was typed stays out of the manifest if it could have been a password.
      return { secret: this.secrets.near(lookups), unknown: a.reason };
    }
    const c = a.field;
    // The element in the step's tree (for its path), the one of that role and name nearest the change's bounds.
    const dist = (b: Rect): number => Math.abs(b[0] - c.bounds[0]) + Math.abs(b[1] - c.bounds[1]);
    const found = trees
      .flatMap((t) => all(t, (e) => e.role === c.role && e.name === c.name))
      .sort((p, q) => dist(p.element.bounds) - dist(q.element.bounds))[0];
    const named = isSecret(c);
    const element: ManifestElement = found
      ? manifestElement(found, isSecret)
      : {
          role: c.role,
          name: c.name,
          bounds: c.bounds,
          path: [],
          ...(c.secret || named ? { secret: true } : {}),
        };
    return { element, secret: c.secret || named || (found ? isSecret(found.element) : false) };
  }

  /** A cause as attribute() takes it: a click with the element it hit (its window read when it came). */
  private described(c: Cause): Promise<FocusCause> {
    if (c.kind !== 'click' || !c.lookup) return Promise.resolve(c);
    c.described ??= (async (): Promise<FocusCause> => {
      const l = await c.lookup!;
      const [x, y] = [c.x ?? 0, c.y ?? 0];
      const hit = (hitTest(l.tree?.elements ?? [], x, y) ?? (await rereadHit([l], x, y)))?.element;
      const at = { kind: 'click' as const, time: c.time, ...(c.seq !== undefined ? { seq: c.seq } : {}) };
      return hit ? { ...at, element: hit } : at;
    })();
    return c.described;
  }
}

/**
 * The element focused in a window now, from a fresh read: asked only for a step after a key that may or
 * may not have moved the focus (an arrow in a text field moves its caret), in the window the step went
 * to; the app has had the key by then.
 */
async function focusedNow(windowId: number | undefined): Promise<Field | undefined> {
  if (!windowId) return undefined;
  const tree = await desktop.read({ windowId, actions: false }).catch(() => undefined);
  const f = tree ? findPath(tree.elements, (e) => e.focused) : undefined;
  return f?.element;
}

/**
 * The element under a point, from a fresh read of the window: the step's own read failed or came back
 * without bounds (an app too busy to answer in time); what a point hits is a matter of the window's
 * layout, which the late read still shows.
 */
export async function rereadHit(
  lookups: Lookup[],
  x: number,
  y: number,
): Promise<{ element: Element; path: ElementPathStep[] } | undefined> {
  const id = lookups.find((l) => l.window)?.window?.id;
  if (!id) return undefined;
  // An app that does not answer (stopped, or starved by a busy machine) is asked again until it does,
  // within a bound; a window that went away is not.
  const until = Date.now() + READ_RETRY_MS;
  for (;;) {
    try {
      return hitTest((await desktop.read({ windowId: id, actions: false })).elements, x, y);
    } catch {
      const gone = (await desktop.listWindows({ windowId: id }).catch(() => [])).length === 0;
      if (gone || Date.now() > until) return undefined;
    }
  }
}
