import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { scheduleClockOf } from './schedule-clock.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-clock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('a file clock runs from the time in its file, and moves when another is written (saying so)', async () => {
  const file = path.join(dir, 'clock');
  writeFileSync(file, '2026-01-05T07:00:00Z\n');
  const clock = scheduleClockOf(file);
  const t = clock.now() - Date.parse('2026-01-05T07:00:00Z');
  expect(t).toBeGreaterThanOrEqual(0);
  expect(t).toBeLessThan(60 * 60_000); // it runs at real speed from 07:00
  const moved = new Promise<void>((resolve) => clock.onMoved(resolve));
  // An instant before the move: the move's own instant is taken when the watcher sees the write, which can
  // be the same millisecond as a Date.now() after it (CI); so the write waits for the next millisecond.
  const before = Date.now();
  while (Date.now() === before);
  writeFileSync(file, '2026-01-05T08:00:00Z');
  await moved;
  expect(clock.now()).toBeGreaterThanOrEqual(Date.parse('2026-01-05T08:00:00Z'));
  expect(clock.now()).toBeLessThan(Date.parse('2026-01-05T09:00:00Z'));
  // what it said at an instant before the move is the 07:00 stretch's time, not the new one's
  expect(clock.at(before)).toBeLessThan(Date.parse('2026-01-05T08:00:00Z'));
  expect(clock.at(before)).toBeGreaterThanOrEqual(Date.parse('2026-01-05T07:00:00Z'));
  expect(clock.at(Date.now())).toBeGreaterThanOrEqual(Date.parse('2026-01-05T08:00:00Z'));
});

it('an ISO time starts the clock there; a file without one is refused, saying what to write', () => {
  expect(
    Math.abs(scheduleClockOf('2026-01-05T07:00:00Z').now() - Date.parse('2026-01-05T07:00:00Z')),
  ).toBeLessThan(60 * 60_000);
  const file = path.join(dir, 'clock');
  writeFileSync(file, 'soon');
  expect(() => scheduleClockOf(file)).toThrow(/does not hold an ISO time \(write one/);
  expect(scheduleClockOf(undefined).now).toBe(Date.now);
});
