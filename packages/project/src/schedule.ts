/**
 * Schedules: a card's `schedule:` front matter, the deterministic plain-language parser that turns
 * "every weekday at 9:00" into cron, and fire times in an IANA time zone. Pure (no I/O, no clock of
 * its own): the supervisor fires with it, the host shows next fire times with it, the same way.
 *
 * All calendar work (time zones, daylight saving, month lengths) is croner's; this file only maps
 * words to cron fields. DST, as croner does it (Vixie cron's rule): a fixed time that does not exist
 * on a spring-forward day fires once at the first valid time after the gap; a time that occurs twice
 * on a fall-back day fires once, at its first occurrence.
 */
import { Cron } from 'croner';

export const MISSED_POLICIES = ['skip', 'latest_once', 'all'] as const;
export type MissedPolicy = (typeof MISSED_POLICIES)[number];
export const OVERLAP_POLICIES = ['skip', 'queue'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];
/** Policy `all` queues at most this many missed fires; older ones are recorded as skipped. */
export const MAX_MISSED_RUNS = 10;

/** A schedule ready to fire: cron in a zone, and how to treat missed and overlapping fires. */
export interface ResolvedSchedule {
  cron: string;
  timezone: string;
  /** What the person wrote (plain language or cron). */
  source: string;
  /** The schedule said back in words: the parser's canonical phrase, or the cron expression. */
  text: string;
  missed: MissedPolicy;
  overlap: OverlapPolicy;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const EXAMPLES = '"every weekday at 9:00", "every 2 hours", "on the first Monday of the month at 8"';

// ─── plain language → cron ─────────────────────────────────────────────────────────────────────────

const DAYS: Record<string, number> = {
  sunday: 0,
  sun: 0,
  monday: 1,
  mon: 1,
  tuesday: 2,
  tue: 2,
  tues: 2,
  wednesday: 3,
  wed: 3,
  thursday: 4,
  thu: 4,
  thur: 4,
  thurs: 4,
  friday: 5,
  fri: 5,
  saturday: 6,
  sat: 6,
};
const DAY_NAMES = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const ORDINALS: Record<string, number> = {
  first: 1,
  second: 2,
  third: 3,
  fourth: 4,
  '1st': 1,
  '2nd': 2,
  '3rd': 3,
  '4th': 4,
};
const ORDINAL_NAMES = ['', 'first', 'second', 'third', 'fourth'];

class Refusal extends Error {}

const pad = (n: number): string => String(n).padStart(2, '0');

interface Time {
  hour: number;
  minute: number;
}

/** "9", "09:30", "9am", "9:30 pm", "noon", "midnight", "17h". */
function parseTime(s: string): Time {
  const t = s.trim();
  if (t === 'noon') return { hour: 12, minute: 0 };
  if (t === 'midnight') return { hour: 0, minute: 0 };
  const m = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.|h)?$/.exec(t);
  if (!m) throw new Refusal(`"${t}" is not a time of day: write e.g. 9, 9:30, 9am or 17:00`);
  let hour = Number(m[1]);
  const minute = m[2] === undefined ? 0 : Number(m[2]);
  const suffix = m[3]?.replace(/\./g, '');
  if (minute > 59) throw new Refusal(`"${t}": minute ${minute} is not on a clock (0-59)`);
  if (suffix === 'am' || suffix === 'pm') {
    if (hour < 1 || hour > 12)
      throw new Refusal(`"${t}": with am/pm the hour is 1-12 (or write 24-hour time such as 17:00)`);
    hour = (hour % 12) + (suffix === 'pm' ? 12 : 0);
  } else if (hour > 23) {
    throw new Refusal(`"${t}": hour ${hour} is not on a clock (0-23)`);
  }
  return { hour, minute };
}

/** "9:00", "9 and 17", "9:00, 13:00 and 17:00": one minute shared by every hour (a cron limit). */
function parseTimes(s: string): { minute: number; hours: number[]; text: string } {
  const parts = s.split(/\s*(?:,|\band\b)\s*/).filter(Boolean);
  const times = parts.map(parseTime);
  const minute = times[0]!.minute;
  if (times.some((t) => t.minute !== minute))
    throw new Refusal(
      `"${s}": one schedule fires at one minute past each of its hours (cron); times with different minutes need a card each`,
    );
  const hours = [...new Set(times.map((t) => t.hour))].sort((a, b) => a - b);
  return { minute, hours, text: hours.map((h) => `${pad(h)}:${pad(minute)}`).join(', ') };
}

