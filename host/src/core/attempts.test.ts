import { describe, expect, it } from 'vitest';
import {
  IllegalAttemptEvent,
  initial,
  judging,
  next,
  resumed,
  slotsHeld,
  step,
  type AttemptsState,
} from './attempts.ts';

const ok = { status: 'succeeded' as const, text: 'done' };
const bad = (text: string) => ({ status: 'failed' as const, text });

/** Launches attempt i as run r<i>. */
function run(s: AttemptsState, i: number): AttemptsState {
  s = step(s, { type: 'launching', index: i });
  return step(s, { type: 'launched', index: i, runId: `r${i}` });
}

describe("a card's attempts", () => {
  it('offers every pending attempt to the policy, and counts the slots those going hold', () => {
    let s = initial(3);
    expect(next(s, 0)).toEqual({ kind: 'launch', indexes: [0, 1, 2] });
    s = run(s, 0);
    s = step(s, { type: 'launching', index: 1 });
    expect(next(s, 0)).toEqual({ kind: 'launch', indexes: [2] });
    expect(slotsHeld(s)).toBe(2);
  });

  it('judges once all ended and one succeeded; the judge sees every attempt that ran', () => {
    let s = initial(3);
    for (const i of [0, 1, 2]) s = run(s, i);
    s = step(s, { type: 'ended', index: 0, end: bad('crashed'), at: 1 });
    s = step(s, { type: 'ended', index: 1, end: ok, at: 2 });
    expect(next(s, 2)).toEqual({ kind: 'wait' });
    s = step(s, { type: 'ended', index: 2, end: bad('timed out'), at: 3 });
    const a = next(s, 3);
    expect(a).toEqual({
      kind: 'judge',
      runs: [
        { index: 0, runId: 'r0' },
        { index: 1, runId: 'r1' },
        { index: 2, runId: 'r2' },
      ],
    });
    s = judging(s);
    expect(slotsHeld(s)).toBe(1);
    s = step(s, { type: 'judge-launched', runId: 'j' });
    s = step(s, { type: 'judged', verdict: { winner: 1, reasons: 'the form says Submitted' } });
    expect(next(s, 4)).toEqual({
      kind: 'settle',
      outcome: {
        kind: 'won',
        winner: 1,
        runId: 'r1',
        reasons: 'the form says Submitted',
        discard: ['r0', 'r2'],
      },
    });
    expect(slotsHeld(s)).toBe(0);
  });

  it("fails with each attempt's reason when none succeeded (no judge)", () => {
    let s = initial(2);
    for (const i of [0, 1]) s = run(s, i);
    s = step(s, { type: 'ended', index: 0, end: bad('crashed (worker died)'), at: 1 });
    s = step(s, { type: 'ended', index: 1, end: { status: 'timed-out', text: 'timeout' }, at: 2 });
    const a = next(s, 2);
    expect(a.kind).toBe('settle');
    if (a.kind !== 'settle' || a.outcome.kind !== 'none') throw new Error('expected none');
    expect(a.outcome.text).toContain('attempt 1: failed: crashed (worker died)');
    expect(a.outcome.text).toContain('attempt 2: timed-out: timeout');
    expect(a.outcome.discard).toEqual(['r0', 'r1']);
  });

  it('does not follow a judge that picks an attempt that failed; keeps the successes for the person', () => {
    let s = initial(2);
    for (const i of [0, 1]) s = run(s, i);
    s = step(s, { type: 'ended', index: 0, end: bad('x'), at: 1 });
    s = step(s, { type: 'ended', index: 1, end: ok, at: 2 });
    s = step(judging(s), { type: 'judged', verdict: { winner: 0, reasons: '?' } });
    const a = next(s, 3);
    expect(a).toMatchObject({ kind: 'settle', outcome: { kind: 'judge-failed', discard: ['r0'] } });
  });

  it('judgeAfter: once one succeeded and the bound passed, the rest are stopped, then judged', () => {
    let s = initial(3, 1000);
    for (const i of [0, 1]) s = run(s, i);
    s = step(s, { type: 'ended', index: 0, end: ok, at: 500 });
    expect(next(s, 1000)).toEqual({ kind: 'launch', indexes: [2] });
    expect(next(s, 1500)).toEqual({ kind: 'stop', runIds: ['r1'] });
    s = step(s, { type: 'stragglers-stopped' });
    expect(s.attempts[2]).toMatchObject({ kind: 'ended', end: { status: 'cancelled' } }); // never started
    expect(next(s, 1500)).toEqual({ kind: 'wait' });
    s = step(s, { type: 'ended', index: 1, end: { status: 'cancelled', text: 'cancelled' }, at: 1600 });
    expect(next(s, 1600)).toMatchObject({ kind: 'judge', runs: [{ runId: 'r0' }, { runId: 'r1' }] });
  });

  it('cancel: pending attempts end, running ones are stopped, the card settles cancelled', () => {
    let s = initial(3);
    s = run(s, 0);
    s = step(s, { type: 'launching', index: 1 });
    s = step(s, { type: 'cancel' });
    expect(next(s, 0)).toEqual({ kind: 'stop', runIds: ['r0'] });
    expect(() => step(s, { type: 'launching', index: 2 })).toThrow(IllegalAttemptEvent);
    s = step(s, { type: 'launched', index: 1, runId: 'r1' });
    expect(next(s, 0)).toEqual({ kind: 'stop', runIds: ['r0', 'r1'] });
    s = step(s, { type: 'ended', index: 0, end: { status: 'cancelled', text: '' }, at: 1 });
    s = step(s, { type: 'ended', index: 1, end: ok, at: 1 }); // a success that raced the cancel
    expect(next(s, 1)).toEqual({ kind: 'settle', outcome: { kind: 'cancelled', discard: ['r0', 'r1'] } });
  });

  it('refuses events its state does not allow', () => {
    const s = initial(1);
    expect(() => step(s, { type: 'launched', index: 0, runId: 'r' })).toThrow(/not launching/);
    expect(() => step(s, { type: 'launching', index: 3 })).toThrow(/no attempt 4 of 1/);
    expect(() => initial(0)).toThrow(/1 or more/);
    expect(() => judging(s)).toThrow(/judge starts/);
  });
});

