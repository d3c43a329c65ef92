import { describe, expect, it } from 'vitest';
import { PendingPauses } from './recording-pauses.ts';

describe('PendingPauses', () => {
  it('holds what is added while a pause is not reached, and gives it back with that pause, oldest first', () => {
    const p = new PendingPauses();
    const done: string[] = [];
    p.add(() => done.push('now'));
    expect(done).toEqual(['now']);
    p.asked(1000);
    p.add(() => done.push('during the first'));
    p.asked(2000);
    p.add(() => done.push('during the second'));
    expect(done).toEqual(['now']);
    const first = p.reached();
    first!.added.forEach((f) => f());
    expect(done).toEqual(['now', 'during the first']);
    expect(p.left().flatMap((x) => x.added.map(() => 'left'))).toEqual(['left']);
    expect(p.reached()).toBeUndefined();
  });

  it('after a Ctrl+I, events at or after the key until its pause is reached', () => {
    const p = new PendingPauses();
    expect(p.afterKey(50)).toBe(false);
    p.asked(1000);
    p.byKey(40);
    p.byKey(45); // a later key before the same instant: the first one counts
    expect([p.afterKey(39), p.afterKey(40), p.afterKey(60)]).toEqual([false, true, true]);
    p.reached();
    expect(p.afterKey(60)).toBe(false);
  });
});
