import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Workflow } from '@runboard/supervisor/protocol';
import { locatorFor, renameParam, setCheckField, setLocatorElement } from './workflow-edit.ts';

const FIXTURE = new URL('../../../tests/fixtures/workflows/form-replay/schema.json', import.meta.url);

describe('renaming a parameter in the editor', () => {
  it('renames its templates in a subtask’s outcome check too (replay checks it with the new name)', () => {
    const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
    expect(w.plan.subtasks[0]!.outcome_check).toEqual({ role: 'text', name: 'Name', value: '{name}' });
    const r = renameParam(w, 0, 'person');
    expect(r.plan.subtasks[0]!.outcome_check).toEqual({ role: 'text', name: 'Name', value: '{person}' });
    expect(r.plan.subtasks[0]!.steps[1]!.action_value).toBe('{person}');
  });
});

describe('locators and outcome checks in the editor', () => {
  it('makes a removed locator again from the recorded element, its braces kept literal', () => {
    const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
    const step = w.plan.subtasks[1]!.steps[0]!;
    const { locator, ...bare } = step;
    expect(locatorFor(bare)).toEqual(locator);
    bare.recorded!.window!.title = 'Form {draft}';
    expect(locatorFor(bare).window_title).toBe('Form {{draft}}');
    const { recorded: _r, ...added } = bare;
    void _r;
    expect(locatorFor(added)).toEqual({ app: '', window_title: '', role: '', name: '', path: [] });
  });

  it('keeps the path ending at the element when its role or name changes', () => {
    const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
    const l = setLocatorElement(w.plan.subtasks[1]!.steps[0]!.locator!, { name: 'Send' });
    expect(l.name).toBe('Send');
    expect(l.path.at(-1)).toEqual({ role: 'push button', name: 'Send', index: 0 });
    expect(l.path.length).toBe(w.plan.subtasks[1]!.steps[0]!.locator!.path.length);
    const off = { ...l, path: [{ role: 'panel', name: '', index: 0 }] };
    expect(setLocatorElement(off, { name: 'Submit' }).path).toEqual(off.path); // not the element's: left
  });

  it('removes an emptied outcome check field', () => {
    expect(setCheckField({ role: 'label', name: 'x' }, 'name', '')).toEqual({ role: 'label' });
    expect(setCheckField({ role: 'label' }, 'value', '{name}')).toEqual({ role: 'label', value: '{name}' });
  });
});