function parseDays(s: string): number[] {
  const words = s.split(/\s*(?:,|\band\b|\bor\b)\s*/).filter(Boolean);
  if (!words.length) throw new Refusal('name at least one day');
  return [
    ...new Set(
      words.map((w) => {
        const d = DAYS[w.replace(/s$/, '')] ?? DAYS[w];
        if (d === undefined) throw new Refusal(`"${w}" is not a day of the week`);
        return d;
      }),
    ),
  ].sort((a, b) => a - b);
}

function ordinalDay(s: string): number {
  const m = /^(\d{1,2})(?:st|nd|rd|th)?$/.exec(s);
  if (!m) throw new Refusal(`"${s}" is not a day of the month: write e.g. "the 1st" or "the 15th"`);
  const d = Number(m[1]);
  if (d < 1 || d > 31) throw new Refusal(`day ${d} does not exist in any month (1-31)`);
  return d;
}

const DIVISORS_60 = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30];
const DIVISORS_24 = [1, 2, 3, 4, 6, 8, 12];

function every(n: number, unit: 'minute' | 'hour', minute: number): { cron: string; text: string } {
  const divisors = unit === 'minute' ? DIVISORS_60 : DIVISORS_24;
  const per = unit === 'minute' ? 'hour' : 'day';
  if (n < 1) throw new Refusal(`every ${n} ${unit}s: the interval is at least 1`);
  if (!divisors.includes(n))
    throw new Refusal(
      `every ${n} ${unit}s cannot repeat evenly: cron restarts its count each ${per}; use one of ${divisors.join(', ')}`,
    );
  if (unit === 'minute')
    return n === 1
      ? { cron: '* * * * *', text: 'every minute' }
      : { cron: `*/${n} * * * *`, text: `every ${n} minutes` };
  const at = minute ? ` at minute ${minute}` : '';
  return n === 1
    ? { cron: `${minute} * * * *`, text: `every hour${at}` }
    : { cron: `${minute} */${n} * * *`, text: `every ${n} hours${at}` };
}

const NUMBER_WORDS: Record<string, number> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  ten: 10,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
};
const num = (s: string): number => NUMBER_WORDS[s] ?? Number(s);

