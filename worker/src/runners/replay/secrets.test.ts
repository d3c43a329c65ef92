import { describe, expect, it } from 'vitest';
import type { Plan } from './plan.ts';
import { Secrets } from './secrets.ts';

const plan: Plan = {
  task: 'sign in',
  description: '',
  params: [
    { name: 'user', description: 'who' },
    { name: 'pin', description: 'the PIN', sensitive: true },
    { name: 'pass', description: 'the password', sensitive: true },
  ],
  subtasks: [],
};
const secrets = (): Secrets => new Secrets(plan, { user: 'ada', pin: '4711', pass: '4711-x' });

describe("a replay's sensitive parameters", () => {
  it('are the sensitive ones with a value; the model knows each as its {name}', () => {
    const s = secrets();
    expect(s.names).toEqual(['pin', 'pass']);
    expect(s.modelValues).toEqual({ user: 'ada', pin: '{pin}', pass: '{pass}' });
    expect(s.modelParams().user).toBe('ada');
    expect(s.modelParams().pin).toContain('type exactly "{pin}"');
    expect(JSON.stringify(s.modelParams())).not.toContain('4711');
    expect(new Secrets(plan, { user: 'ada' }).names).toEqual([]);
  });

  it('hides every value in a text, the longer first (one value inside another)', () => {
    expect(secrets().hide('typed 4711-x then 4711 for ada')).toBe('typed {pass} then {pin} for ada');
    expect(secrets().in('typed 4711 here')).toEqual(['pin']);
    expect(secrets().in('nothing secret')).toEqual([]);
  });

  it('types a value the model named, and says which it typed that way', () => {
    expect(secrets().typedByName('{pin} and {pass}')).toEqual({
      text: '4711 and 4711-x',
      names: ['pin', 'pass'],
    });
    expect(secrets().typedByName('plain {user}')).toEqual({ text: 'plain {user}', names: [] });
  });
});
