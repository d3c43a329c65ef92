import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkWorkflow, type Workflow } from '@runboard/supervisor/protocol';
import { fillTemplates, resolveParams, shown, toPlan } from './plan.ts';
import { keyCombo } from './locator-step.ts';

// The workflow reflect makes of a recorded form fill (its own test fixture).
const FIXTURE = new URL('../../../../tests/fixtures/workflows/form-fill/schema.json', import.meta.url);
const workflow = (): Workflow => {
  const r = checkWorkflow(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r.workflow;
};

describe('a workflow read for replay', () => {
  it('walks the subtasks’ steps in order with their locators, windows and actions', () => {
    const plan = toPlan(workflow());
    expect(plan.subtasks.map((s) => s.steps.map((x) => [x.n, x.action.type]))).toEqual([
      [
        [1, 'click'],
        [2, 'type'],
        [3, 'press'],
        [4, 'type'],
      ],
      [
        [5, 'click'],
        [6, 'extract'],
      ],
      [
        [7, 'click'],
        [8, 'type'],
      ],
    ]);
    const first = plan.subtasks[0]!.steps[0]!;
    expect(first.element).toMatchObject({ role: 'text', name: 'Name', bounds: [90, 52, 244, 24] });
    expect(first.window).toMatchObject({ app: 'runboard-form', title: 'Runboard Recorder Form' });
    expect(plan.subtasks[1]!.steps[1]!.action).toMatchObject({ type: 'extract', variable: 'status_text' });
    // a TYPE with no value types the subtask's one upstream extract
    expect(plan.subtasks[2]!.steps[1]!.action).toEqual({ type: 'type', text: '{status_text}' });
  });

  it('finds elements by locators only: a removed locator sends the step to the model; an extract reads its own', () => {
    const w = workflow();
    const click = w.plan.subtasks[0]!.steps[0]!;
    const status = { ...click.locator!, role: 'label', name: 'status: idle', path: [] };
    delete click.locator; // the recorded facts stay, but replay does not find the element by them
    w.plan.subtasks[1]!.steps[1]!.locator = status;
    const plan = toPlan(w);
    const [first, typed] = plan.subtasks[0]!.steps;
    expect([first!.element, first!.focus, first!.window]).toEqual([undefined, undefined, undefined]);
    expect(typed!.focus).toBeUndefined(); // recorded but never given a locator
    expect(plan.subtasks[1]!.steps[1]!.element).toMatchObject({ role: 'label', name: 'status: idle' });
  });

  it('takes the card’s values, else the examples, and names what is missing or unknown', () => {
    const w = workflow();
    w.task_params[1]!.example = '';
    const plan = toPlan(w);
    const r = resolveParams(plan, { params: { full_name: 'Grace Hopper', colour: 'red' } });
    expect(r.values).toEqual({ full_name: 'Grace Hopper' });
    expect(r.missing.map((p) => p.name)).toEqual(['email']);
    expect(r.unknown).toEqual(['colour']);
    w.task_params[1]!.optional = true;
    expect(resolveParams(toPlan(w), {}).values).toEqual({ full_name: 'Ada Lovelace', email: '' });
  });

  it('fills templates (literal braces doubled) and hides sensitive values from logs', () => {
    const plan = toPlan(workflow());
    const sub = fillTemplates(plan.subtasks[0]!, { full_name: 'Grace {H}', email: 'g@x.org' });
    expect(sub.text).toBe('Enter Grace {H} as the name and g@x.org as the email in the form');
    expect(sub.steps[1]!.action).toEqual({ type: 'type', text: 'Grace {H}' });
    expect(fillTemplates('{{literal}} {a}', { a: '1' })).toBe('{literal} 1');
    plan.params[1]!.sensitive = true;
    expect(shown(plan, { full_name: 'G', email: 'secret' })).toEqual({ full_name: 'G', email: '(hidden)' });
  });

  it('takes a sensitive value the card references from the supervisor; a lost one is asked for', () => {
    const w = workflow();
    w.task_params[1]!.sensitive = true;
    const plan = toPlan(w);
    const ref = { secret: `s-${'a'.repeat(32)}` };
    const front = { params: { full_name: 'Grace', email: ref } };
    expect(resolveParams(plan, front, { email: 'g@x.org' })).toMatchObject({
      values: { full_name: 'Grace', email: 'g@x.org' },
      missing: [],
      lostSecrets: [],
    });
    const lost = resolveParams(plan, front, {});
    expect(lost.missing.map((p) => p.name)).toEqual(['email']);
    expect(lost.lostSecrets).toEqual(['email']);
    // written in clear by hand: used, and said (the run warns)
    expect(resolveParams(plan, { params: { email: 'g@x.org' } }).inClear).toEqual(['email']);
  });

  it('turns recorded key names into the addon’s key combinations', () => {
    expect(keyCombo('Enter')).toBe('enter');
    expect(keyCombo('ctrl+ArrowUp')).toBe('ctrl+up');
    expect(keyCombo('shift+Tab')).toBe('shift+tab');
  });
});