describe('attempts rebuilt after a host restart', () => {
  it('runs going are followed, ended ones keep their end, unstarted ones start again, lost ones failed', () => {
    const s = resumed(
      [
        { kind: 'running', runId: 'r0' },
        { kind: 'ended', runId: 'r1', end: ok, at: 5 },
        null,
        { kind: 'lost', runId: 'r3' },
      ],
      1000,
      false,
    );
    expect(s.attempts).toEqual([
      { kind: 'running', runId: 'r0' },
      { kind: 'ended', runId: 'r1', end: ok },
      { kind: 'pending' },
      { kind: 'ended', runId: 'r3', end: { status: 'failed', text: expect.stringMatching(/no record/) } },
    ]);
    expect(s.firstSuccessAt).toBe(5);
    expect(next(s, 10)).toEqual({ kind: 'launch', indexes: [2] });
    expect(slotsHeld(s)).toBe(1);
    // judgeAfter had passed while the host was away: what goes is stopped, what has not started never does
    expect(next(s, 2000)).toEqual({ kind: 'stop', runIds: ['r0'] });
  });

  it('every attempt ended: the judge is next; with its run recorded, the state is judging', () => {
    const runs = [
      { kind: 'ended' as const, runId: 'r0', end: bad('no'), at: 1 },
      { kind: 'ended' as const, runId: 'r1', end: ok, at: 2 },
    ];
    expect(next(resumed(runs, undefined, false), 0)).toEqual({
      kind: 'judge',
      runs: [
        { index: 0, runId: 'r0' },
        { index: 1, runId: 'r1' },
      ],
    });
    const j = resumed(runs, undefined, true);
    expect(j.phase).toEqual({ kind: 'judging' });
    expect(step(j, { type: 'judge-launched', runId: 'j' }).phase).toEqual({ kind: 'judging', runId: 'j' });
    // none succeeded: settled without a judge, whatever was recorded
    expect(next(resumed([runs[0]!], undefined, true), 0)).toMatchObject({ kind: 'settle' });
  });
});
