import type { RunEvent } from '@runboard/supervisor/protocol';
import { describe, expect, it } from 'vitest';
import { liveAskText } from '../cli/answer.ts';
import { liveAskEvent } from './live-ask-events.ts';
import { LiveAskWaits } from './live-ask-waits.ts';

const RUN = '20260101-120000-0a1b2c';
const log = (data: Record<string, unknown>, seq = 7): RunEvent => ({
  seq,
  ts: '2026-01-01T12:00:00.000Z',
  type: 'log',
  message: 'm',
  data,
});
const ask = { id: 'a1', kind: 'write', path: '/home/u/reports', evidence: 'Write x', source: 'agent' };
const waits = (a: unknown = ask): RunEvent => log({ kind: 'ask', live: true, asks: [a] });

describe('live ask events: one reader for the board and the CLI', () => {
  it('reads a wait and an answer with the protocol schemas', () => {
    expect(liveAskEvent(waits())).toEqual({ type: 'waits', asks: [ask] });
    expect(liveAskEvent(log({ kind: 'ask-answer', ask: 'a1', choice: 'timeout' }))).toEqual({
      type: 'answered',
      ask: 'a1',
      choice: 'timeout',
    });
    // not live-ask events: an ask after the act (the run ends), other logs, other event types
    expect(liveAskEvent(log({ kind: 'ask', asks: [ask] }))).toBeUndefined();
    expect(liveAskEvent(log({ kind: 'worktree' }))).toBeUndefined();
    expect(liveAskEvent({ ...waits(), type: 'progress' })).toBeUndefined();
  });

  it('a malformed ask event is named with what is wrong, never taken half', () => {
    const bad = [
      waits({ ...ask, path: 42 }),
      waits({ ...ask, id: '../a1' }),
      waits({ ...ask, kind: 'own' }),
      log({ kind: 'ask', live: true, asks: 'a1' }),
      log({ kind: 'ask', live: true, asks: [] }),
      log({ kind: 'ask', live: 'yes', asks: [ask] }),
      log({ kind: 'ask-answer', ask: 'a1', choice: 'maybe' }),
      log({ kind: 'ask-answer', choice: 'allow' }),
    ];
    for (const e of bad) {
      const r = liveAskEvent(e);
      expect(r?.type, JSON.stringify(e.data)).toBe('malformed');
      expect(r).toMatchObject({ error: expect.stringMatching(/Runboard cannot read: \S/) });
    }
    expect(liveAskEvent(waits({ ...ask, path: 42 }))).toMatchObject({
      error: expect.stringContaining('asks.0.path'),
    });
  });

  it('the CLI prints the ask and its commands, and says so of a malformed one', () => {
    expect(liveAskText(RUN, waits())).toBe(
      `? the run asks to write /home/u/reports and waits. Allow (this run gains it, nothing around it): ` +
        `runboard answer ${RUN} a1 allow — or deny: runboard answer ${RUN} a1 deny`,
    );
    const text = liveAskText(RUN, waits({ ...ask, path: 42 }));
    expect(text).toContain(`run ${RUN} sent a live ask event (#7) Runboard cannot read: asks.0.path`);
    expect(text).toContain(`runboard answer ${RUN} <ask> allow|deny`);
    expect(liveAskText(RUN, log({ kind: 'worktree' }))).toBeUndefined();
  });

  it("the board keeps each live run's asks (an attempt's with its number), a malformed one warned", () => {
    const warned: string[] = [];
    let changes = 0;
    const w = new LiveAskWaits(
      () => changes++,
      (m) => warned.push(m),
    );
    w.event('c', 'r1', waits({ ...ask, path: 42 }));
    expect(w.waitingRuns('c', () => true)).toEqual([]);
    expect(warned).toEqual([expect.stringContaining('card c, run r1: a live ask event (#7)')]);
    expect(changes).toBe(0);

    w.event('c', 'r2', waits(), { n: 2, of: 3 });
    w.event('c', 'r1', waits({ ...ask, path: '/srv/x' }), { n: 1, of: 3 });
    expect(w.waitingRuns('c', () => true).map((r) => [r.runId, r.attempt?.n])).toEqual([
      ['r2', 2],
      ['r1', 1],
    ]);
    // a run no longer live (ended, or an older run of the card) is not shown
    expect(w.waitingRuns('c', (r) => r === 'r1').map((r) => r.runId)).toEqual(['r1']);
    w.event('c', 'r2', log({ kind: 'ask-answer', ask: 'a1', choice: 'deny' }));
    expect(w.waiting('c', 'r2')).toEqual([]);
    w.ended('c', 'r1');
    expect(w.waitingRuns('c', () => true)).toEqual([]);
    expect(changes).toBe(4);
  });

  it('an answer the supervisor took leaves the waits at once; its event then changes nothing', () => {
    let changes = 0;
    const w = new LiveAskWaits(() => changes++);
    w.event('c', 'r1', waits(), { n: 1, of: 2 });
    w.event('c', 'r2', waits(), { n: 2, of: 2 });
    w.answered('c', 'r1', 'a1');
    // attempt 2 still waits, attempt 1 is not shown again beside it
    expect(w.waitingRuns('c', () => true).map((r) => r.runId)).toEqual(['r2']);
    expect(changes).toBe(3);
    w.event('c', 'r1', log({ kind: 'ask-answer', ask: 'a1', choice: 'allow' }));
    w.answered('c', 'r1', 'a1');
    expect(changes).toBe(3);
    expect(w.waitingRuns('c', () => true).map((r) => r.runId)).toEqual(['r2']);
  });
});