/** Turns one plain-language phrase into cron; throws a Refusal that says why it cannot. */
function phraseToCron(input: string): { cron: string; text: string } {
  // Lower case, single spaces, no trailing full stop, "every day" == "daily" and friends.
  const s = input
    .toLowerCase()
    .trim()
    .replace(/\s+/g, ' ')
    .replace(/[.!]$/, '')
    .replace(/^(run |fire )/, '');
  if (!s) throw new Refusal(`the schedule is empty: write e.g. ${EXAMPLES}, or a cron expression`);
  if (/\b(tomorrow|today|tonight|next|once|in \d+)\b/.test(s))
    throw new Refusal(
      `"${input}" happens once; a schedule repeats (write e.g. "every day at 9:00"), or queue the card by hand`,
    );
  if (/\bseconds?\b/.test(s)) throw new Refusal('schedules are at most once a minute (no seconds)');

  let m: RegExpExecArray | null;
  // every minute | every N minutes | every hour [at minute M | at :MM] | every N hours [at minute M]
  if ((m = /^every (?:(\w+) )?(minute|hour)s?(?: at (?:minute |:)(\d{1,2}))?$/.exec(s))) {
    const n = m[1] === undefined ? 1 : num(m[1]);
    if (Number.isNaN(n)) throw new Refusal(`"${m[1]}" is not a number`);
    const minute = m[3] === undefined ? 0 : Number(m[3]);
    if (minute > 59) throw new Refusal(`minute ${minute} is not on a clock (0-59)`);
    if (m[2] === 'minute' && m[3] !== undefined) throw new Refusal('"every minute" has no "at"');
    return every(n, m[2] as 'minute' | 'hour', minute);
  }

  // The forms below all end with "at TIME"; a missing time is a refusal that says so.
  const at = /^(.*?) at (.+)$/.exec(s);
  const head = at ? at[1]! : s;
  const needTime = (): { minute: number; hours: number[]; text: string } => {
    if (!at) throw new Refusal(`"${input}": say at what time, e.g. "${s} at 9:00"`);
    return parseTimes(at[2]!);
  };

  // every day | daily | each day
  if (/^(every day|daily|each day|every morning|every evening)$/.test(head)) {
    const t = needTime();
    return { cron: `${t.minute} ${t.hours.join(',')} * * *`, text: `every day at ${t.text}` };
  }
  // every weekday | on weekdays | every weekend day
  if (
    /^(every weekday|weekdays|on weekdays|every working day|mondays? to fridays?|monday through friday)$/.test(
      head,
    )
  ) {
    const t = needTime();
    return { cron: `${t.minute} ${t.hours.join(',')} * * 1-5`, text: `every weekday at ${t.text}` };
  }
  if (/^(every weekend|every weekend day|on weekends|weekends)$/.test(head)) {
    const t = needTime();
    return {
      cron: `${t.minute} ${t.hours.join(',')} * * 0,6`,
      text: `every Saturday and Sunday at ${t.text}`,
    };
  }
  // on the first|second|third|fourth|last <weekday> of the month; on the last day | the 15th day of the month
  const weekdayOf = (w: string): number | undefined => DAYS[w.replace(/s$/, '')] ?? DAYS[w];
  if (
    (m = /^(?:on )?(?:the )?(\w+) (\w+) (?:of|in) (?:the|every|each) month$/.exec(head)) &&
    (m[2] === 'day' || weekdayOf(m[2]!) !== undefined)
  ) {
    const which = m[1]!;
    const what = m[2]!;
    if (what === 'day') {
      const t = needTime();
      if (which === 'last')
        return {
          cron: `${t.minute} ${t.hours.join(',')} L * *`,
          text: `on the last day of every month at ${t.text}`,
        };
      const d = ordinalDay(which === 'first' ? '1' : which);
      return {
        cron: `${t.minute} ${t.hours.join(',')} ${d} * *`,
        text: `on day ${d} of every month at ${t.text}`,
      };
    }
    const day = weekdayOf(what)!;
    if (which !== 'last' && !(which in ORDINALS))
      throw new Refusal(
        `"the ${which} ${what}": not every month has a fifth of each weekday; use first, second, third, fourth or last`,
      );
    const t = needTime();
    const nth = which === 'last' ? 'L' : String(ORDINALS[which]);
    const nthText = which === 'last' ? 'last' : ORDINAL_NAMES[ORDINALS[which]!]!;
    return {
      cron: `${t.minute} ${t.hours.join(',')} * * ${day}#${nth}`,
      text: `on the ${nthText} ${DAY_NAMES[day]} of every month at ${t.text}`,
    };
  }
  if (/^every other\b/.test(head))
    throw new Refusal(
      '"every other …" cannot be said in cron (its counts restart each week, month or year); name the days instead, e.g. "every Monday and Thursday"',
    );
  // on the 15th of every month | monthly on the 1st | every month on the 1st
  if (
    (m = /^(?:monthly on|every month on|on) (?:day |the )?(\w+)(?: of (?:the|every|each) month)?$/.exec(
      head,
    )) &&
    /^\d/.test(m[1]!)
  ) {
    const d = ordinalDay(m[1]!);
    const t = needTime();
    return {
      cron: `${t.minute} ${t.hours.join(',')} ${d} * *`,
      text: `on day ${d} of every month at ${t.text}`,
    };
  }
  if (/^(monthly|every month)$/.test(head))
    throw new Refusal(`"${input}": say which day, e.g. "on the 1st of every month at 9:00"`);
  // every monday | every monday and thursday | on fridays | weekly on friday
  if ((m = /^(?:every|on|each|weekly on) (.+)$/.exec(head))) {
    const days = parseDays(m[1]!);
    const t = needTime();
    return {
      cron: `${t.minute} ${t.hours.join(',')} * * ${days.join(',')}`,
      text: `every ${days.map((d) => DAY_NAMES[d]).join(', ')} at ${t.text}`,
    };
  }
  throw new Refusal(`cannot read "${input}" as a schedule: write e.g. ${EXAMPLES}, or a cron expression`);
}

