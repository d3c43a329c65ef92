import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  checkWorkflow,
  formatWorkflowProblems,
  parseWorkflowText,
  renderTemplate,
  serializeWorkflow,
  templateNames,
  type Workflow,
} from './workflow.ts';

const FIXTURE = new URL('../../../tests/fixtures/workflows/form-fill/schema.json', import.meta.url);
const text = readFileSync(FIXTURE, 'utf8');
const sample = (): Workflow => JSON.parse(text) as Workflow;

function problems(w: unknown): string[] {
  const r = checkWorkflow(w);
  return r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
}

/** Reverses every object's key order, recursively. */
function shuffled(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shuffled);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, shuffled(x)]),
    );
  return v;
}

describe('the workflow schema', () => {
  it('accepts the sample workflow, and writes it back byte for byte whatever the key order', () => {
    expect(problems(sample())).toEqual([]);
    expect(serializeWorkflow(sample())).toBe(text);
    expect(serializeWorkflow(shuffled(sample()))).toBe(text);
  });

  it('refuses a template naming neither a parameter nor a dependency, saying where', () => {
    const w = sample();
    w.plan.subtasks[0]!.steps[1]!.action_value = '{fullname}';
    expect(problems(w)).toEqual([
      'plan.subtasks[0].steps[1].action_value: {fullname} is neither a parameter (full_name, email) nor an upstream extract this subtask depends on',
    ]);
  });

  it('says to add an upstream extract to the dependencies when a template uses it without', () => {
    const w = sample();
    w.plan.subtasks[2]!.dependencies = [];
    expect(problems(w)).toEqual([
      'plan.subtasks[2].text: {status_text} is an upstream extract: add "status_text" to this subtask\'s dependencies',
      'plan.subtasks[2].expected_outcome: {status_text} is an upstream extract: add "status_text" to this subtask\'s dependencies',
    ]);
  });

  it('allows only upstream extracts as dependencies (no cycles, no self, no unknown)', () => {
    const w = sample();
    w.plan.subtasks[0]!.dependencies = ['status_text'];
    w.plan.subtasks[1]!.dependencies = ['status_text', 'nothing'];
    expect(problems(w)).toEqual([
      'plan.subtasks[0].dependencies[0]: "status_text" is extracted by subtask 1, which runs after this one: only upstream extracts can be dependencies (no cycles)',
      'plan.subtasks[1].dependencies[0]: "status_text" is extracted by this subtask itself: only upstream extracts can be dependencies',
      'plan.subtasks[1].dependencies[1]: "nothing" is not extracted by any step of the plan',
    ]);
  });

  it('checks names: parameters unique, extracts unique and apart from parameters', () => {
    const w = sample();
    w.task_params.push({ ...w.task_params[0]! });
    w.plan.subtasks[1]!.steps[1]!.variable_name = 'email';
    w.task_params[1]!.name = 'e mail';
    expect(problems(w)).toEqual([
      'task_params[1].name: must be a name of letters, digits and _ (not starting with a digit)',
    ]);
    w.task_params[1]!.name = 'email';
    expect(problems(w)).toContain('task_params[2].name: parameter "full_name" is declared twice');
    expect(problems(w)).toContain(
      'plan.subtasks[1].steps[1].variable_name: "email" is already a parameter\'s name',
    );
  });

  it('checks the action value against the action type', () => {
    const w = sample();
    w.plan.subtasks[0]!.steps[0]!.action_value = 'x';
    w.plan.subtasks[0]!.steps[2]!.action_value = null;
    w.plan.subtasks[1]!.steps[1]!.action_value = ' ';
    delete w.plan.subtasks[1]!.steps[1]!.variable_name;
    expect(problems(w)).toEqual([
      'plan.subtasks[0].steps[0].action_value: a CLICK step has no value: use null',
      'plan.subtasks[0].steps[2].action_value: a KEYPRESS step needs the key to press (e.g. "Enter", "ctrl+a")',
      'plan.subtasks[1].steps[1].action_value: an EXTRACT step needs what to read off the screen',
      'plan.subtasks[1].steps[1].variable_name: an EXTRACT step needs a variable name for the value it reads',
      'plan.subtasks[2].dependencies[0]: "status_text" is not extracted by any step of the plan',
    ]);
  });

  it('checks locators: a role, a window, a name or path, and a path ending at the element', () => {
    const w = sample();
    const loc = w.plan.subtasks[0]!.steps[0]!.locator!;
    loc.path.at(-1)!.name = 'Email';
    loc.role = '';
    expect(problems(w)).toEqual([
      'plan.subtasks[0].steps[0].locator.role: a locator needs the element\'s role (e.g. "push button")',
    ]);
    loc.role = 'text';
    expect(problems(w)).toEqual([
      'plan.subtasks[0].steps[0].locator.path[1]: the path must end at the element itself (text "Name"), not at text "Email"',
    ]);
    Object.assign(loc, { app: '', window_title: ' ', name: '', path: [] });
    expect(problems(w)).toEqual([
      'plan.subtasks[0].steps[0].locator.window_title: a locator needs the window: its title or its app (or both)',
      'plan.subtasks[0].steps[0].locator.name: a locator with neither a name nor a path would match any element of its role: give one, or remove the locator',
    ]);
    w.plan.subtasks[0]!.outcome_check = {};
    delete w.plan.subtasks[0]!.steps[0]!.locator;
    expect(problems(w)).toEqual([
      'plan.subtasks[0].outcome_check: an outcome check needs a role, a name or a value to look for (or remove it)',
    ]);
    w.plan.subtasks[0]!.outcome_check = { value: '{email}' };
    w.task_params[1]!.sensitive = true;
    expect(problems(w)).toEqual([
      "plan.subtasks[0].outcome_check.value: {email} is a sensitive parameter: a check cannot look for it (a password field's value is never read)",
    ]);
  });

  it('refuses unknown keys, wrong numbering and a missing version instead of dropping them', () => {
    const w = sample() as unknown as Record<string, unknown> & Workflow;
    (w.plan.subtasks[0]!.steps[0] as unknown as Record<string, unknown>).intnet = 'typo';
    w.plan.subtasks[1]!.subtask_i = 5;
    expect(problems(w)).toEqual(['plan.subtasks[0].steps[0]: Unrecognized key: "intnet"']);
    delete (w.plan.subtasks[0]!.steps[0] as unknown as Record<string, unknown>).intnet;
    expect(problems(w)).toEqual(['plan.subtasks[1].subtask_i: is 5 but the subtask is number 1 in the plan']);
    delete (w as Partial<Workflow>).version;
    expect(problems(w)[0]).toMatch(/^version: /);
  });

  it('reads schema.json text, saying what is wrong with a broken file', () => {
    expect(parseWorkflowText(text).ok).toBe(true);
    const r = parseWorkflowText('{"version": 1,');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(formatWorkflowProblems(r.problems)).toMatch(/^- \(the file\): not JSON: /);
    expect(() => serializeWorkflow({})).toThrow(/not a valid workflow:\n- version: /);
  });
});

describe('templates', () => {
  it('names and renders `{name}`, with `{{` and `}}` as literal braces', () => {
    expect(templateNames('Play {song} by {artist}, then {song} again; {{literal}} {not a name}')).toEqual([
      'song',
      'artist',
    ]);
    expect(renderTemplate('Play {song} {{x}}', { song: 'Numb' })).toBe('Play Numb {x}');
    expect(() => renderTemplate('{a}', {})).toThrow('no value for {a} in "{a}"');
  });
});
