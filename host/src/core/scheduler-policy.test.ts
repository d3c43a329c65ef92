import { describe, expect, it } from 'vitest';
import { backoffDelay, decide, type PolicyInput } from './scheduler-policy.ts';

const base = (over: Partial<PolicyInput>): PolicyInput => ({
  queued: [],
  running: [],
  maxConcurrency: 4,
  flowCaps: { shell: 2, agent: 1 },
  now: 1_000_000,
  ...over,
});
const q = (id: string, flow = 'shell', notBefore?: number) =>
  notBefore === undefined ? { id, flow } : { id, flow, notBefore };

describe('scheduler policy', () => {
  it('starts cards in Queued-column order up to the flow cap', () => {
    const d = decide(base({ queued: [q('a'), q('b'), q('c')] }));
    expect(d.start).toEqual(['a', 'b']);
    expect(d.waiting.c).toMatch(/at its cap \(2\/2\)/);
  });

  it('a flow parked by a rate limit starts nothing until the reset, other flows go on, and it wakes then', () => {
    const until = 1_000_000 + 120_000;
    const d = decide(base({ queued: [q('a', 'agent'), q('b')], parkedFlows: { agent: until } }));
    expect(d.start).toEqual(['b']);
    expect(d.waiting.a).toMatch(/flow "agent" is parked until .*rate limit resets/);
    expect(d.wakeAt).toBe(until);
    const later = decide(base({ queued: [q('a', 'agent')], parkedFlows: { agent: until }, now: until + 1 }));
    expect(later.start).toEqual(['a']);
  });

  it('a blocked flow (no API key) holds its cards with the reason, without a wake time; other flows go on', () => {
    const why = 'waiting for the API key of provider "openai"';
    const d = decide(base({ queued: [q('a', 'agent'), q('b')], blockedFlows: { agent: why } }));
    expect(d.start).toEqual(['b']);
    expect(d.waiting.a).toBe(why);
    expect(d.wakeAt).toBeUndefined();
    expect(decide(base({ queued: [q('a', 'agent')] })).start).toEqual(['a']);
  });

  it('one run at a time on the real display, across flows; it waits (not fails) while something else holds it', () => {
    const real = { desk1: 'the real display', desk2: 'the real display' };
    const caps = { shell: 2, desk1: 1, desk2: 1 };
    const d = decide(
      base({ flowCaps: caps, exclusive: real, queued: [q('a', 'desk1'), q('b', 'desk2'), q('c')] }),
    );
    expect(d.start).toEqual(['a', 'c']);
    expect(d.waiting.b).toBe('waiting for the real display: card a (flow "desk1") is using it');
    const running = decide(
      base({
        flowCaps: caps,
        exclusive: real,
        queued: [q('b', 'desk2')],
        running: [{ id: 'a', flow: 'desk1' }],
      }),
    );
    expect(running.start).toEqual([]);
    expect(running.waiting.b).toMatch(/^waiting for the real display: card a/);
    // a run this board did not start holds it (the supervisor refused with display-busy)
    const foreign = decide(
      base({
        flowCaps: caps,
        exclusive: real,
        busy: { 'the real display': 'run 20260101-000000-abcdef is using it' },
        queued: [q('b', 'desk2'), q('c')],
      }),
    );
    expect(foreign.start).toEqual(['c']);
    expect(foreign.waiting.b).toBe('waiting for the real display: run 20260101-000000-abcdef is using it');
  });

  it('honours the global maxConcurrency across flows', () => {
    const d = decide(
      base({
        maxConcurrency: 2,
        queued: [q('a'), q('x', 'agent'), q('b')],
        running: [{ id: 'r', flow: 'shell' }],
      }),
    );
    expect(d.start).toEqual(['a']);
    expect(d.waiting.x).toMatch(/slots are busy/);
    expect(d.waiting.b).toMatch(/at its cap/);
  });

  it('a capped flow does not block later cards of other flows', () => {
    const d = decide(base({ queued: [q('a'), q('b'), q('c'), q('x', 'agent')], running: [] }));
    expect(d.start).toEqual(['a', 'b', 'x']);
  });

  it('reordering the Queued column changes which card starts', () => {
    const one = { ...base({}), flowCaps: { shell: 1 } };
    expect(decide({ ...one, queued: [q('a'), q('b')] }).start).toEqual(['a']);
    expect(decide({ ...one, queued: [q('b'), q('a')] }).start).toEqual(['b']);
  });

  it('live reload: a lower cap holds new runs but never stops running ones; a higher cap starts at once', () => {
    const running = [
      { id: 'r1', flow: 'shell' },
      { id: 'r2', flow: 'shell' },
    ];
    const lower = decide(base({ flowCaps: { shell: 1 }, running, queued: [q('a')] }));
    expect(lower.start).toEqual([]);
    expect(lower.waiting.a).toMatch(/2\/1/);
    const higher = decide(base({ flowCaps: { shell: 4 }, running, queued: [q('a'), q('b'), q('c')] }));
    expect(higher.start).toEqual(['a', 'b']);
  });

  it('cards of a flow missing from config.yaml wait with a reason', () => {
    const d = decide(base({ queued: [q('a', 'nope'), q('b', 'constructor'), q('c', '__proto__')] }));
    expect(d.start).toEqual([]);
    expect(d.waiting.a).toMatch(/not in config.yaml/);
    // names of Object.prototype are no flows either
    expect(d.waiting.b).toMatch(/^flow "constructor" is not in config.yaml: add it there, or Edit the card/);
    expect(d.waiting.c).toMatch(/^flow "__proto__" is not in config.yaml: add it there/);
  });

  it('a card in backoff waits until its next try, and says when to look again', () => {
    const now = 1_000_000;
    const d = decide(
      base({ now, queued: [q('a', 'shell', now + 4000), q('b', 'shell', now + 2000), q('c')] }),
    );
    expect(d.start).toEqual(['c']);
    expect(d.waiting.a).toMatch(/next try at/);
    expect(d.wakeAt).toBe(now + 2000);
    expect(decide(base({ now: now + 4000, queued: [q('a', 'shell', now + 4000)] })).start).toEqual(['a']);
  });

  it('a full column limit starts nothing new', () => {
    const d = decide(
      base({
        queued: [q('a')],
        columnLimits: { 'needs-input': 4 },
        columnCounts: { 'needs-input': 4 },
      }),
    );
    expect(d.start).toEqual([]);
    expect(d.waiting.a).toMatch(/needs-input/);
    const room = decide(
      base({ queued: [q('a')], columnLimits: { 'needs-input': 4 }, columnCounts: { 'needs-input': 3 } }),
    );
    expect(room.start).toEqual(['a']);
  });
});

