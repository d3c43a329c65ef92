import { describe, expect, it } from 'vitest';
import { ServerClock } from './server-clock.ts';

describe('ServerClock', () => {
  it('knows nothing before a sample, and ignores instants the server did not give', () => {
    const c = new ServerClock();
    c.observe(10_000, 0);
    expect(c.toLocal(500)).toBeUndefined();
  });

  it('takes the smallest bound seen before the first time asked for', () => {
    const c = new ServerClock();
    c.observe(10_500, 500); // 10_000
    c.observe(20_400, 10_410); // 9_990
    c.observe(30_000, 19_000); // 11_000: looser
    expect(c.toLocal(100)).toBe(10_090);
  });

  it('keeps the offset once asked: times given later stay in the order of the server', () => {
    const c = new ServerClock();
    c.observe(1_000 + 29, 100); // a recorder 29 ms behind at the first event
    const click = c.toLocal(100)!;
    c.observe(1_000 + 2, 102); // it caught up: a tighter bound
    const key = c.toLocal(102)!;
    expect(key - click).toBe(2);
  });
});
