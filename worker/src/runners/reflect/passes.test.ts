import { describe, expect, it } from 'vitest';
import { jsonIn } from './model.ts';
import {
  assemble,
  checkPassA,
  checkPassB,
  parseManifest,
  stepInputs,
  type PassAAnswer,
  type PassBAnswer,
} from './passes.ts';

const win = {
  id: 7,
  app: 'shop',
  title: 'Order {draft}',
  bounds: [0, 0, 800, 600] as [number, number, number, number],
};
const el = (role: string, name: string) => ({
  role,
  name,
  bounds: [10, 10, 100, 20] as [number, number, number, number],
  path: [
    { role: 'filler', name: '', index: 0 },
    { role, name, index: 0 },
  ],
});
const MANIFEST = [
  {
    step: 1,
    at: 0,
    screenshot: 'screenshots/0001.png',
    action: { type: 'click', x: 5, y: 5, button: 'left' },
    window: win,
    element: el('text', 'Search'),
  },
  {
    step: 2,
    at: 1,
    screenshot: 'screenshots/0002.png',
    action: { type: 'type', text: 'Numb' },
    window: win,
    focus: el('text', 'Search'),
  },
  {
    step: 3,
    at: 2,
    screenshot: 'screenshots/0003.png',
    action: { type: 'click', x: 9, y: 9, button: 'left', count: 2 },
    window: win,
    element: el('list item', 'Numb - Linkin Park'),
  },
  {
    step: 4,
    at: 3,
    screenshot: 'screenshots/0004.png',
    action: { type: 'extract', query: 'the album' },
    window: win,
    element: el('label', 'Album'), // the element the person pointed at when pressing Ctrl+I
  },
  {
    step: 5,
    at: 4,
    screenshot: 'screenshots/0005.png',
    action: { type: 'type', text: 'x' },
    window: win,
    details: 'paste the album',
  },
]
  .map((l) => JSON.stringify(l))
  .join('\n');

const steps = stepInputs('rec-20261122-231500-a1b2c3', parseManifest(MANIFEST));
const card = (action_value: string | null): PassAAnswer => ({
  expected_current_state: 's',
  intent: 'i',
  target: { primary: 't', fallback: null },
  post_action: ['p'],
  action_value,
});
const cards = [card(null), card('Numb'), card(null), card('the album title'), card('x')];
const r = { taskName: 'Play a song', taskDescription: '', steps, cards };
const answer = (over: Partial<PassBAnswer> = {}): PassBAnswer => ({
  detailed_task_description: 'd',
  success_criteria: 's',
  task_params: [{ name: 'song', type: 'string', description: 'the song', example: 'Numb', sensitive: false }],
  subtasks: [
    { text: 'Find {song}', expected_outcome: '{song} is listed' },
    { text: 'Read the album', expected_outcome: 'captured' },
    { text: 'Type {extract_0} somewhere', expected_outcome: 'typed' },
  ],
  steps: [
    { i: 0, subtask: 0, action_value: null },
    { i: 1, subtask: 0, action_value: '{song}' },
    { i: 2, subtask: 0, action_value: null },
    { i: 3, subtask: 1, action_value: 'extract_0' },
    { i: 4, subtask: 2, action_value: null },
  ],
  ...over,
});