describe('backoff', () => {
  it('doubles per consecutive failure and is capped at 5 minutes', () => {
    expect(backoffDelay(0, 2000, 300_000)).toBe(0);
    expect(backoffDelay(1, 2000, 300_000)).toBe(2000);
    expect(backoffDelay(2, 2000, 300_000)).toBe(4000);
    expect(backoffDelay(5, 2000, 300_000)).toBe(32_000);
    expect(backoffDelay(9, 2000, 300_000)).toBe(300_000);
    expect(backoffDelay(1000, 2000, 300_000)).toBe(300_000);
  });
});

describe('caps and rate limits per provider key (scheduler-caps.ts)', () => {
  const providers = {
    flowProvider: { a1: 'openai', a2: 'openai', c: 'anthropic' },
    maxConcurrent: { openai: 3 },
  };
  const caps = { a1: 5, a2: 5, c: 5, shell: 5 };

  it('five cards over two flows on one key never exceed its cap; other keys and flows go on', () => {
    const queued = [
      q('x1', 'a1'),
      q('x2', 'a2'),
      q('x3', 'a1'),
      q('x4', 'a2'),
      q('x5', 'a1'),
      q('y', 'c'),
      q('z'),
    ];
    const d = decide(base({ queued, flowCaps: caps, maxConcurrency: 10, providers }));
    expect(d.start).toEqual(['x1', 'x2', 'x3', 'y', 'z']);
    expect(d.waiting.x4).toBe(
      'provider "openai" is at its cap (3/3 runs over all flows: providers.openai.maxConcurrent)',
    );
    // runs already going count too, whichever flow they are of
    const later = decide(
      base({
        queued: [q('x4', 'a2')],
        running: [
          { id: 'r', flow: 'a1' },
          { id: 's', flow: 'a1' },
        ],
        flowCaps: caps,
        providers,
      }),
    );
    expect(later.start).toEqual(['x4']);
    const full = decide(
      base({
        queued: [q('x5', 'a2')],
        running: ['r', 's', 't'].map((id) => ({ id, flow: 'a1' })),
        flowCaps: caps,
        providers,
      }),
    );
    expect(full.start).toEqual([]);
    expect(full.waiting.x5).toMatch(/provider "openai" is at its cap \(3\/3/);
  });

  it('the least cap holds, and the card says which: flow, provider or the machine-wide slots', () => {
    const flowFirst = decide(
      base({ queued: [q('a', 'a1'), q('b', 'a1')], flowCaps: { ...caps, a1: 1 }, providers }),
    );
    expect(flowFirst.waiting.b).toMatch(/flow "a1" is at its cap \(1\/1\)/);
    const slots = decide(
      base({ queued: [q('a', 'a1'), q('b', 'a2')], flowCaps: caps, maxConcurrency: 1, providers }),
    );
    expect(slots.waiting.b).toBe('all 1 run slots are busy');
  });

  it('a rate limit parks every flow on the key until its reset, then they start', () => {
    const until = 1_000_000 + 60_000;
    const parked = { ...providers, parkedUntil: { openai: until } };
    const d = decide(
      base({ queued: [q('x1', 'a1'), q('x2', 'a2'), q('y', 'c')], flowCaps: caps, providers: parked }),
    );
    expect(d.start).toEqual(['y']);
    expect(d.waiting.x1).toMatch(/provider "openai" is parked until .*: its rate limit resets then/);
    expect(d.waiting.x2).toBe(d.waiting.x1);
    expect(d.wakeAt).toBe(until);
    const after = decide(
      base({ queued: [q('x1', 'a1'), q('x2', 'a2')], flowCaps: caps, providers: parked, now: until }),
    );
    expect(after.start).toEqual(['x1', 'x2']);
  });
});
