import { describe, expect, it } from 'vitest';
import { AckBatcher, StreamCredit } from './credit.ts';

describe('StreamCredit', () => {
  it('the backlog is what was sent and not yet acknowledged; drained waits for the acks', async () => {
    const c = new StreamCredit();
    const a = c.sending({ type: 'lines', lines: ['x'.repeat(100)] });
    const b = c.sending({ type: 'lines', lines: ['y'.repeat(50)] });
    expect(c.backlog()).toBe(a + b);
    let done = false;
    const drained = c.drained().then(() => (done = true));
    c.ack(a);
    await Promise.resolve();
    expect(done).toBe(false);
    expect(c.backlog()).toBe(b);
    c.ack(b);
    await drained;
    expect(c.backlog()).toBe(0);
  });

  it('bogus or excess acks cannot make the backlog negative; close releases waiters', async () => {
    const c = new StreamCredit();
    c.sending({ a: 1 });
    c.ack(-5);
    c.ack(Number.NaN);
    expect(c.backlog()).toBeGreaterThan(0);
    const waiting = c.drained();
    c.close();
    await waiting;
    c.ack(1e9);
    expect(c.backlog()).toBe(0);
  });
});

describe('AckBatcher', () => {
  it('acknowledges small messages once per turn and big batches at once', async () => {
    const flushed: number[] = [];
    const b = new AckBatcher((n) => flushed.push(n), 1000);
    b.handled(10);
    b.handled(20);
    expect(flushed).toEqual([]);
    await new Promise((r) => setTimeout(r, 5));
    expect(flushed).toEqual([30]);
    b.handled(1500);
    expect(flushed).toEqual([30, 1500]);
  });
});
