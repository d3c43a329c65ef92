import { describe, expect, it } from 'vitest';
import { firesBetween, nextFires, parseSchedulePhrase, resolveSchedule } from './schedule.ts';

const VALID: [string, string][] = [
  ['every minute', '* * * * *'],
  ['every 5 minutes', '*/5 * * * *'],
  ['every fifteen minutes', '*/15 * * * *'],
  ['every hour', '0 * * * *'],
  ['every hour at :15', '15 * * * *'],
  ['every 2 hours', '0 */2 * * *'],
  ['every 6 hours at minute 30', '30 */6 * * *'],
  ['every day at 9', '0 9 * * *'],
  ['daily at 17:45', '45 17 * * *'],
  ['every day at 9am and 5pm', '0 9,17 * * *'],
  ['every day at noon', '0 12 * * *'],
  ['every day at midnight', '0 0 * * *'],
  ['every day at 12am', '0 0 * * *'],
  ['every day at 12:30pm', '30 12 * * *'],
  ['every weekday at 9:00', '0 9 * * 1-5'],
  ['Every Weekday at 09:00.', '0 9 * * 1-5'],
  ['on weekends at 10', '0 10 * * 0,6'],
  ['every monday at 8', '0 8 * * 1'],
  ['every Monday and Thursday at 8:30', '30 8 * * 1,4'],
  ['on mon, wed, fri at 7pm', '0 19 * * 1,3,5'],
  ['weekly on friday at 17:00', '0 17 * * 5'],
  ['on fridays at 16', '0 16 * * 5'],
  ['on the first Monday of the month at 8', '0 8 * * 1#1'],
  ['on the third wednesday of every month at 14:00', '0 14 * * 3#3'],
  ['on the last friday of the month at 16:00', '0 16 * * 5#L'],
  ['on the last day of the month at 23:00', '0 23 L * *'],
  ['on the 15th of every month at 9', '0 9 15 * *'],
  ['monthly on the 1st at 6:00', '0 6 1 * *'],
  ['0 9 * * 1-5', '0 9 * * 1-5'],
  ['*/10  *  * * *', '*/10 * * * *'],
];

