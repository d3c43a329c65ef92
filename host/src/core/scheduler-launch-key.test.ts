import { describe, expect, it } from 'vitest';
import type { Card } from './project.ts';
import { launchKey } from './scheduler-launch-key.ts';

const card = (front: Partial<Card['front']> = {}, body = '# Task\n'): Card => ({
  file: '/p/cards/a.md',
  front: { id: 'a', title: 'A', flow: 'shell', status: 'queued', ...front },
  body,
  workspace: '/p',
});

describe('launchKey: one queueing of a card, one key', () => {
  it('is the same for what the board writes while the card waits (rank, failures cleared, needs)', () => {
    const k = launchKey(card({ lastRun: 'r1' }));
    expect(launchKey(card({ lastRun: 'r1', rank: -2048, needs: 'x', lastError: 'y' }))).toBe(k);
    expect(launchKey(card({ rank: 5 }))).toBe(launchKey(card({ rank: -5 })));
  });

  it('changes with each run the card had (its next queueing) and with the card file', () => {
    const k = launchKey(card({ lastRun: 'r1' }));
    expect(launchKey(card({ lastRun: 'r2' }))).not.toBe(k);
    expect(launchKey(card())).not.toBe(k);
    expect(launchKey({ ...card({ lastRun: 'r1' }), file: '/p/cards/b.md' })).not.toBe(k);
  });

  it('a card that never ran: a new card at the same path with other work is another launch', () => {
    expect(launchKey(card({}, '# Task\nother'))).not.toBe(launchKey(card()));
    expect(launchKey(card({ command: 'echo b' }))).not.toBe(launchKey(card({ command: 'echo a' })));
  });
});
