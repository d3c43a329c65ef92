import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScheduleSpec } from '../protocol/index.ts';
import { ScheduleBook, type LaunchOutcome } from './schedules.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-book-'));
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
  rmSync(dir, { recursive: true, force: true });
});

const HOURLY = { cron: '0 * * * *', timezone: 'UTC', text: 'every hour' } as const;
function spec(name: string, over: Partial<ScheduleSpec> = {}): ScheduleSpec {
  return {
    ...HOURLY,
    missed: 'latest_once',
    overlap: 'queue',
    cardPath: `/p/${name}.md`,
    cardId: name,
    title: name,
    ...over,
  };
}

describe('the schedule book', () => {
  it('a machine that slept: the late timer applies the missed-run policy, not a burst of on-time fires', () => {
    let now = Date.parse('2026-01-05T07:59:00Z');
    const book = new ScheduleBook({
      file: path.join(dir, 'schedules.json'),
      log: pino({ level: 'silent' }),
      now: () => now,
    });
    book.start();
    book.set('/p', [spec('latest'), spec('all', { missed: 'all' }), spec('skip', { missed: 'skip' })]);
    // On time: the 08:00 fire.
    now = Date.parse('2026-01-05T08:00:00Z');
    vi.advanceTimersByTime(60_000);
    expect(book.list().map((s) => s.pending.length)).toEqual([1, 1, 1]);
    // Asleep from 08:00:30 to 11:30: timers stood still; on waking the next tick sees three late fires.
    now = Date.parse('2026-01-05T11:30:00Z');
    vi.advanceTimersByTime(60_000);
    const s = Object.fromEntries(book.list().map((x) => [x.cardId, x]));
    expect(s.latest!.pending.map((t) => t.slice(11, 16))).toEqual(['08:00', '11:00']);
    expect(s.all!.pending.map((t) => t.slice(11, 16))).toEqual(['08:00', '09:00', '10:00', '11:00']);
    expect(s.skip!.pending.map((t) => t.slice(11, 16))).toEqual(['08:00']);
    expect(s.skip!.history.filter((d) => d.decision === 'skipped').map((d) => d.reason)).toEqual([
      'missed: the machine slept or was busy (policy skip)',
      'missed: the machine slept or was busy (policy skip)',
      'missed: the machine slept or was busy (policy skip)',
    ]);
    // Everything is on disk for the next start.
    const saved = JSON.parse(readFileSync(path.join(dir, 'schedules.json'), 'utf8')) as {
      entries: unknown[];
    };
    expect(saved.entries).toHaveLength(3);
    book.stop();
  });

  it('missed: all under overlap: skip keeps every missed fire (they are one catch-up, not an overlap)', () => {
    let now = Date.parse('2026-01-05T07:59:00Z');
    const book = new ScheduleBook({
      file: path.join(dir, 'schedules.json'),
      log: pino({ level: 'silent' }),
      now: () => now,
    });
    book.start();
    book.set('/p', [spec('all', { missed: 'all', overlap: 'skip' })]);
    // Asleep from 07:59:30 to 09:30: the 08:00 and 09:00 fires were missed; policy all runs both.
    now = Date.parse('2026-01-05T09:30:00Z');
    vi.advanceTimersByTime(60_000);
    const [s] = book.list();
    expect(s!.pending.map((t) => t.slice(11, 16))).toEqual(['08:00', '09:00']);
    expect(s!.history.filter((d) => d.decision === 'skipped')).toEqual([]);
    // An on-time fire while those still wait is an overlap, and skip skips it.
    now = Date.parse('2026-01-05T10:00:00Z');
    vi.advanceTimersByTime(60_000);
    expect(book.list()[0]!.pending).toHaveLength(2);
    expect(book.list()[0]!.history.at(-1)!.reason).toMatch(/overlap: an earlier fire still waits/);
    book.stop();
  });

  it('an unreadable book is kept aside, not overwritten, and the book starts empty', () => {
    const file = path.join(dir, 'schedules.json');
    writeFileSync(file, '{"version":1,"entries":[{"spec":');
    const book = new ScheduleBook({
      file,
      log: pino({ level: 'silent' }),
      now: () => Date.parse('2026-01-05T08:00:00Z'),
    });
    book.start();
    expect(book.size).toBe(0);
    const aside = readdirSync(dir).filter((f) => f.startsWith('schedules.json.unreadable-'));
    expect(aside).toHaveLength(1);
    expect(readFileSync(path.join(dir, aside[0]!), 'utf8')).toBe('{"version":1,"entries":[{"spec":');
    book.stop();
  });

  it('hands fires over: a connected board takes them; with none the launcher starts them, waits or says why not', async () => {
    let now = Date.parse('2026-01-05T07:59:00Z');
    const running = new Set<string>();
    const ends = new Map<string, () => void>();
    let outcome: (card: string) => LaunchOutcome = (card) => ({ runId: `run-${card}` });
    const launched: string[] = [];
    const book = new ScheduleBook({
      file: path.join(dir, 'schedules.json'),
      log: pino({ level: 'silent' }),
      now: () => now,
      isRunning: (card) => running.has(card),
      launcher: {
        launch: (_project, card) => {
          const out = outcome(card);
          if ('runId' in out) {
            launched.push(out.runId);
            running.add(card);
          }
          return out;
        },
        whenEnded: (runId) =>
          new Promise<void>((resolve) =>
            ends.set(runId, () => {
              running.delete(`/p/${runId.slice(4)}.md`);
              resolve();
            }),
          ),
      },
    });
    book.start();
    book.set('/p', [spec('a'), spec('b')]);
    book.attach('/p'); // a board is connected: its fires wait for it
    now = Date.parse('2026-01-05T08:00:00Z');
    vi.advanceTimersByTime(60_000);
    await vi.runOnlyPendingTimersAsync();
    expect(launched).toEqual([]);
    expect(book.list().map((x) => x.pending.length)).toEqual([1, 1]);
    // The board goes away: the supervisor starts what it left, b must wait for a cap.
    outcome = (card) =>
      card.endsWith('b.md') ? { wait: 'flow "shell" is at its cap (1/1)' } : { runId: 'run-a' };
    book.detach('/p');
    let s = Object.fromEntries(book.list().map((x) => [x.cardId, x]));
    expect(launched).toEqual(['run-a']);
    expect(s.a!.pending).toEqual([]);
    expect(s.a!.started).toEqual([{ fireAt: '2026-01-05T08:00:00.000Z', runId: 'run-a' }]);
    expect(s.a!.history.at(-1)).toMatchObject({ decision: 'started', runId: 'run-a' });
    expect(s.b!.pending).toHaveLength(1);
    expect(s.b!.waiting).toBe('flow "shell" is at its cap (1/1)');
    // a's run ends: b is tried again, and refused (its card is broken): recorded as skipped, saying why.
    outcome = () => ({ refuse: 'cards/b.md: invalid card: a card needs a flow' });
    ends.get('run-a')!();
    await vi.runOnlyPendingTimersAsync();
    s = Object.fromEntries(book.list().map((x) => [x.cardId, x]));
    expect(s.b!.pending).toEqual([]);
    expect(s.b!.history.at(-1)!.reason).toBe(
      'no board was open and the supervisor could not start the run: cards/b.md: invalid card: a card needs a flow',
    );
    // A board opens again and claims the run (once); the next fire is the board's.
    book.attach('/p');
    expect(book.claim('/p/a.md', 'run-a')).toBe(true);
    expect(book.claim('/p/a.md', 'run-a')).toBe(false);
    expect(book.list()[0]!.started).toEqual([]);
    now = Date.parse('2026-01-05T09:00:00Z');
    vi.advanceTimersByTime(60_000);
    await vi.runOnlyPendingTimersAsync();
    expect(launched).toEqual(['run-a']);
    expect(book.list().map((x) => x.pending.length)).toEqual([1, 1]);
    book.stop();
  });
  it('a card saved just before its fire and registered just after it fires once (decision 111)', () => {
    let now = Date.parse('2026-01-05T07:59:00Z');
    const saved = new Map<string, number>();
    const fired: string[] = [];
    const book = new ScheduleBook({
      file: path.join(dir, 'schedules.json'),
      log: pino({ level: 'silent' }),
      now: () => now,
      savedAt: (card) => saved.get(card),
    });
    book.on('fired', (f) => fired.push(`${path.basename(f.cardPath)} ${f.fireAt.slice(11, 19)}`));
    const daily = { cron: '0 8 * * *', text: 'every day at 08:00', fromSave: true };
    book.start();
    book.set('/p', [spec('a', daily)]);
    book.attach('/p'); // the board is connected (serveSchedules attaches after its first set)
    // b is saved at 07:59:59.5 (its schedule new), the board reads it and registers it at 08:00:00.4
    saved.set('/p/b.md', Date.parse('2026-01-05T07:59:59.500Z'));
    now = Date.parse('2026-01-05T08:00:00.400Z');
    vi.advanceTimersByTime(60_000);
    expect(fired).toEqual(['a.md 08:00:00']);
    // d too, but it waited for a person's Confirm (no fromSave): the Confirm does not run that fire
    saved.set('/p/d.md', Date.parse('2026-01-05T07:59:59.500Z'));
    const d = spec('d', { ...daily, fromSave: undefined });
    book.set('/p', [spec('a', daily), spec('b', daily), d]);
    vi.advanceTimersByTime(0);
    expect(fired).toEqual(['a.md 08:00:00', 'b.md 08:00:00']);
    // once: registered again (unchanged) and later ticks fire nothing more
    book.set('/p', [spec('a', daily), spec('b', daily), d]);
    now = Date.parse('2026-01-05T08:00:30Z');
    vi.advanceTimersByTime(60_000);
    expect(fired).toHaveLength(2);
    // a's schedule changed in a file saved before 08:00 (still firing at 08:00): that fire was a's already
    saved.set('/p/a.md', Date.parse('2026-01-05T07:59:59.900Z'));
    book.set('/p', [spec('a', { ...daily, cron: '0 8 * * 1-5' }), spec('b', daily), d]);
    vi.advanceTimersByTime(60_000);
    expect(fired).toHaveLength(2);
    const s = Object.fromEntries(book.list().map((x) => [x.cardId, x]));
    expect(s.b!.pending).toEqual(['2026-01-05T08:00:00.000Z']);
    expect(s.a!.pending).toEqual(['2026-01-05T08:00:00.000Z']);
    expect(s.d!.pending).toEqual([]);
    // A board that opens after the save registers from then on: nothing before it is the card's fire.
    book.detach('/p');
    saved.set('/p/c.md', Date.parse('2026-01-05T07:59:59.500Z'));
    book.set('/p', [spec('a', { ...daily, cron: '0 8 * * 1-5' }), spec('b', daily), d, spec('c', daily)]);
    book.attach('/p');
    vi.advanceTimersByTime(60_000);
    expect(fired).toHaveLength(2);
    book.stop();
  });
});