const INVALID: [string, RegExp][] = [
  ['', /empty/],
  ['every 7 minutes', /cannot repeat evenly.*1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30/],
  ['every 5 hours', /cannot repeat evenly/],
  ['every 0 hours', /at least 1/],
  ['every weekday', /say at what time/],
  ['every monday', /say at what time/],
  ['monthly', /say which day/],
  ['every day at 25:00', /hour 25 is not on a clock/],
  ['every day at 9:75', /minute 75/],
  ['every day at 13pm', /am\/pm the hour is 1-12/],
  ['every day at 9:00 and 17:30', /different minutes/],
  ['on the fifth monday of the month at 8', /fifth/],
  ['on the 32nd of every month at 9', /day 32 does not exist/],
  ['every funday at 9', /"funday" is not a day of the week/],
  ['every other day at 9', /every other/],
  ['tomorrow at 9', /happens once/],
  ['every 30 seconds', /no seconds/],
  ['make coffee', /cannot read "make coffee"/],
  ['0 9 * *', /cannot read|fields/],
  ['0 0 9 * * *', /6 fields; a schedule's cron has 5/],
  ['61 9 * * *', /not a valid cron expression.*minute/],
  ['0 0 31 2 *', /never fires/],
];

describe('plain-language schedules', () => {
  it.each(VALID)('"%s" → %s', (phrase, cron) => {
    const r = parseSchedulePhrase(phrase);
    expect(r).toMatchObject({ ok: true, value: { cron } });
  });
  it.each(INVALID)('refuses "%s", saying why', (phrase, why) => {
    const r = parseSchedulePhrase(phrase);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(why);
  });
  it('says the schedule back in words', () => {
    expect(parseSchedulePhrase('on the first Monday of the month at 8')).toMatchObject({
      value: { text: 'on the first Monday of the month at 08:00'.replace('the month', 'every month') },
    });
    expect(parseSchedulePhrase('every weekday at 9')).toMatchObject({
      value: { text: 'every weekday at 09:00' },
    });
  });
});

describe('a card’s schedule: front matter', () => {
  it('takes a phrase, or cron with a zone, with policies and their defaults', () => {
    expect(resolveSchedule('every 2 hours', 'Europe/Berlin')).toEqual({
      ok: true,
      value: {
        cron: '0 */2 * * *',
        timezone: 'Europe/Berlin',
        source: 'every 2 hours',
        text: 'every 2 hours (Europe/Berlin)',
        missed: 'latest_once',
        overlap: 'skip',
      },
    });
    expect(
      resolveSchedule(
        { cron: '30 2 * * *', timezone: 'America/New_York', missed: 'all', overlap: 'queue' },
        'UTC',
      ),
    ).toMatchObject({ ok: true, value: { cron: '30 2 * * *', timezone: 'America/New_York', missed: 'all' } });
  });
  it.each([
    [{ cron: '0 9 * * *', timezone: 'Mars/Olympus' }, /not an IANA time zone/],
    [{ cron: '0 9 * * *', text: 'every day at 9' }, /either `cron`.*or `text`/],
    [{ text: 'every day at 9', missed: 'sometimes' }, /missed.*skip, latest_once, all/],
    [{ text: 'every day at 9', overlap: 'both' }, /overlap.*skip, queue/],
    [{ text: 'every day at 9', every: 'day' }, /unknown field every/],
    [42, /expected a phrase/],
    [{ cron: 'every day' }, /cron/],
  ])('refuses %j', (raw, why) => {
    const r = resolveSchedule(raw, 'UTC');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(why);
  });
});

/** Wall-clock time of an instant in a zone, "YYYY-MM-DD HH:MM". */
const wall = (t: number, zone: string): string =>
  new Date(t).toLocaleString('sv-SE', { timeZone: zone }).slice(0, 16);

describe('daylight saving', () => {
  // Two zones with different rules: the US moves at 02:00 local on the second Sunday of March and the
  // first Sunday of November; the EU at 01:00 UTC on the last Sundays of March and October.
  const cases = [
    { zone: 'America/New_York', spring: '2026-03-08', fall: '2026-11-01', fallTime: '30 1 * * *' },
    { zone: 'Europe/Berlin', spring: '2026-03-29', fall: '2026-10-25', fallTime: '30 2 * * *' },
    // Lord Howe shifts by half an hour: 02:00 → 02:30 in October, 02:00 → 01:30 in April.
    { zone: 'Australia/Lord_Howe', spring: '2026-10-04', fall: '2026-04-05', fallTime: '45 1 * * *' },
  ];
  it.each(cases)('$zone: a time in the spring-forward gap fires once, at the first valid time', (c) => {
    const from = Date.parse(`${c.spring}T00:00:00Z`) - 36 * 3600_000;
    const fires = nextFires('30 2 * * *', c.zone, from, 4)
      .map((t) => wall(t, c.zone))
      .filter((w) => w.startsWith(c.spring));
    expect(fires).toHaveLength(1);
    // The first valid time after the gap: 03:00 (a one-hour shift) or 02:30 (Lord Howe's half hour).
    expect(fires[0]! > `${c.spring} 02:00`).toBe(true);
    expect(fires[0]! <= `${c.spring} 03:00`).toBe(true);
  });
  it.each(cases)('$zone: a time that occurs twice on fall-back day fires once', (c) => {
    const from = Date.parse(`${c.fall}T00:00:00Z`) - 36 * 3600_000;
    const until = from + 72 * 3600_000;
    const { fires } = firesBetween(c.fallTime, c.zone, from, until, 100);
    const onDay = fires.filter((t) => wall(t, c.zone).startsWith(c.fall));
    expect(onDay).toHaveLength(1);
    // Daily fires stay a day apart in wall time around the change: one each calendar day.
    expect(new Set(fires.map((t) => wall(t, c.zone).slice(0, 10))).size).toBe(fires.length);
  });
  it('an interval schedule keeps its hours across the change (no double fire in wall time)', () => {
    const from = Date.parse('2026-03-28T12:00:00Z');
    const fires = nextFires('0 */2 * * *', 'Europe/Berlin', from, 12).map((t) => wall(t, 'Europe/Berlin'));
    expect(new Set(fires).size).toBe(fires.length);
  });
});

describe('missed fires', () => {
  it('lists the fires in a gap, keeping the newest when capped', () => {
    const after = Date.parse('2026-01-01T00:00:00Z');
    const r = firesBetween('0 * * * *', 'UTC', after, after + 5 * 3600_000, 3);
    expect(r.more).toBe(2);
    expect(r.fires.map((t) => new Date(t).toISOString().slice(11, 16))).toEqual(['03:00', '04:00', '05:00']);
  });
});