/** Five space-separated cron fields, as a person types them (the plain-language parser never makes these). */
const CRON_SHAPE = /^\s*[\d*?LW#/,A-Za-z-]+(\s+[\d*?LW#/,A-Za-z-]+){4,6}\s*$/;
const looksLikeCron = (s: string): boolean => CRON_SHAPE.test(s) && /[\d*]/.test(s.split(/\s+/)[0] ?? '');

/** Is this an IANA time zone name the runtime knows? */
export function validTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return zone.length > 0;
  } catch {
    return false;
  }
}

/** Checks a cron expression in a zone; the error says what is wrong. */
export function checkCron(cron: string, timezone: string): string | null {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5)
    return `"${cron}" has ${fields.length} fields; a schedule's cron has 5 (minute hour day-of-month month day-of-week)`;
  if (!validTimeZone(timezone))
    return `"${timezone}" is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)`;
  try {
    const next = new Cron(cron, { timezone, paused: true }).nextRun();
    if (!next) return `"${cron}" never fires (no date matches it)`;
  } catch (err) {
    return `"${cron}" is not a valid cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}`;
  }
  return null;
}

/**
 * Plain language (or a cron expression) to cron. Deterministic: the same words always give the same
 * cron, so the card may keep what the person wrote and every reader derives the same schedule.
 */
export function parseSchedulePhrase(input: string): Parsed<{ cron: string; text: string }> {
  if (looksLikeCron(input)) {
    const cron = input.trim().split(/\s+/).join(' ');
    const err = checkCron(cron, 'UTC');
    return err ? { ok: false, error: err } : { ok: true, value: { cron, text: `cron ${cron}` } };
  }
  try {
    const value = phraseToCron(input);
    const err = checkCron(value.cron, 'UTC');
    return err ? { ok: false, error: err } : { ok: true, value };
  } catch (err) {
    if (err instanceof Refusal) return { ok: false, error: err.message };
    throw err;
  }
}

/**
 * A card's `schedule:` front matter: a string (plain language or cron), or an object
 * `{ cron | text, timezone?, missed?, overlap? }`. `defaultZone` is the zone of the person's machine.
 */
export function resolveSchedule(raw: unknown, defaultZone: string): Parsed<ResolvedSchedule> {
  const obj: Record<string, unknown> =
    typeof raw === 'string'
      ? { text: raw }
      : raw && typeof raw === 'object' && !Array.isArray(raw)
        ? (raw as Record<string, unknown>)
        : {};
  if (typeof raw !== 'string' && obj === raw && Object.keys(obj).length === 0)
    return {
      ok: false,
      error: 'schedule: write a phrase such as "every weekday at 9:00", or { cron, timezone }',
    };
  if (typeof raw !== 'string' && !(raw && typeof raw === 'object' && !Array.isArray(raw)))
    return {
      ok: false,
      error: `schedule: expected a phrase or { cron, timezone } (got ${JSON.stringify(raw)})`,
    };
  const known = ['cron', 'text', 'timezone', 'missed', 'overlap'];
  const unknown = Object.keys(obj).filter((k) => !known.includes(k));
  if (unknown.length)
    return { ok: false, error: `schedule: unknown field ${unknown.join(', ')} (known: ${known.join(', ')})` };
  if ((obj.cron === undefined) === (obj.text === undefined))
    return {
      ok: false,
      error: 'schedule: give either `cron` (with `timezone`) or `text` (plain language), one of them',
    };
  const source = String(obj.cron ?? obj.text);
  const timezone = obj.timezone === undefined ? defaultZone : String(obj.timezone);
  if (!validTimeZone(timezone))
    return {
      ok: false,
      error: `schedule: "${timezone}" is not an IANA time zone (e.g. Europe/Berlin, America/New_York, UTC)`,
    };
  const missed = obj.missed ?? 'latest_once';
  if (!MISSED_POLICIES.includes(missed as MissedPolicy))
    return {
      ok: false,
      error: `schedule.missed: ${JSON.stringify(missed)} is not one of ${MISSED_POLICIES.join(', ')}`,
    };
  const overlap = obj.overlap ?? 'skip';
  if (!OVERLAP_POLICIES.includes(overlap as OverlapPolicy))
    return {
      ok: false,
      error: `schedule.overlap: ${JSON.stringify(overlap)} is not one of ${OVERLAP_POLICIES.join(', ')}`,
    };
  let cron: string;
  let text: string;
  if (obj.cron !== undefined) {
    cron = source.trim().split(/\s+/).join(' ');
    const err = checkCron(cron, timezone);
    if (err) return { ok: false, error: `schedule.cron: ${err}` };
    text = `cron ${cron}`;
  } else {
    const p = parseSchedulePhrase(source);
    if (!p.ok) return { ok: false, error: `schedule: ${p.error}` };
    ({ cron, text } = p.value);
  }
  return {
    ok: true,
    value: {
      cron,
      timezone,
      source,
      text: `${text} (${timezone})`,
      missed: missed as MissedPolicy,
      overlap: overlap as OverlapPolicy,
    },
  };
}

