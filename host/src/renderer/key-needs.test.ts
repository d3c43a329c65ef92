import { describe, expect, it } from 'vitest';
import type { CardView, ProviderView } from '../shared/board-types.ts';
import { keyNeedsProviders, withKeyNeeds } from './key-needs.ts';

const p = (name: string, hasKey: boolean): ProviderView => ({
  name,
  baseUrl: '',
  hasKey,
  known: true,
  flows: [],
});
const card = (needs?: string): CardView => ({
  id: 'c',
  file: 'cards/c.md',
  title: 'C',
  flow: 'coder',
  column: 'backlog',
  locked: false,
  ...(needs ? { needs } : {}),
});
const NEEDS = 'an OpenAI key: write keys/providers/openai.key (or runboard key set openai)';

describe('a card’s needs about a provider key', () => {
  it('is met once every provider it names has a key saved', () => {
    expect(withKeyNeeds(card(NEEDS), [p('openai', false)]).needs).toBe(NEEDS);
    const met = withKeyNeeds(card(NEEDS), [p('openai', true), p('anthropic', false)]);
    expect(met.needs).toBeUndefined();
    expect(met.needsMet).toBe('openai key saved');
    expect(met.needsWas).toBe(NEEDS);
    const both = 'OpenAI and Anthropic API keys';
    expect(withKeyNeeds(card(both), [p('openai', true), p('anthropic', false)]).needs).toBe(both);
    expect(withKeyNeeds(card(both), [p('openai', true), p('anthropic', true)]).needsMet).toBe(
      'openai and anthropic keys saved',
    );
  });
  it('other needs stay as written (no key meant, no provider named, a name inside a word)', () => {
    const providers = [p('openai', true), p('ai', true)];
    for (const n of ['your permission to write in /srv', 'a key to the server room', 'the openairport key'])
      expect(withKeyNeeds(card(n), [p('openai', true)]).needs).toBe(n);
    expect(keyNeedsProviders('an OpenAI key', providers).map((x) => x.name)).toEqual(['openai']);
    const c = card();
    expect(withKeyNeeds(c, providers)).toBe(c);
  });
});
