import { describe, expect, it } from 'vitest';
import { parseConfig } from './project.ts';
import {
  admit,
  Admission,
  blockedInput,
  columnInput,
  parkingInput,
  realDisplayInput,
  REAL_DISPLAY,
  type AdmissionInput,
} from './scheduler-admission.ts';
import { RateLimitParks } from './scheduler-caps.ts';
import type { PolicyInput } from './scheduler-policy.ts';

const NOW = 1_000_000;
const config = parseConfig(
  '/p/config.yaml',
  [
    'version: 2',
    'scheduler: { maxConcurrency: 4 }',
    'providers:',
    '  openai: { maxConcurrent: 1 }',
    'flows:',
    '  shell: { runner: command, cap: 3 }',
    '  agent: { runner: codex, provider: openai, cap: 2 }',
    '  other: { runner: codex, provider: anthropic, cap: 2 }',
    '  desk: { runner: computer-use, provider: anthropic, cap: 1 }',
    '  desk2: { runner: computer-use, provider: anthropic, cap: 1 }',
    '',
  ].join('\n'),
);
const base = (over: Partial<PolicyInput> = {}): PolicyInput => ({
  ...columnInput(config, []),
  queued: [],
  running: [],
  now: NOW,
  ...over,
});
const q = (id: string, flow: string) => ({ id, flow });

/** A card's attempts as the admission sees them (scheduler-attempts.ts's entries: `card#n`). */
const attempts = (
  cardId: string,
  pending: number[],
  running: number,
  of: number,
): AdmissionInput & { launched: string[] } => {
  const launched: string[] = [];
  return Object.assign(
    {
      queued: () => pending.map((i) => q(`${cardId}#${i}`, 'shell')),
      running: () => Array.from({ length: running }, (_, i) => q(`${cardId}#r${i}`, 'shell')),
      explain: (w: Record<string, string>) =>
        Object.fromEntries(
          Object.entries(w).map(([id, why]) => {
            const [card, n] = id.split('#');
            return n === undefined ? [id, why] : [card!, `attempt ${Number(n) + 1} of ${of} waits: ${why}`];
          }),
        ),
      launch: (id: string) => id.startsWith(`${cardId}#`) && launched.push(id) > 0,
    },
    { launched },
  );
};

const iso = (t: number): string => new Date(t).toISOString();

describe('the scheduler admission (may this start now, and why not)', () => {
  it("a running card's attempts go ahead of the Queued column and wait on its card, saying which", () => {
    const a = attempts('c1', [1, 2], 1, 3);
    const d = admit(base({ queued: [q('c2', 'shell')], running: [], flowCaps: { shell: 2 } }), [a]);
    expect(d.start).toEqual(['c1#1']);
    // the second attempt is held by the flow's cap, said on its card; the column's card too
    expect(d.waiting.c1).toBe('attempt 3 of 3 waits: flow "shell" is at its cap (2/2)');
    expect(d.waiting.c2).toBe('flow "shell" is at its cap (2/2)');
    const admission = new Admission([a]);
    expect(admission.launch('c1#1')).toBe(true);
    expect(admission.launch('c2')).toBe(false); // a column card: the scheduler starts it
    expect(a.launched).toEqual(['c1#1']);
  });

  it("a run's rate limit parks every flow on its provider until the reset, then they start", () => {
    let now = NOW;
    const parks = new RateLimitParks(
      () => config,
      () => now,
    );
    const parking = parkingInput(() => config, parks);
    const until = NOW + 60_000;
    expect(parks.park('agent', iso(until))).toBe(true);
    expect(parks.park('agent', iso(NOW - 1))).toBe(false); // a reset already past
    const queued = [q('a', 'agent'), q('b', 'other'), q('c', 'shell')];
    const d = admit(base({ queued }), [parking]);
    expect(d.start).toEqual(['b', 'c']);
    expect(d.waiting.a).toMatch(/provider "openai" is parked until .*rate limit resets then/);
    expect(d.wakeAt).toBe(until);
    expect([...parks.parked()]).toEqual([['agent', until]]);
    now = until + 1;
    expect(admit(base({ queued, now }), [parking]).start).toEqual(['a', 'b', 'c']);
    expect(parks.parked().size).toBe(0);
  });

  it('a flow with no provider is parked by its own rate limit; the provider cap holds the rest', () => {
    const parks = new RateLimitParks(
      () => config,
      () => NOW,
    );
    parks.park('shell', iso(NOW + 1000));
    const d = admit(base({ queued: [q('s', 'shell'), q('a1', 'agent'), q('a2', 'agent')] }), [
      parkingInput(() => config, parks),
    ]);
    expect(d.start).toEqual(['a1']);
    expect(d.waiting.s).toMatch(/flow "shell" is parked until/);
    expect(d.waiting.a2).toBe(
      'provider "openai" is at its cap (1/1 runs over all flows: providers.openai.maxConcurrent)',
    );
  });

  it('the real display is held by one run at a time, by ours or by a run this board did not start', () => {
    let busy: Record<string, string> = {};
    const display = realDisplayInput(
      () => config,
      () => busy,
    );
    const two = base({ queued: [q('d1', 'desk'), q('d2', 'desk2')] });
    const d = admit(two, [display]);
    expect(d.start).toEqual(['d1']);
    expect(d.waiting.d2).toBe(`waiting for ${REAL_DISPLAY}: card d1 (flow "desk") is using it`);
    busy = { [REAL_DISPLAY]: 'run r9 (not started by this board) is using it' };
    expect(admit(two, [display]).waiting).toEqual({
      d1: `waiting for ${REAL_DISPLAY}: run r9 (not started by this board) is using it`,
      d2: `waiting for ${REAL_DISPLAY}: run r9 (not started by this board) is using it`,
    });
  });

  it('blocked flows wait without a wake time: every flow without a supervisor, else a keyless provider', () => {
    const supervisor: { down?: string } = {};
    const keyless: Record<string, string> = { openai: 'waiting for an API key for provider "openai"' };
    const blocked = blockedInput(
      () => config,
      () => supervisor.down,
      (p) => keyless[p],
    );
    const queued = [q('a', 'agent'), q('s', 'shell')];
    let d = admit(base({ queued }), [blocked]);
    expect(d.start).toEqual(['s']);
    expect(d.waiting.a).toBe(keyless.openai);
    expect(d.wakeAt).toBeUndefined();
    const down = (supervisor.down = 'waiting for the supervisor');
    d = admit(base({ queued }), [blocked]);
    expect(d.start).toEqual([]);
    expect(d.waiting).toEqual({ a: down, s: down });
  });

  it('the column limits count the cards each column holds', () => {
    const limited = parseConfig(
      '/p/config.yaml',
      'version: 2\nscheduler: { columnLimits: { needs-input: 1 } }\nflows:\n  shell: { runner: command }\n',
    );
    const cards = [{ front: { status: 'needs-input' } }, { front: {} }] as unknown as Parameters<
      typeof columnInput
    >[1];
    const input = columnInput(limited, cards);
    expect(input.columnCounts).toEqual({ 'needs-input': 1, backlog: 1 });
    const d = admit({ ...input, queued: [q('x', 'shell')], running: [], now: NOW }, []);
    expect(d.start).toEqual([]);
    expect(d.waiting.x).toMatch(/column "needs-input" holds 1 \(limit 1\)/);
  });
});