/**
 * The clock of schedules (the supervisor's book, the board's next fire times). RUNBOARD_SCHEDULE_CLOCK (an ISO time) starts it at that instant and lets it
 * run at real speed: tests put a real supervisor (and board) before a fire or a day later, across restarts.
 */
export function scheduleClock(start: string | undefined): () => number {
  if (!start) return Date.now;
  const t0 = Date.parse(start);
  if (Number.isNaN(t0)) throw new Error(`RUNBOARD_SCHEDULE_CLOCK: "${start}" is not an ISO time`);
  const began = Date.now();
  return () => t0 + (Date.now() - began);
}

// ─── fire times ───────────────────────────────────────────────────────────────────────────────────

const crons = new Map<string, Cron>();
/** One parsed pattern per (cron, zone), kept: a thousand cards share a handful of patterns. */
function cronOf(cron: string, timezone: string): Cron {
  const key = `${timezone} ${cron}`;
  let c = crons.get(key);
  if (!c) {
    if (crons.size > 10_000) crons.clear();
    c = new Cron(cron, { timezone, paused: true });
    crons.set(key, c);
  }
  return c;
}

/** The first fire strictly after `after` (ms since the epoch), or null when it never fires again. */
export function nextFire(cron: string, timezone: string, after: number): number | null {
  return cronOf(cron, timezone).nextRun(new Date(after))?.getTime() ?? null;
}

/** The next `n` fires strictly after `after`. */
export function nextFires(cron: string, timezone: string, after: number, n = 5): number[] {
  return cronOf(cron, timezone)
    .nextRuns(n, new Date(after))
    .map((d) => d.getTime());
}

/** Older missed fires are counted up to this many (a minutely schedule a week away has ~10,000). */
export const MISSED_COUNT_MAX = 100;

/**
 * The fires in (after, until], oldest first; at most `limit`, the newest. `more` counts the older ones
 * left out, up to MISSED_COUNT_MAX (`atLeast`: there may be more). Found backwards from `until`, so a
 * long gap costs `limit` steps, not one step per fire.
 */
export function firesBetween(
  cron: string,
  timezone: string,
  after: number,
  until: number,
  limit: number,
): { fires: number[]; more: number; atLeast: boolean } {
  const newest = cronOf(cron, timezone)
    .previousRuns(limit + 1, new Date(until + 1))
    .map((d) => d.getTime())
    .filter((t) => t > after && t <= until)
    .reverse();
  if (newest.length <= limit) return { fires: newest, more: 0, atLeast: false };
  const fires = newest.slice(1);
  let more = 0;
  for (
    let t = nextFire(cron, timezone, after);
    t !== null && t < fires[0]! && more < MISSED_COUNT_MAX;
    more++
  )
    t = nextFire(cron, timezone, t);
  return { fires, more, atLeast: more >= MISSED_COUNT_MAX };
}
