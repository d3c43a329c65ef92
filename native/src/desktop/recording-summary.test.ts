import { describe, expect, it } from 'vitest';
import { endWarnings, KEEP_UP_MS, lagOf } from './recording-summary.ts';

describe('a recording judges its own ending', () => {
  it('lag: each event’s delay less the smallest (the clock offset), as p50, p99 and max', () => {
    const lag = lagOf([1005, 1000, 1010, 3000], 1000);
    expect(lag).toEqual({ p50: 10, p99: 2000, max: 2000, events: 4 });
    expect(lagOf([], Infinity)).toEqual({ p50: 0, p99: 0, max: 0, events: 0 });
  });

  it('says when it could not keep up, could not follow the focus, or left key steps without a field', () => {
    const quiet = endWarnings({ lag: lagOf([5, 5], 5), focusUnavailable: undefined, focusUnknown: 0 });
    expect(quiet).toEqual({ keptUp: true, warnings: [] });
    const busy = endWarnings({
      lag: { p50: 400, p99: 2500, max: KEEP_UP_MS + 1500, events: 9 },
      focusUnavailable: 'no AT-SPI bus',
      focusUnknown: 2,
    });
    expect(busy.keptUp).toBe(false);
    expect(busy.warnings).toEqual([
      expect.stringMatching(/too busy for the recorder: it handled input up to 2\.5 s .*median 400 ms/),
      expect.stringMatching(/focus changes could not be followed \(no AT-SPI bus\)/),
      expect.stringMatching(/^2 key step\(s\) have no field/),
    ]);
  });
});
