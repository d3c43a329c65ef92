/**
 * Scheduled cards end to end: `runboard serve` (the board), its supervisor and real runs. The schedule
 * clock is injected (RUNBOARD_SCHEDULE_CLOCK, passed to serve and the supervisor it starts); the
 * processes, sockets and files are real.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { CardDetail } from '../../host/src/shared/board-types.ts';
import { ARTIFACTS, BoardServer, holdFirstAnswer, launchBrowser, waitUntil } from '../e2e/helpers/board.ts';
import { DIST } from '../helpers/harness.ts';
import { TestClock } from '../helpers/schedule-clock.ts';
import { savePicture } from '../helpers/picture.ts';

const config = `version: 1
scheduler:
  maxConcurrency: 4
flows:
  shell: { runner: command, cap: 4 }
`;
const card = (title: string, command: string, schedule: string): string =>
  `---\ntitle: ${title}\nflow: shell\nworkspace: ./workspace\ncommand: ${JSON.stringify(command)}\nschedule: ${schedule}\n---\n# Task\n`;

let server: BoardServer | undefined;
/** The schedule clock: an hour before the 08:00 fires, moved onto them by each test (no window to meet). */
let clock: TestClock | undefined;
const clockEnv = (): { env: NodeJS.ProcessEnv } => {
  clock = new TestClock('2026-01-05T07:00:00Z');
  return { env: { RUNBOARD_SCHEDULE_CLOCK: clock.file } };
};
const eight = (): void => clock!.moveTo('2026-01-05T08:00:00Z');
afterEach(async () => {
  await server?.stop();
  server = undefined;
  clock?.remove();
  clock = undefined;
});

interface ScheduleRow {
  cardId: string;
  next: string[];
  pending: string[];
  lastFire?: string;
  history: { decision: string; reason: string }[];
  started: { fireAt: string; runId: string }[];
  waiting?: string;
  lastRun: { runId: string; status: string } | null;
}

/** Stops serve (the board); its supervisor goes on. */
async function closeBoard(s: BoardServer): Promise<void> {
  await waitUntil('registered', async () => Object.keys(await schedulesCli(s)).length > 0);
  const exited = new Promise((r) => s.proc.once('exit', r));
  s.proc.kill('SIGTERM');
  await exited;
}

/** `runboard schedules --json` (works with no board open). */
async function schedulesCli(s: BoardServer): Promise<Record<string, ScheduleRow>> {
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: s.home };
  delete env.NODE_EXTRA_CA_CERTS;
  const out = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), 'schedules', '--json'],
      { env },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    ),
  );
  const rows = out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ScheduleRow);
  return Object.fromEntries(rows.map((r) => [r.cardId, r]));
}

