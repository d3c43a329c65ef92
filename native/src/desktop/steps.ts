// Turns a person's raw input (key presses, button presses and releases) into the steps of a
// demonstration, as seed 002 names them: `type "spotify"`, `press Enter`, `click`, `drag`, `scroll`.
// Pure: no I/O, so the grouping rules are unit-tested on their own.
import type { ButtonName, StepAction } from '@runboard/project/recording';
import type { RecordedInput } from './types.ts';

// A step's action is part of Runboard's recording format (manifest.jsonl), defined with it.
export type { ButtonName, StepAction };

/** A step and the input events it was made of (the first one holds its pre-action frame). */
export interface GroupedStep<E extends StepInput = StepInput> {
  action: StepAction;
  events: E[];
}

export type StepInput = Pick<
  RecordedInput,
  'kind' | 'key' | 'text' | 'modifierKey' | 'modifiers' | 'button' | 'x' | 'y' | 'time'
>;

const BUTTON_NAMES: Record<number, ButtonName> = { 1: 'left', 2: 'middle', 3: 'right' };

/** X keysym names → the names steps use (the seed's `press Enter`, `press Esc`). */
const KEY_NAMES: Record<string, string> = {
  Return: 'Enter',
  KP_Enter: 'Enter',
  Escape: 'Esc',
  BackSpace: 'Backspace',
  ISO_Left_Tab: 'Tab',
  Up: 'ArrowUp',
  Down: 'ArrowDown',
  Left: 'ArrowLeft',
  Right: 'ArrowRight',
  Prior: 'PageUp',
  Next: 'PageDown',
  space: 'Space',
};

/** A pointer that moves less than this between press and release clicked; farther, it dragged. */
const DRAG_THRESHOLD_PX = 5;
/** A click this soon (server ms) and this near after the last one of the same button adds to it. */
const MULTI_CLICK_MS = 400;
const MULTI_CLICK_PX = 4;
/** Wheel clicks this close in time and place are one scroll step. */
const SCROLL_GAP_MS = 700;
const SCROLL_NEAR_PX = 24;

export function keyName(e: Pick<StepInput, 'key' | 'text'>): string {
  if (KEY_NAMES[e.key]) return KEY_NAMES[e.key]!;
  if (e.text.length > 0) return e.text.toLowerCase();
  return e.key || 'unknown';
}

/**
 * Feed events in order; completed steps come back as soon as they are known (a word ends with the
 * first event that is not more of it, a click with the next event that is not another click on the
 * same spot soon after: a double click is one step). flush() ends whatever is pending.
 */
export class StepGrouper<E extends StepInput = StepInput> {
  private word: { text: string; events: E[] } | null = null;
  private pressed = new Map<number, E>();
  private click: { step: GroupedStep<E>; last: E } | null = null; // may still become a double click
  private scroll: { action: Extract<StepAction, { type: 'scroll' }>; events: E[]; last: E } | null = null;

  feed(e: E): GroupedStep<E>[] {
    const out: GroupedStep<E>[] = [];
    const pointer = e.kind !== 'keyPress' && BUTTON_NAMES[e.button] !== undefined;
    if (!pointer) this.endClick(out); // anything else ends a click (which then cannot become a double)
    if (e.kind === 'keyPress') {
      if (e.modifierKey) return out;
      const chord = e.modifiers.some((m) => m === 'ctrl' || m === 'alt' || m === 'super');
      if (!chord && e.key === 'BackSpace' && this.word && this.word.text.length > 0) {
        this.word.text = [...this.word.text].slice(0, -1).join('');
        this.word.events.push(e);
        return out;
      }
      if (!chord && e.text.length > 0) {
        this.endScroll(out);
        this.word ??= { text: '', events: [] };
        this.word.text += e.text;
        this.word.events.push(e);
        return out;
      }
      this.endAll(out);
      const mods = e.modifiers.filter((m) => m !== 'capslock' && (m !== 'shift' || chord || !e.text));
      out.push({ action: { type: 'press', key: [...mods, keyName(e)].join('+') }, events: [e] });
      return out;
    }
    if (e.button >= 4 && e.button <= 7) {
      if (e.kind !== 'buttonPress') return out;
      this.endWord(out);
      const dx = e.button === 6 ? -1 : e.button === 7 ? 1 : 0;
      const dy = e.button === 4 ? -1 : e.button === 5 ? 1 : 0;
      const s = this.scroll;
      if (
        s &&
        e.time - s.last.time <= SCROLL_GAP_MS &&
        Math.abs(e.x - s.action.x) <= SCROLL_NEAR_PX &&
        Math.abs(e.y - s.action.y) <= SCROLL_NEAR_PX
      ) {
        s.action.dx += dx;
        s.action.dy += dy;
        s.events.push(e);
        s.last = e;
        return out;
      }
      this.endScroll(out);
      this.scroll = { action: { type: 'scroll', x: e.x, y: e.y, dx, dy }, events: [e], last: e };
      return out;
    }
    const button = BUTTON_NAMES[e.button];
    if (!button) return out;
    if (e.kind === 'buttonPress') {
      const c = this.click;
      const again =
        c !== null &&
        c.step.action.type === 'click' &&
        c.step.action.button === button &&
        e.time - c.last.time <= MULTI_CLICK_MS &&
        Math.abs(e.x - c.step.action.x) <= MULTI_CLICK_PX &&
        Math.abs(e.y - c.step.action.y) <= MULTI_CLICK_PX;
      if (!again) this.endAll(out);
      this.pressed.set(e.button, e);
      return out;
    }
    const press = this.pressed.get(e.button);
    if (!press) return out; // pressed before the recording started
    this.pressed.delete(e.button);
    const step = this.pointerStep(press, e, button);
    const c = this.click;
    if (
      c &&
      c.step.action.type === 'click' &&
      step.action.type === 'click' &&
      c.last.time >= press.time - MULTI_CLICK_MS
    ) {
      // The press was let through above as the same click again: count it.
      c.step.action.count = (c.step.action.count ?? 1) + 1;
      c.step.events.push(press, e);
      c.last = e;
      return out;
    }
    this.endClick(out);
    if (step.action.type === 'click') this.click = { step, last: e };
    else out.push(step);
    return out;
  }

  flush(): GroupedStep<E>[] {
    const out: GroupedStep<E>[] = [];
    this.endAll(out);
    for (const [b, press] of this.pressed) out.push(this.pointerStep(press, undefined, BUTTON_NAMES[b]!));
    this.pressed.clear();
    return out;
  }

  private pointerStep(press: E, release: E | undefined, button: ButtonName): GroupedStep<E> {
    const moved =
      release !== undefined && Math.hypot(release.x - press.x, release.y - press.y) >= DRAG_THRESHOLD_PX;
    const events = release ? [press, release] : [press];
    return moved
      ? { action: { type: 'drag', from: [press.x, press.y], to: [release.x, release.y], button }, events }
      : { action: { type: 'click', x: press.x, y: press.y, button }, events };
  }

  private endWord(out: GroupedStep<E>[]): void {
    if (this.word && this.word.text.length > 0)
      out.push({ action: { type: 'type', text: this.word.text }, events: this.word.events });
    this.word = null;
  }

  private endScroll(out: GroupedStep<E>[]): void {
    if (this.scroll) out.push({ action: this.scroll.action, events: this.scroll.events });
    this.scroll = null;
  }

  private endClick(out: GroupedStep<E>[]): void {
    if (this.click) out.push(this.click.step);
    this.click = null;
  }

  private endAll(out: GroupedStep<E>[]): void {
    this.endClick(out);
    this.endWord(out);
    this.endScroll(out);
  }
}
