import { describe, expect, it } from 'vitest';
import type { Element } from '@runboard/native';
import {
  focusVerdict,
  keyCombo,
  planLocatorStep,
  pointerInput,
  readValue,
  tabLanded,
  type LocatorPlan,
} from './locator-step.ts';
import type { Locator, PlanStep } from './plan.ts';

const field: Locator = { role: 'text', name: 'Name', path: [] };
const button: Locator = { role: 'push button', name: 'Submit', path: [] };
const win = { app: 'form', title: 'Form' };
const step = (action: PlanStep['action'], more: Partial<PlanStep> = {}): PlanStep => ({
  n: 3,
  intent: '',
  action,
  window: win,
  ...more,
});
const element = (more: Partial<Element>): Element => ({
  id: 1,
  role: 'text',
  name: 'Name',
  description: '',
  bounds: [10, 20, 100, 30],
  focused: false,
  enabled: true,
  selected: false,
  visible: true,
  checked: false,
  editable: true,
  focusable: true,
  secret: false,
  actions: [],
  children: [],
  ...more,
});

describe('a replay step by its locator, planned', () => {
  it('a pointer step finds its element and acts at its centre; a drag keeps its recorded vector', () => {
    const click = step({ type: 'click', x: 5, y: 5, button: 'left', count: 2 }, { element: button });
    const plan = planLocatorStep(click) as Extract<LocatorPlan, { kind: 'pointer' }>;
    expect(plan).toMatchObject({ kind: 'pointer', element: button, window: win });
    expect(pointerInput(plan.action, [10, 20, 100, 30])).toEqual({
      op: 'click',
      at: [60, 35],
      button: 'left',
      count: 2,
    });
    expect(pointerInput({ type: 'scroll', x: 0, y: 0, dx: 0, dy: 3 }, [0, 0, 10, 10])).toEqual({
      op: 'scroll',
      at: [5, 5],
      dx: 0,
      dy: 3,
    });
    expect(
      pointerInput({ type: 'drag', from: [100, 100], to: [130, 90], button: 'left' }, [0, 0, 10, 10]),
    ).toEqual({ op: 'drag', from: [5, 5], to: [35, -5], button: 'left' });
  });

  it('says why a step cannot be done by locator', () => {
    expect(planLocatorStep(step({ type: 'click', x: 1, y: 1, button: 'left' }))).toBe(
      'the step has no locator (none was recorded, or it was removed)',
    );
    expect(planLocatorStep(step({ type: 'type', secret: true }, { focus: field }))).toBe(
      'the workflow does not say what to type here (no value, or a secret)',
    );
    expect(planLocatorStep(step({ type: 'press', key: 'Enter' }, { window: undefined }))).toBe(
      'the step has no locator for the field its keys go to',
    );
    expect(planLocatorStep(step({ type: 'extract', query: 'the total' }))).toBe(
      'replay has no locator action for "extract"',
    );
  });

  it('keys go to the recorded field once it has the focus, or to the window when none was recorded', () => {
    expect(planLocatorStep(step({ type: 'type', text: 'Ada' }, { focus: field }))).toEqual({
      kind: 'focus',
      focus: field,
      window: win,
      tab: undefined,
      input: { op: 'type', text: 'Ada' },
    });
    expect(planLocatorStep(step({ type: 'press', key: 'ctrl+ArrowUp' }))).toEqual({
      kind: 'window',
      window: win,
      input: { op: 'key', combo: 'ctrl+up' },
    });
    const tab = planLocatorStep(step({ type: 'press', key: 'shift+Tab' }, { focus: field }));
    expect(tab).toMatchObject({ kind: 'focus', tab: 'shift+Tab', input: { op: 'key', combo: 'shift+tab' } });
  });

  it('a focus step goes on when the field has the focus, tabs on to it after a Tab, else says why', () => {
    const plan = planLocatorStep(step({ type: 'type', text: 'Ada' }, { focus: field })) as Extract<
      LocatorPlan,
      { kind: 'focus' }
    >;
    expect(focusVerdict(plan, element({ focused: true }))).toBe('ok');
    expect(focusVerdict(plan, element({}))).toBe('text "Name" does not have the keyboard focus');
    expect(focusVerdict({ ...plan, tab: 'Tab' }, element({}))).toBe('tab');
    expect(tabLanded('Tab', field, element({}))).toBe(true);
    expect(tabLanded('Tab', field, element({ name: 'Email' }))).toBe(
      'Tab was pressed, but the keyboard focus went to text "Email", not to text "Name"',
    );
    expect(tabLanded('Tab', field, undefined)).toContain('went to no field');
  });

  it("reads an extract's value off its element, never a password field's", () => {
    expect(readValue(element({ value: '42.00' }))).toEqual({ value: '42.00' });
    expect(readValue(element({ role: 'label', name: 'Total: 42' }))).toEqual({ value: 'Total: 42' });
    expect(readValue(element({ secret: true, value: 'x' }))).toBe(
      'text "Name" is a password field: its value is never read',
    );
    expect(readValue(element({ value: '  ' }))).toBe('text "Name" shows no text');
    expect(keyCombo('ctrl+ArrowUp')).toBe('ctrl+up');
  });
});