describe('scheduled cards', () => {
  it('a schedule fires with no board open: the supervisor runs the card, and the board opened later shows the run', async () => {
    server = await BoardServer.start(
      config,
      { 'nightly.md': card('Nightly', 'echo scheduled run', '{ cron: "0 8 * * *", timezone: UTC }') },
      clockEnv(),
    );
    const before = await server.card('nightly');
    expect(before?.schedule).toMatchObject({ text: 'cron 0 8 * * * (UTC)' });
    // The board is closed (serve stopped); the supervisor goes on alone.
    await closeBoard(server);
    expect((await schedulesCli(server)).nightly!.lastFire).toBeUndefined(); // not fired yet
    eight();
    const ran = await waitUntil(
      'fired and ran with no board',
      async () => {
        const s = (await schedulesCli(server!)).nightly!;
        return s.lastRun?.status === 'succeeded' ? s : undefined;
      },
      30_000,
    );
    expect(ran.pending).toEqual([]);
    expect(ran.started).toEqual([{ fireAt: '2026-01-05T08:00:00.000Z', runId: ran.lastRun!.runId }]);
    expect(ran.history.map((d) => d.decision)).toEqual(['pending', 'started']);
    expect(ran.next[0]).toBe('2026-01-06T08:00:00.000Z');
    // No board has written the card: the supervisor never writes a project's files.
    expect(readFileSync(server.cardFile('nightly.md'), 'utf8')).not.toMatch(/lastRun/);

    // The board opens: it claims the run and records its outcome on the card, and runs nothing again.
    await server.startServe();
    const done = await waitUntil('shown', async () => {
      const c = await server!.card('nightly');
      return c?.column === 'done' ? c : undefined;
    });
    expect(done.runId).toBe(ran.lastRun!.runId);
    expect(readFileSync(server.cardFile('nightly.md'), 'utf8')).toContain(`lastRun: ${ran.lastRun!.runId}`);
    expect(done.schedule?.next).toBe('2026-01-06T08:00:00.000Z');
    const detail = await server.api<CardDetail>('GET', '/api/cards/nightly');
    expect(detail.runs.map((r) => r.runId)).toEqual([ran.lastRun!.runId]);
    expect(detail.schedule?.history.map((d) => d.decision)).toEqual(['pending', 'started']);
    await waitUntil('claimed', async () => (await schedulesCli(server!)).nightly!.started.length === 0);
    expect((await server.api<CardDetail>('GET', '/api/cards/nightly')).runs).toHaveLength(1);
  });

  it("with no board open the supervisor keeps the project's maxConcurrency and each flow's cap", async () => {
    const hold = 'while [ ! -e release ]; do sleep 0.1; done; echo done';
    const capped = `version: 1
scheduler:
  maxConcurrency: 2
flows:
  shell: { runner: command, cap: 1 }
  other: { runner: command, cap: 4 }
`;
    const at8 = '{ cron: "0 8 * * *", timezone: UTC }';
    server = await BoardServer.start(
      capped,
      {
        'a.md': card('A', hold, at8),
        'b.md': card('B', hold, at8),
        'c.md': card('C', hold, at8).replace('flow: shell', 'flow: other'),
        'd.md': card('D', hold, at8).replace('flow: shell', 'flow: other'),
      },
      clockEnv(),
    );
    await closeBoard(server);
    eight();
    // All four fire at 08:00: a (shell) and c (other) start; b waits for the shell cap, d for the
    // project's two runs.
    const fired = await waitUntil(
      'fired',
      async () => {
        const s = await schedulesCli(server!);
        return ['a', 'b', 'c', 'd'].every((id) => s[id]!.lastFire) &&
          s.a!.started.length + s.c!.started.length === 2
          ? s
          : undefined;
      },
      30_000,
    );
    expect(fired.b!.pending).toEqual(['2026-01-05T08:00:00.000Z']);
    expect(fired.b!.waiting).toMatch(/flow "shell" is at its cap \(1\/1\)/);
    expect(fired.d!.pending).toHaveLength(1);
    expect(fired.d!.waiting).toMatch(/maxConcurrency \(2\)/);
    writeFileSync(path.join(server.workspace, 'release'), '');
    await waitUntil(
      'all ran',
      async () =>
        Object.values(await schedulesCli(server!)).every(
          (s) => s.started.length === 1 && s.lastRun?.status === 'succeeded',
        ),
      30_000,
    );
    // The board opens and shows the four runs, which never broke the caps.
    await server.startServe();
    const details = await waitUntil('shown', async () => {
      const ds = await Promise.all(
        ['a', 'b', 'c', 'd'].map((id) => server!.api<CardDetail>('GET', `/api/cards/${id}`)),
      );
      return ds.every((d) => d.card.column === 'done') ? ds : undefined;
    });
    const spans = details.map((d) => {
      expect(d.runs).toHaveLength(1);
      return {
        flow: d.card.flow,
        from: Date.parse(d.runs[0]!.startedAt),
        to: Date.parse(d.runs[0]!.endedAt!),
      };
    });
    const overlapping = (x: (typeof spans)[number], y: (typeof spans)[number]): boolean =>
      x.from < y.to && y.from < x.to;
    expect(overlapping(spans[0]!, spans[1]!)).toBe(false); // a and b: shell, cap 1
    // at each start, at most two runs (the project's maxConcurrency) were going
    for (const x of spans)
      expect(spans.filter((y) => y.from <= x.from && x.from < y.to).length).toBeLessThanOrEqual(2);
  });

  it('a board that opens while the supervisor’s runs go follows them and takes the fires still waiting', async () => {
    const hold = 'while [ ! -e release ]; do sleep 0.1; done; echo done';
    const capped = `version: 2\nflows:\n  shell: { runner: command, cap: 1 }\n`;
    const at8 = '{ cron: "0 8 * * *", timezone: UTC }';
    server = await BoardServer.start(
      capped,
      { 'a.md': card('A', hold, at8), 'b.md': card('B', hold, at8) },
      clockEnv(),
    );
    await closeBoard(server);
    eight();
    const fired = await waitUntil(
      'a started, b waits',
      async () => {
        const s = await schedulesCli(server!);
        return s.a!.started.length === 1 && s.b!.pending.length === 1 ? s : undefined;
      },
      30_000,
    );
    const runA = fired.a!.started[0]!.runId;
    // The board opens: a shows running with the supervisor's run; b's fire is the board's now.
    await server.startServe();
    await waitUntil('a followed', async () => {
      const c = await server!.card('a');
      return c?.column === 'running' && c.runId === runA;
    });
    await waitUntil('claimed', async () => (await schedulesCli(server!)).a!.started.length === 0);
    const b = await waitUntil('b taken by the board', async () => {
      const d = await server!.api<CardDetail>('GET', '/api/cards/b');
      return d.schedule?.history.some((h) => h.decision === 'queued') ? d : undefined;
    });
    expect(b.card.column).toBe('queued'); // the flow's cap: a still runs
    writeFileSync(path.join(server.workspace, 'release'), '');
    const [da, db] = await waitUntil('both done', async () => {
      const ds = await Promise.all(
        ['a', 'b'].map((id) => server!.api<CardDetail>('GET', `/api/cards/${id}`)),
      );
      return ds.every((d) => d.card.column === 'done') ? ds : undefined;
    });
    expect(da!.runs.map((r) => r.runId)).toEqual([runA]);
    expect(db!.runs).toHaveLength(1);
    expect(Date.parse(db!.runs[0]!.startedAt)).toBeGreaterThanOrEqual(Date.parse(da!.runs[0]!.endedAt!));
  });

  it('overlap: a fire while the card runs is skipped (skip) or runs after it (queue), never two at once', async () => {
    // Each run holds until the test lets it go (a file in the workspace), so the fire surely meets it.
    const slow = 'while [ ! -e release ]; do sleep 0.1; done; echo done';
    server = await BoardServer.start(
      config,
      {
        'skip.md': card('Skip', slow, '{ cron: "0 8 * * *", timezone: UTC, overlap: skip }'),
        'queue.md': card('Queue', slow, '{ cron: "0 8 * * *", timezone: UTC, overlap: queue }'),
        'broken.md': card('Broken', 'true', 'every 7 minutes'),
      },
      clockEnv(),
    );
    // A person starts both cards before the 08:00 fire.
    await server.api('POST', '/api/cards/skip/move', { to: 'queued', index: 0 });
    await server.api('POST', '/api/cards/queue/move', { to: 'queued', index: 0 });
    await waitUntil('both running', async () => {
      const b = await server!.board();
      return b.cards.filter((c) => c.column === 'running').length === 2;
    });
    eight();
    const skipped = await waitUntil('skip decided', async () => {
      const d = await server!.api<CardDetail>('GET', '/api/cards/skip');
      return d.schedule?.history.find((h) => h.decision === 'skipped');
    });
    expect(skipped.reason).toMatch(/previous run is still running/);
    await waitUntil('the queue card’s fire waits', async () => {
      const d = await server!.api<CardDetail>('GET', '/api/cards/queue');
      return d.schedule?.pending.length === 1;
    });
    expect((await server.card('queue'))?.column).toBe('running');
    writeFileSync(path.join(server.workspace, 'release'), '');
    // The queued fire runs once the first run is over: two runs, one after the other.
    const queued = await waitUntil(
      'queue card ran twice',
      async () => {
        const d = await server!.api<CardDetail>('GET', '/api/cards/queue');
        return d.runs.length === 2 && d.runs.every((r) => r.status !== 'running') ? d : undefined;
      },
      30_000,
    );
    const [second, first] = queued.runs;
    expect(Date.parse(second!.startedAt)).toBeGreaterThanOrEqual(Date.parse(first!.endedAt!));
    expect(queued.schedule?.history.map((h) => h.decision)).toEqual(['pending', 'queued']);
    const skipDetail = await server.api<CardDetail>('GET', '/api/cards/skip');
    expect(skipDetail.runs).toHaveLength(1);
    // A schedule that cannot be used says why on the card; the card itself still works.
    const broken = await server.card('broken');
    expect(broken?.schedule?.error).toMatch(/every 7 minutes cannot repeat evenly/);
    expect(broken?.broken).toBeUndefined();
  });

  it('a card that waited for a Confirm schedules from the Confirm: a fire that came meanwhile is not run', async () => {
    server = await BoardServer.start(
      config,
      { 'keep.md': card('Keep', 'echo keep', '{ cron: "0 8 * * *", timezone: UTC }') },
      clockEnv(),
    );
    await waitUntil('keep registered', async () => (await schedulesCli(server!)).keep !== undefined);
    // written outside the board: it waits for a person's Confirm, its schedule not registered
    server.writeCard('outside.md', card('Outside', 'echo outside', '{ cron: "0 8 * * *", timezone: UTC }'));
    await waitUntil('outside waiting for a confirm', async () => (await server!.card('outside'))?.confirm);
    eight(); // keep's fire says the supervisor has seen 08:00
    await waitUntil('keep fired', async () => (await schedulesCli(server!)).keep!.lastFire !== undefined);
    await server.confirmCard('outside');
    await waitUntil('outside registered', async () => (await schedulesCli(server!)).outside !== undefined);
    // a later look (the fire, had there been one, is decided as the registration is taken in)
    const outside = (await schedulesCli(server)).outside!;
    expect(outside.history).toEqual([]);
    expect(outside.pending).toEqual([]);
    expect(outside.next[0]).toBe('2026-01-06T08:00:00.000Z');
    expect((await server.card('outside'))?.column).toBe('backlog');
  });

  it('a fire while its card is being written waits for the write, then queues the card (not skipped)', async () => {
    server = await BoardServer.start(
      config,
      { 'daily.md': card('Daily', 'echo daily', '{ cron: "0 8 * * *", timezone: UTC }') },
      clockEnv(),
    );
    await waitUntil('registered', async () => (await schedulesCli(server!)).daily !== undefined);
    // the card rewritten in place with the same text: the shell truncates it and holds the rest
    const file = server.cardFile('daily.md');
    const text = readFileSync(file, 'utf8');
    const go = path.join(server.root, 'go');
    execFileSync('mkfifo', [go]);
    const next = path.join(server.root, 'next.md');
    writeFileSync(next, text);
    const writer = spawn('sh', ['-c', 'exec 3>"$1"; read go < "$2"; cat "$3" >&3', 'sh', file, go, next], {
      stdio: 'ignore',
    });
    const exited = new Promise((r) => writer.once('exit', r));
    try {
      await waitUntil('daily being written', async () => (await server!.card('daily'))?.unreadable);
      eight();
      await waitUntil(
        'the 08:00 fire',
        async () => (await schedulesCli(server!)).daily!.lastFire !== undefined,
      );
    } finally {
      writeFileSync(go, 'go\n'); // the shell writes the rest
    }
    await exited;
    const done = await waitUntil('daily ran', async () => {
      const d = await server!.api<CardDetail>('GET', '/api/cards/daily');
      return d.runs.length === 1 && d.runs[0]!.status === 'succeeded' ? d : undefined;
    });
    expect(done.schedule?.history.map((h) => h.decision)).toEqual(['pending', 'queued']);
  });

  it('the inspector says what a phrase means (or why not) before saving it, then the card shows its next fire', async () => {
    server = await BoardServer.start(config, {
      'report.md': `---\ntitle: Weekly report\nflow: shell\nworkspace: ./workspace\ncommand: "echo report"\n---\n# Task\n`,
    });
    // The method behind it, as any client calls it: refusals say why, nothing is written.
    expect(
      await server.api('POST', '/api/schedule/preview', {
        text: 'every 7 minutes',
        timezone: 'Europe/Berlin',
      }),
    ).toMatchObject({ ok: false, error: expect.stringMatching(/cannot repeat evenly/) });
    await expect(
      server.api('PUT', '/api/cards/report/schedule', { schedule: { text: 'every weekday' } }),
    ).rejects.toThrow(/400.*say at what time/);
    expect(readFileSync(server.cardFile('report.md'), 'utf8')).not.toMatch(/schedule/);

    mkdirSync(ARTIFACTS, { recursive: true });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(server.url);
      await page.click('li[data-card-id="report"]');
      await page.getByText('Schedule: none').click();
      await page.getByLabel('Time zone').fill('America/New_York');
      // a slow host answers the first text's preview after the second's: the form shows the second's
      const first = await holdFirstAnswer(page, '**/api/schedule/preview');
      await page.getByLabel('Schedule', { exact: true }).fill('every day at 9');
      await first.asked;
      await page.getByLabel('Schedule', { exact: true }).fill('every 7 minutes');
      await page.getByText(/cannot repeat evenly/).waitFor();
      first.release();
      await first.answered;
      // the page has taken the late answer (its promise, then React's render) before this looks
      await page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(r), 50)));
      expect(await page.locator('.schedule-preview').count()).toBe(0);
      await page.getByText(/cannot repeat evenly/).waitFor();
      expect(await page.getByRole('button', { name: 'Save schedule' }).isDisabled()).toBe(true);
      await page.getByLabel('Schedule', { exact: true }).fill('on the first Monday of the month at 8');
      const preview = page.locator('.schedule-preview');
      await preview.getByText('on the first Monday of every month at 08:00 (America/New_York)').waitFor();
      expect(await preview.textContent()).toMatch(/cron 0 8 \* \* 1#1/);
      expect((await preview.textContent())!.split('·').length).toBeGreaterThanOrEqual(5); // five next fires
      await savePicture(page, path.join(ARTIFACTS, 'schedule-editor.png'));
      await page.getByRole('button', { name: 'Save schedule' }).click();
      await page.locator('li[data-card-id="report"] .card-note.schedule').waitFor();
      // The inspector shows the supervisor's record: the next five fires and the (empty) history.
      await page.locator('.schedule-next').waitFor();
      await page.getByText('History (0)').waitFor();
      await savePicture(page, path.join(ARTIFACTS, 'schedule-saved.png'));
    } finally {
      await browser.close();
    }
    const text = readFileSync(server.cardFile('report.md'), 'utf8');
    expect(text).toMatch(
      /schedule:\n\s+text: on the first Monday of the month at 8\n\s+timezone: America\/New_York/,
    );
    const row = await waitUntil(
      'registered with the supervisor',
      async () => (await schedulesCli(server!)).report,
    );
    expect(row.next).toHaveLength(5);
  });
});