describe('reflect passes', () => {
  it('turns the manifest into steps: action types, screenshots before and after, extract names', () => {
    expect(steps.map((s) => [s.actionType, s.pre, s.post, s.variable])).toEqual([
      ['CLICK', 'screenshots/0001.png', 'screenshots/0002.png', undefined],
      ['TYPE', 'screenshots/0002.png', 'screenshots/0003.png', undefined],
      ['DOUBLE_CLICK', 'screenshots/0003.png', 'screenshots/0004.png', undefined],
      ['EXTRACT', 'screenshots/0004.png', 'screenshots/0004.png', 'extract_0'],
      ['TYPE', 'screenshots/0005.png', null, undefined],
    ]);
    expect(() => parseManifest('{"step": 1}')).toThrow(/^manifest.jsonl line 1 is not a recorded step: /);
  });

  it('keeps no value of a sensitive parameter: no example, and its typed step’s recorded text dropped', () => {
    const b = answer();
    b.task_params[0]!.sensitive = true;
    const c = checkPassB(r)(b);
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    expect(c.value.task_params[0]!.example).toBe('');
    expect(JSON.stringify(c.value)).not.toContain('"Numb"');
  });

  it('assembles a valid workflow: templated locators, literal braces, dependencies from templates', () => {
    const c = checkPassB(r)(answer());
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    const [find, read, use] = c.value.plan.subtasks;
    expect(find!.steps[2]!.locator?.name).toBe('{song} - Linkin Park');
    expect(find!.steps[0]!.locator?.window_title).toBe('Order {{draft}}');
    expect(read!.steps[0]!.action_value).toBe('the album title'); // pass A's refined query stays
    expect(read!.steps[0]!.variable_name).toBe('extract_0');
    // the extract's element becomes its locator: replay reads it without a model
    expect(read!.steps[0]!.locator).toMatchObject({
      role: 'label',
      name: 'Album',
      window_title: 'Order {{draft}}',
    });
    expect(use!.dependencies).toEqual(['extract_0']);
    expect(use!.steps[0]!.recorded?.details).toBe('paste the album');
  });

  it("keeps each subtask's outcome check (seed 002 format), templates and dependencies included", () => {
    const a = answer();
    a.subtasks[0]!.outcome_check = { role: 'list item', name: '{song} - Linkin Park' };
    a.subtasks[1]!.outcome_check = null;
    a.subtasks[2]!.outcome_check = { value: '{extract_0}' };
    const c = checkPassB(r)(a);
    expect(c.ok).toBe(true);
    if (!c.ok) return;
    const [find, read, use] = c.value.plan.subtasks;
    expect(find!.outcome_check).toEqual({ role: 'list item', name: '{song} - Linkin Park' });
    expect(read!.outcome_check).toBeUndefined();
    expect(use!.outcome_check).toEqual({ value: '{extract_0}' });
    // A check with nothing to look for, or a template nobody fills, is sent back with its path.
    const bad = answer();
    bad.subtasks[0]!.outcome_check = {};
    bad.subtasks[1]!.outcome_check = { value: '{album}' };
    const b = checkPassB(r)(bad);
    expect(b.ok).toBe(false);
    if (!b.ok)
      expect(b.problems).toEqual([
        'plan.subtasks[0].outcome_check: an outcome check needs a role, a name or a value to look for (or remove it)',
        'plan.subtasks[1].outcome_check.value: {album} is neither a parameter (song) nor an upstream extract this subtask depends on',
      ]);
  });

  it('says what is wrong with a pass B answer: missing steps, order, templates', () => {
    const missing = checkPassB(r)(answer({ steps: answer().steps.slice(0, 4) }));
    expect(missing).toEqual({
      ok: false,
      problems: [
        'steps: step 4 has no entry (every step needs its subtask and action_value)',
        'subtasks[2]: no step belongs to it',
      ],
    });
    const back = answer();
    back.steps[4]!.subtask = 0;
    expect(assemble(r, back).problems).toEqual([
      'steps[4].subtask: is 0 after an earlier step in subtask 1: steps keep their recorded order, so subtasks follow one another',
      'subtasks[2]: no step belongs to it',
    ]);
    const later = answer();
    later.subtasks[0]!.text = 'Find {extract_0}';
    const c = checkPassB(r)(later);
    expect(c.ok).toBe(false);
    if (!c.ok)
      expect(c.problems[0]).toMatch(/^plan\.subtasks\[0\]\.text: \{extract_0\} is neither a parameter/);
  });

  it('checks pass A answers for the value their action needs', () => {
    expect(checkPassA(steps[3]!)(card(null))).toEqual({
      ok: false,
      problems: ['action_value: an EXTRACT step needs the refined query of what to read off the screen'],
    });
    expect(checkPassA(steps[0]!)({ intent: 'x' }).ok).toBe(false);
  });

  it('finds the JSON object in a model answer: bare, fenced, or in prose', () => {
    expect(jsonIn('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(jsonIn('Sure:\n```json\n{"a": 2}\n```\nDone.')).toEqual({ ok: true, value: { a: 2 } });
    expect(jsonIn('I think {"a": 3} is it')).toEqual({ ok: true, value: { a: 3 } });
    expect(jsonIn('no json here')).toEqual({ ok: false, error: 'the answer holds no JSON object' });
  });
});
