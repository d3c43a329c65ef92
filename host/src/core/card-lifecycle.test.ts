import { describe, expect, it } from 'vitest';
import type { PermissionAsk } from '@runboard/supervisor/protocol';
import {
  CARD_TRANSITIONS,
  cardTransition,
  failure,
  IllegalCardTransition,
  runOutcome,
  type CardChange,
  type OutcomeContext,
  type RunEnd,
} from './card-lifecycle.ts';
import { CARD_STATUSES, type CardStatus } from './project.ts';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const RANKS: Record<CardStatus, number> = {
  backlog: -1,
  queued: -2,
  running: -3,
  'needs-input': -4,
  done: -5,
  failed: -6,
};

function ctx(over: Partial<OutcomeContext> = {}): OutcomeContext {
  return {
    from: 'running',
    failures: 0,
    backoff: { retries: 2, base: 1000, max: 60_000 },
    now: NOW,
    topRank: (s) => RANKS[s],
    failureText: () => 'failed (finished: exit code 1): sh: 1: frobnicate: not found',
    ...over,
  };
}

function end(status: RunEnd['status'], over: Partial<RunEnd> = {}): RunEnd {
  return { runId: 'r-1', status, summary: '', termination: null, ...over };
}

const ask: PermissionAsk = {
  id: 'a1',
  kind: 'write',
  path: '/home/me/notes',
  evidence: 'touch: cannot touch',
  source: 'sandbox',
};

describe('card transitions', () => {
  it('allows what the lifecycle declares and refuses the rest with a clear error', () => {
    expect(cardTransition('started', 'queued', 'running')).toBe('running');
    expect(cardTransition('created', undefined, 'backlog')).toBe('backlog');
    expect(cardTransition('asks-allowed', 'needs-input', 'queued')).toBe('queued');
    expect(cardTransition('ask-denied', 'needs-input', 'failed')).toBe('failed');
    expect(cardTransition('not-running', 'running', 'failed')).toBe('failed');
    expect(cardTransition('lost-run', 'running', 'queued')).toBe('queued');
    expect(() => cardTransition('started', 'backlog', 'running')).toThrow(IllegalCardTransition);
    expect(() => cardTransition('started', 'backlog', 'running')).toThrow(
      /illegal card transition backlog → running on "started": it starts only from queued/,
    );
    expect(() => cardTransition('run-ended', 'running', 'running')).toThrow(
      /it goes only to done, needs-input/,
    );
    expect(() => cardTransition('asks-allowed', 'done', 'queued')).toThrow(/starts only from needs-input/);
    expect(() => cardTransition('created', 'backlog', 'backlog')).toThrow(/starts only from \(no status\)/);
    expect(() => cardTransition('nonsense' as CardChange, 'backlog', 'queued')).toThrow(/no such change/);
  });

  it('a person moves within moveRefusal’s rules', () => {
    expect(cardTransition('moved', 'backlog', 'queued')).toBe('queued');
    expect(cardTransition('moved', 'done', 'failed')).toBe('failed');
    expect(cardTransition('moved', 'running', 'running')).toBe('running');
    expect(() => cardTransition('moved', 'backlog', 'done')).toThrow(/reaches Done when its run ends/);
    expect(() => cardTransition('moved', 'queued', 'running')).toThrow(/enter Running when the scheduler/);
    expect(() => cardTransition('moved', 'running', 'backlog')).toThrow(/locked/);
  });

  it('every change names only real statuses, and a run’s end is taken wherever the card is', () => {
    for (const t of Object.values(CARD_TRANSITIONS))
      for (const s of [...t.from, ...t.to]) if (s !== undefined) expect(CARD_STATUSES).toContain(s);
    for (const from of CARD_STATUSES) {
      expect(cardTransition('run-ended', from, 'done')).toBe('done');
      expect(cardTransition('followed', from, 'running')).toBe('running');
      expect(cardTransition('launch-failed', from, 'queued')).toBe('queued');
    }
  });
});

