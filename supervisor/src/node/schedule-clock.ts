/**
 * The schedule book's clock. Date.now, unless RUNBOARD_SCHEDULE_CLOCK (tests) says otherwise:
 * - an ISO time starts the clock at that instant, at real speed (`scheduleClock`);
 * - an absolute path names a file holding an ISO time: the clock runs at real speed from that time, and
 *   another time written into the file moves it there at once (`onMoved`: the book looks again then).
 *   A test puts the clock well before a fire, does its setup with no window of real time to meet, and
 *   moves the clock onto the fire when the state it wants is there.
 */
import { readFileSync, statSync, watch } from 'node:fs';
import path from 'node:path';
import { scheduleClock } from '@runboard/project/schedule';

export interface ScheduleClock {
  now: () => number;
  /** What the clock said at a real instant (`Date.now()` then): when a card was saved, on this clock. */
  at: (realMs: number) => number;
  /** Called each time the clock is moved (a file clock only). */
  onMoved(cb: () => void): void;
}

export function scheduleClockOf(value: string | undefined): ScheduleClock {
  if (!value?.startsWith('/')) {
    const now = scheduleClock(value);
    const offset = now === Date.now ? 0 : now() - Date.now();
    return { now, at: (realMs) => realMs + offset, onMoved: () => undefined };
  }
  const file = value;
  const read = (): number | undefined => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch {
      return undefined;
    }
    const t = Date.parse(text);
    return Number.isNaN(t) ? undefined : t;
  };
  let at = read();
  if (at === undefined)
    throw new Error(
      `RUNBOARD_SCHEDULE_CLOCK: ${file} does not hold an ISO time (write one, e.g. 2026-01-05T07:00:00Z)`,
    );
  let since = Date.now();
  /** Each stretch the clock ran at real speed: from real instant `since`, at clock time `at`. */
  const stretches = [{ since, at }];
  const moved: (() => void)[] = [];
  // The folder, not the file: a clock written by a rename is seen too. A half-written time is read
  // at the write that completes it.
  const watcher = watch(path.dirname(file), (_event, name) => {
    if (name !== null && name !== path.basename(file)) return;
    const t = read();
    if (t === undefined || t === at) return;
    at = t;
    since = Date.now();
    stretches.push({ since, at });
    for (const cb of moved) cb();
  });
  watcher.unref();
  return {
    now: () => at! + (Date.now() - since),
    at: (realMs) => {
      const s = stretches.findLast((x) => x.since <= realMs) ?? stretches[0]!;
      return s.at + (realMs - s.since);
    },
    onMoved: (cb) => void moved.push(cb),
  };
}

/**
 * When the card file was last changed (its ctime: a writer cannot set it back, unlike mtime), on the
 * schedule clock; undefined when it cannot be looked at. The schedule book's `savedAt` (schedules.ts).
 */
export function cardSavedAt(clock: ScheduleClock): (cardPath: string) => number | undefined {
  return (cardPath) => {
    try {
      return clock.at(statSync(cardPath).ctimeMs);
    } catch {
      return undefined;
    }
  };
}
