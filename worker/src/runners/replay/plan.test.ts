import { describe, expect, it } from 'vitest';
import { fillTemplates, readPlan, resolveParams, substitute } from './plan.ts';
import { keyCombo } from './replay.ts';

const schema = {
  task: 'Play a song',
  task_params: [
    { name: 'song_name', description: 'the song', example: 'Numb' },
    { name: 'volume', description: 'how loud' },
  ],
  plan: {
    subtasks: [
      { id: 'open', text: 'Open the player', expected_outcome: 'The player is open' },
      {
        id: 'play',
        text: 'Play {song_name}',
        expected_outcome: '{song_name} plays',
        dependencies: ['artist'],
      },
    ],
    steps: [
      { subtask: 'open', intent: 'open', action: { type: 'press', key: 'super' } },
      {
        subtask: 'play',
        intent: 'search',
        action: { type: 'type', text: '{song_name} by {artist}' },
        focus: { role: 'text', name: 'Search', path: [{ role: 'text', name: 'Search', index: 0 }] },
      },
    ],
  },
};

describe('a workflow read for replay', () => {
  it('groups steps under their subtasks, in order', () => {
    const plan = readPlan(schema, 'schema.json');
    expect(plan.subtasks.map((s) => [s.id, s.steps.map((x) => x.n)])).toEqual([
      ['open', [1]],
      ['play', [2]],
    ]);
    expect(plan.subtasks[1]!.dependencies).toEqual(['artist']);
    expect(plan.subtasks[1]!.steps[0]!.focus?.name).toBe('Search');
  });

  it('says which step is wrong when a step names no subtask of the plan', () => {
    const bad = structuredClone(schema);
    bad.plan.steps[1]!.subtask = 'nope';
    expect(() => readPlan(bad, 'w.json')).toThrow(/w.json: step 2 belongs to no subtask .*"nope"/);
    expect(() => readPlan({ plan: { subtasks: [] } }, 'w.json')).toThrow(/no subtasks/);
  });

  it('takes the card’s values, else the examples, and names what is missing or unknown', () => {
    const plan = readPlan(schema, 'schema.json');
    const r = resolveParams(plan, { params: { volume: 7, colour: 'red' } });
    expect(r.values).toEqual({ song_name: 'Numb', volume: '7' });
    expect(r.unknown).toEqual(['colour']);
    expect(resolveParams(plan, {}).missing.map((p) => p.name)).toEqual(['volume']);
  });

  it('fills templates with params and extracts, leaving unknown names as written', () => {
    expect(substitute('{song_name} by {artist} at {x}', { song_name: 'Numb', artist: 'Linkin Park' })).toBe(
      'Numb by Linkin Park at {x}',
    );
    const plan = readPlan(schema, 'schema.json');
    const sub = fillTemplates(plan.subtasks[1]!, { song_name: 'Numb', artist: 'LP' });
    expect(sub.text).toBe('Play Numb');
    expect(sub.steps[0]!.action).toEqual({ type: 'type', text: 'Numb by LP' });
  });

  it('turns recorded key names into the addon’s key combinations', () => {
    expect(keyCombo('Enter')).toBe('enter');
    expect(keyCombo('ctrl+ArrowUp')).toBe('ctrl+up');
    expect(keyCombo('shift+Tab')).toBe('shift+tab');
  });
});
