/**
 * Schedules in a real supervisor: fires on time, missed-run policies across a real restart, overlap,
 * bad input. The schedule clock is injected (RUNBOARD_SCHEDULE_CLOCK: the supervisor's schedule book
 * starts at that instant and runs at real speed); processes, sockets and the state files are real.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ScheduleInfo, ScheduleSpec } from '@runboard/supervisor/protocol';
import { call, on } from '@runboard/supervisor/protocol';
import {
  ListSchedules,
  ScheduleDidFire,
  SetSchedules,
  TakeScheduleFire,
} from '@runboard/supervisor/protocol';
import { DIST, Harness, waitUntil } from '../helpers/harness.ts';
import { TestClock } from '../helpers/schedule-clock.ts';

let h: Harness | undefined;
let clock: TestClock | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
  clock?.remove();
  clock = undefined;
});

const spec = (h: Harness, name: string, over: Partial<ScheduleSpec> = {}): ScheduleSpec => ({
  cardPath: path.join(h.root, `${name}.md`),
  cardId: name,
  title: name,
  cron: '0 * * * *',
  timezone: 'UTC',
  text: 'every hour',
  missed: 'latest_once',
  overlap: 'skip',
  ...over,
});

async function schedules(h: Harness): Promise<Record<string, ScheduleInfo>> {
  const { schedules } = await call(h.client.conn, ListSchedules, {});
  return Object.fromEntries(schedules.map((s) => [s.cardId, s]));
}

async function restart(h: Harness, clock: string): Promise<void> {
  h.client.close();
  const exited = new Promise((r) => h.supervisor.once('exit', r));
  h.supervisor.kill('SIGTERM');
  await exited;
  await h.startSupervisor(undefined, { RUNBOARD_SCHEDULE_CLOCK: clock });
}

const hhmm = (isoTimes: string[]): string[] => isoTimes.map((t) => t.slice(11, 16));

describe('schedules in the supervisor', () => {
  it('a fire on time is pending for the board, and a host that registered hears of it', async () => {
    // an hour before the fire: the clock is moved onto it once the schedule is registered
    clock = new TestClock('2026-01-05T07:00:00Z');
    h = await Harness.start({ env: { RUNBOARD_SCHEDULE_CLOCK: clock.file } });
    const fired: string[] = [];
    on(h.client.conn, ScheduleDidFire, (p) => fired.push(`${p.cardPath} ${p.fireAt}`));
    const daily = spec(h, 'daily', { cron: '0 8 * * *', text: 'every day at 08:00' });
    await call(h.client.conn, SetSchedules, { project: h.root, schedules: [daily] });
    expect(hhmm((await schedules(h)).daily!.next)).toEqual(['08:00', '08:00', '08:00', '08:00', '08:00']);
    expect(fired).toEqual([]);
    clock.moveTo('2026-01-05T08:00:00Z');
    await waitUntil('fired', () => fired.length > 0, 20_000);
    expect(fired).toEqual([`${daily.cardPath} 2026-01-05T08:00:00.000Z`]);
    const s = (await schedules(h)).daily!;
    expect(s.pending).toEqual(['2026-01-05T08:00:00.000Z']);
    expect(s.lastFire).toBe('2026-01-05T08:00:00.000Z');
    expect(s.next[0]).toBe('2026-01-06T08:00:00.000Z');
    // The host queues the card and says so; taking it twice changes nothing.
    const take = {
      cardPath: daily.cardPath,
      fireAt: s.pending[0]!,
      decision: 'queued',
      reason: 'queued',
    } as const;
    expect(await call(h.client.conn, TakeScheduleFire, take)).toEqual({ taken: true });
    expect(await call(h.client.conn, TakeScheduleFire, take)).toEqual({ taken: false });
    const after = (await schedules(h)).daily!;
    expect(after.pending).toEqual([]);
    expect(after.history.map((d) => d.decision)).toEqual(['pending', 'queued']);
  });

  it('a card saved just before its fire and registered just after it fires once (decision 111)', async () => {
    clock = new TestClock('2026-01-05T07:00:00Z');
    h = await Harness.start({ env: { RUNBOARD_SCHEDULE_CLOCK: clock.file } });
    const fired: string[] = [];
    on(h.client.conn, ScheduleDidFire, (p) => fired.push(`${path.basename(p.cardPath)} ${p.fireAt}`));
    // fromSave: the board registers it as soon as it reads the card (no Confirm waited for)
    const daily = { cron: '0 8 * * *', text: 'every day at 08:00', fromSave: true };
    const early = spec(h, 'early', daily);
    const late = spec(h, 'late', daily);
    // a board is connected: it registered its project's schedules
    await call(h.client.conn, SetSchedules, { project: h.root, schedules: [early] });
    // a person saves a new card with a schedule (07:00 on the book's clock)...
    writeFileSync(late.cardPath, '---\ntitle: late\nflow: shell\nschedule: every day at 08:00\n---\n');
    // ...and 08:00 comes before the board registers it: the book decides the fire (early's shows it)
    clock.moveTo('2026-01-05T08:00:00Z');
    await waitUntil('the 08:00 fire of the card registered before', () => fired.length > 0, 20_000);
    expect(fired).toEqual(['early.md 2026-01-05T08:00:00.000Z']);
    await call(h.client.conn, SetSchedules, { project: h.root, schedules: [early, late] });
    await waitUntil('the 08:00 fire of the card saved before it', () => fired.length > 1, 20_000);
    // once: registering it again fires nothing more
    await call(h.client.conn, SetSchedules, { project: h.root, schedules: [early, late] });
    const s = (await schedules(h)).late!;
    expect(s.pending).toEqual(['2026-01-05T08:00:00.000Z']);
    expect(s.history.map((d) => d.decision)).toEqual(['pending']);
    expect(fired).toEqual(['early.md 2026-01-05T08:00:00.000Z', 'late.md 2026-01-05T08:00:00.000Z']);
  });

  it('missed fires follow each card’s policy across a real restart, and every decision is kept', async () => {
    h = await Harness.start({ env: { RUNBOARD_SCHEDULE_CLOCK: '2026-01-05T07:00:00Z' } });
    await call(h.client.conn, SetSchedules, {
      project: h.root,
      schedules: [
        spec(h, 'skip', { missed: 'skip' }),
        spec(h, 'latest', { missed: 'latest_once' }),
        spec(h, 'all', { missed: 'all', overlap: 'queue' }),
        spec(h, 'allskip', { missed: 'all' }), // overlap: skip, the default
        spec(h, 'capped', { missed: 'all', overlap: 'queue', cron: '*/5 * * * *', text: 'every 5 minutes' }),
      ],
    });
    // Down from 07:00 until 13:00:30: hourly fires 08:00 … 13:00 (6) and 72 five-minute fires were missed.
    // No board is connected after the restart, so the supervisor starts what the policies keep; these
    // cards have no files, so each start is refused and recorded as skipped, saying why.
    await restart(h, '2026-01-05T13:00:30Z');
    const s = await schedules(h);
    const kept = (x: ScheduleInfo): string[] =>
      hhmm(x.history.filter((d) => d.decision === 'pending').map((d) => d.fireAt));
    expect(s.skip!.pending).toEqual([]);
    expect(s.skip!.history).toHaveLength(6);
    expect(
      s.skip!.history.every((d) => d.decision === 'skipped' && /supervisor was not running/.test(d.reason)),
    ).toBe(true);
    expect(kept(s.latest!)).toEqual(['13:00']);
    expect(s.latest!.history.map((d) => d.decision)).toEqual([
      'skipped',
      'skipped',
      'skipped',
      'skipped',
      'skipped',
      'pending',
      'skipped',
    ]);
    expect(s.latest!.history.at(-1)!.reason).toMatch(
      /no board was open and the supervisor could not start the run: .*config\.yaml: cannot read it/,
    );
    expect(kept(s.all!)).toEqual(['08:00', '09:00', '10:00', '11:00', '12:00', '13:00']);
    // Under overlap: skip too: the missed fires are one catch-up, not overlapping one another.
    expect(kept(s.allskip!)).toEqual(['08:00', '09:00', '10:00', '11:00', '12:00', '13:00']);
    // `all` is capped at the newest 10; the rest are recorded as skipped.
    expect(kept(s.capped!)).toEqual([
      '12:15',
      '12:20',
      '12:25',
      '12:30',
      '12:35',
      '12:40',
      '12:45',
      '12:50',
      '12:55',
      '13:00',
    ]);
    expect(
      s.capped!.history.filter((d) => /supervisor was not running/.test(d.reason)).length,
    ).toBeGreaterThanOrEqual(51);
    for (const x of Object.values(s)) expect(x.pending).toEqual([]);
    // Another restart a minute later decides nothing again (the decisions were saved), and the host
    // registering the same schedules keeps their state.
    await restart(h, '2026-01-05T13:01:30Z');
    await call(h.client.conn, SetSchedules, {
      project: h.root,
      schedules: [spec(h, 'skip', { missed: 'skip' }), spec(h, 'latest', { missed: 'latest_once' })],
    });
    const again = await schedules(h);
    expect(Object.keys(again).sort()).toEqual(['latest', 'skip']); // the others' cards lost their schedule
    expect(again.skip!.history).toHaveLength(6);
    expect(again.latest!.history).toHaveLength(7);
  });

  it('overlap: a fire while the card runs is skipped (overlap skip) or waits (overlap queue)', async () => {
    clock = new TestClock('2026-01-05T07:00:00Z');
    h = await Harness.start({ env: { RUNBOARD_SCHEDULE_CLOCK: clock.file } });
    const card = path.join(h.root, 'card.md'); // the harness launches its runs for this card
    const { runId } = await h.launch('sleep 600'); // until cancelled below
    const other = path.join(h.root, 'other.md');
    await call(h.client.conn, SetSchedules, {
      project: h.root,
      schedules: [
        { ...spec(h, 'card', { overlap: 'skip' }), cardPath: card },
        { ...spec(h, 'other', { overlap: 'queue' }), cardPath: other },
      ],
    });
    clock.moveTo('2026-01-05T08:00:00Z'); // the hourly fire, while the run goes
    await waitUntil('fired', async () => (await schedules(h!)).card!.lastFire !== undefined, 20_000);
    const s = await schedules(h);
    expect(s.card!.pending).toEqual([]);
    expect(s.card!.history.at(-1)).toMatchObject({
      decision: 'skipped',
      reason: expect.stringMatching(/still running/),
    });
    expect(s.other!.pending).toHaveLength(1);
    await h.client.cancel(runId);
  });

  it('refuses a schedule it cannot fire, saying why, and keeps the ones it had', async () => {
    h = await Harness.start();
    await call(h.client.conn, SetSchedules, { project: h.root, schedules: [spec(h, 'good')] });
    await expect(
      call(h.client.conn, SetSchedules, {
        project: h.root,
        schedules: [spec(h, 'bad', { timezone: 'Mars/Olympus' })],
      }),
    ).rejects.toThrow(/bad\.md: "Mars\/Olympus" is not an IANA time zone/);
    await expect(
      call(h.client.conn, SetSchedules, {
        project: h.root,
        schedules: [spec(h, 'bad', { cron: '0 0 31 2 *' })],
      }),
    ).rejects.toThrow(/never fires/);
    expect(Object.keys(await schedules(h))).toEqual(['good']);
  });

  it('runboard schedules: says what a phrase means or why not, and lists what the supervisor keeps', async () => {
    h = await Harness.start({ env: { RUNBOARD_SCHEDULE_CLOCK: '2026-01-05T07:00:00Z' } });
    const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: h.paths.root, TZ: 'UTC' };
    delete env.NODE_EXTRA_CA_CERTS;
    const cli = (...args: string[]) =>
      spawnSync(process.execPath, [path.join(DIST, 'runboard.mjs'), 'schedules', ...args], {
        env,
        encoding: 'utf8',
      });
    const ok = cli('--check', 'every weekday at 9:00', '--timezone', 'Europe/Berlin', '--json');
    expect(ok.status).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true, cron: '0 9 * * 1-5', timezone: 'Europe/Berlin' });
    expect(JSON.parse(ok.stdout).next).toHaveLength(5);
    const refused = cli('--check', 'every 7 minutes');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/cannot repeat evenly/);
    await call(h.client.conn, SetSchedules, {
      project: h.root,
      schedules: [
        spec(h, 'report', { title: 'Weekly report', cron: '0 8 * * 1#1', text: 'first Monday at 08:00' }),
      ],
    });
    const listed = cli();
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(
      /Weekly report[\s\S]*first Monday at 08:00[\s\S]*next: 2026-01-05 08:00, 2026-02-02 08:00/,
    );
    expect(listed.stdout).toMatch(/last: not fired yet/);
  });
});
