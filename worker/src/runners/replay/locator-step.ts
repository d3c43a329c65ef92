/**
 * A replay step as its accessibility locator does it, written down as data before anything is done:
 * what must be found first (the element acted on, the field that must hold the keyboard focus, or only
 * the window the keys go to) and the input that does the step once it is found, or why the step cannot
 * be done by locator at all. Pure: locate.ts finds, by-locator.ts carries the plan out.
 */
import type { Element, Rect } from '@runboard/native';
import type { Locator, PlanStep, RecordedWindow } from './plan.ts';

/** One input to the desktop (screen pixels). */
export type Input =
  | { op: 'click'; at: [number, number]; button: 'left' | 'middle' | 'right'; count: number }
  | { op: 'scroll'; at: [number, number]; dx: number; dy: number }
  | { op: 'drag'; from: [number, number]; to: [number, number]; button: 'left' | 'middle' | 'right' }
  | { op: 'key'; combo: string }
  | { op: 'type'; text: string };

type Action = PlanStep['action'];
type PointerAction = Extract<Action, { type: 'click' | 'scroll' | 'drag' }>;
export type KeysInput = Extract<Input, { op: 'key' | 'type' }>;

export type LocatorPlan =
  /** Find the element, then act at its centre. */
  | { kind: 'pointer'; element: Locator; window: RecordedWindow | undefined; action: PointerAction }
  /** Find the field with the keyboard focus (a Tab press may find it one field before), then the keys. */
  | {
      kind: 'focus';
      focus: Locator;
      window: RecordedWindow | undefined;
      /** The Tab key the step presses (it may find the focus still on the field before), if it does. */
      tab: string | undefined;
      input: KeysInput;
    }
  /** Keys to the window's focus, with nothing recorded to check the field against. */
  | { kind: 'window'; window: RecordedWindow; input: KeysInput };

/** Keys that move the focus to the next or previous field (as the recorder names them). */
const TAB = /(^|\+)Tab$/;

/** A recorded key name (`press Enter`, `ctrl+ArrowUp`) as the addon's key combination. */
export function keyCombo(key: string): string {
  return key
    .split('+')
    .map((k) => k.replace(/^Arrow/, '').toLowerCase())
    .join('+');
}

export const centre = (b: Rect): [number, number] => [
  Math.round(b[0] + b[2] / 2),
  Math.round(b[1] + b[3] / 2),
];

/** What the locator does for a step, or why it cannot (in words for the model and the report). */
export function planLocatorStep(step: PlanStep): LocatorPlan | string {
  const a = step.action;
  if (a.type === 'click' || a.type === 'scroll' || a.type === 'drag') {
    if (!step.element) return 'the step has no locator (none was recorded, or it was removed)';
    return { kind: 'pointer', element: step.element, window: step.window, action: a };
  }
  if (a.type === 'type' || a.type === 'press') {
    if (a.type === 'type' && !('text' in a && a.text))
      return 'the workflow does not say what to type here (no value, or a secret)';
    const input: KeysInput =
      a.type === 'press' ? { op: 'key', combo: keyCombo(a.key) } : { op: 'type', text: a.text };
    if (step.focus)
      return {
        kind: 'focus',
        focus: step.focus,
        window: step.window,
        tab: a.type === 'press' && TAB.test(a.key) ? a.key : undefined,
        input,
      };
    // keys sent to whatever has the focus, with nothing recorded to check it against: not blind
    if (!step.window) return 'the step has no locator for the field its keys go to';
    return { kind: 'window', window: step.window, input };
  }
  return `replay has no locator action for "${a.type}"`;
}

/** The pointer input of a step at the element found (its centre; a drag keeps its recorded vector). */
export function pointerInput(a: PointerAction, bounds: Rect): Input {
  const at = centre(bounds);
  if (a.type === 'click') return { op: 'click', at, button: a.button, count: a.count ?? 1 };
  if (a.type === 'scroll') return { op: 'scroll', at, dx: a.dx, dy: a.dy };
  return {
    op: 'drag',
    from: at,
    to: [at[0] + a.to[0] - a.from[0], at[1] + a.to[1] - a.from[1]],
    button: a.button,
  };
}

/** Whether the field found for a focus step is where its keys may go: yes, Tab on to it, or why not. */
export function focusVerdict(
  plan: Extract<LocatorPlan, { kind: 'focus' }>,
  found: Element,
): 'ok' | 'tab' | string {
  if (found.focused) return 'ok';
  // A Tab moves the focus, and the recorder may have read the focus after it moved: the recorded field
  // is then where the key leads, checked once it is pressed.
  if (plan.tab !== undefined) return 'tab';
  return `${plan.focus.role} "${plan.focus.name}" does not have the keyboard focus`;
}

/** Whether the focus after a Tab is the recorded field, or why not. */
export function tabLanded(key: string, to: Locator, now: Element | undefined): true | string {
  if (now?.role === to.role && now.name === to.name) return true;
  return `${key} was pressed, but the keyboard focus went to ${now ? `${now.role} "${now.name}"` : 'no field'}, not to ${to.role} "${to.name}"`;
}

/**
 * An extract step's value read off the element its locator names (a field's text, a label's text), or
 * why not. Where the element is does not matter here, only that it is the one the locator names.
 */
export function readValue(e: Element): { value: string } | string {
  if (e.secret) return `${e.role} "${e.name}" is a password field: its value is never read`;
  const value = e.value ?? e.name;
  if (!value.trim()) return `${e.role} "${e.name}" shows no text`;
  return { value };
}
