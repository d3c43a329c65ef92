import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ScheduleSpec } from '../protocol/index.ts';
import { ScheduleBook } from './schedules.ts';

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
});