describe('run outcome → card', () => {
  it('succeeded: to the top of Done, failures and backoff cleared', () => {
    expect(runOutcome(end('succeeded'), ctx({ failures: 2 }))).toEqual({
      patch: {
        status: 'done',
        rank: RANKS.done,
        lastRun: 'r-1',
        failures: undefined,
        nextTryAt: undefined,
        lastError: undefined,
      },
    });
  });

  it('succeeded but not kept (a reflect workflow that is not valid): a failure, retried', () => {
    const w = runOutcome(end('succeeded'), ctx({ notKept: 'the workflow reflect made was not saved:\n- x' }));
    expect(w.patch).toEqual({
      status: 'queued',
      rank: undefined,
      failures: 1,
      nextTryAt: new Date(NOW + 1000).toISOString(),
      lastError: 'the workflow reflect made was not saved:\n- x',
      lastRun: 'r-1',
    });
  });

  it('needs-input with permission asks: the asks as needs, no questions', () => {
    const w = runOutcome(end('needs-input', { asks: [ask], questions: ['ignored?'] }), ctx());
    expect(w.patch).toMatchObject({ status: 'needs-input', rank: RANKS['needs-input'], lastRun: 'r-1' });
    expect(w.patch.needs).toBe('your permission to write in /home/me/notes');
    expect(w.questions).toEqual([]);
  });

  it('needs-input with questions, or only a summary, or nothing', () => {
    const q = runOutcome(end('needs-input', { questions: ['Which branch?'], summary: 's' }), ctx());
    expect(q.questions).toEqual(['Which branch?']);
    expect(q.patch).not.toHaveProperty('needs');
    expect(q.patch).toMatchObject({ failures: undefined, nextTryAt: undefined, lastError: undefined });
    expect(runOutcome(end('needs-input', { summary: 'What colour?' }), ctx()).questions).toEqual([
      'What colour?',
    ]);
    expect(runOutcome(end('needs-input'), ctx()).questions).toEqual([]);
  });

  it('failed for a missing key: waits in Queued, no failure counted, when the flow names a provider', () => {
    const r = end('failed', { termination: { reason: 'missing-key', detail: 'no key for openai' } });
    expect(runOutcome(r, ctx({ waitsForKey: true, failures: 1 }))).toEqual({
      patch: { status: 'queued', lastRun: 'r-1', lastError: undefined },
    });
    // without a provider to wait for, an ordinary failure
    expect(runOutcome(r, ctx({ waitsForKey: false, failures: 1 })).patch).toMatchObject({
      status: 'queued',
      failures: 2,
    });
  });

  it('failed on its token or cost budget: to Failed at once (a retry would spend it again), saying so', () => {
    const r = end('failed', { termination: { reason: 'budget', detail: 'token budget spent' } });
    expect(runOutcome(r, ctx({ failures: 0 })).patch).toMatchObject({ status: 'failed', failures: 3 });
  });

  it('failed: queued again after backoff while retries last, then to the top of Failed', () => {
    const r = end('failed', { termination: { reason: 'finished', detail: 'exit code 1' } });
    const retry = runOutcome(r, ctx({ failures: 1 }));
    expect(retry.patch).toEqual({
      status: 'queued',
      rank: undefined,
      failures: 2,
      nextTryAt: new Date(NOW + 2000).toISOString(),
      lastError: 'failed (finished: exit code 1): sh: 1: frobnicate: not found',
      lastRun: 'r-1',
    });
    const spent = runOutcome(r, ctx({ failures: 2 }));
    expect(spent.patch).toMatchObject({ status: 'failed', rank: RANKS.failed, failures: 3, lastRun: 'r-1' });
  });

  it('timed-out: a failure like any other', () => {
    const w = runOutcome(
      end('timed-out', { termination: { reason: 'timeout', detail: '10m' } }),
      ctx({ failures: 5, failureText: () => 'timed-out (timeout: 10m)' }),
    );
    expect(w.patch).toMatchObject({
      status: 'failed',
      failures: 6,
      lastError: 'timed-out (timeout: 10m)',
    });
  });

  it('cancelled: to the top of Backlog, saying so', () => {
    expect(runOutcome(end('cancelled'), ctx({ failures: 1 }))).toEqual({
      patch: { status: 'backlog', rank: RANKS.backlog, lastError: 'cancelled' },
    });
  });

  it('a failure text is read only for a failure, and cut to 2000 characters', () => {
    let asked = 0;
    const text = (): string => {
      asked++;
      return 'x'.repeat(5000);
    };
    runOutcome(end('succeeded'), ctx({ failureText: text }));
    runOutcome(end('cancelled'), ctx({ failureText: text }));
    expect(asked).toBe(0);
    const w = runOutcome(end('failed'), ctx({ failureText: text }));
    expect(asked).toBe(1);
    expect(String(w.patch.lastError)).toHaveLength(2000);
  });

  it('a launch that failed: queued or failed, without a run id', () => {
    const c = { ...ctx(), change: 'launch-failed' as const, from: 'queued' as const };
    expect(failure(c, 1, 'refused: no such flow').patch).toEqual({
      status: 'queued',
      rank: undefined,
      failures: 1,
      nextTryAt: new Date(NOW + 1000).toISOString(),
      lastError: 'refused: no such flow',
    });
    expect(failure(c, 3, 'lost the run').patch).toMatchObject({ status: 'failed', rank: RANKS.failed });
  });
});
