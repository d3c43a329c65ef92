/**
 * `runboard schedules`: the schedules the supervisor keeps (next fire times, fires waiting to start
 * and why, runs started while no board was open, the last decision and the card's last run), and `--check` to try a phrase before saving it.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { call, ListProjects, ListSchedules, type RefusedSchedule } from '@runboard/supervisor/protocol';
import { nextFires, resolveSchedule } from '@runboard/project/schedule';
import { localZone } from '../core/schedules.ts';
import { SupervisorClient } from '../core/supervisor-client.ts';

export const SCHEDULES_USAGE = `schedules [--project DIR] [--json]       scheduled cards (and refused schedules, with why): next fires, last outcome
  schedules --check "<phrase>" [--timezone Z] [--from TIME]  what a phrase (or cron) means, its next five fires (after TIME)`;

/** A mistake in the schedules command's options. */
export class SchedulesUsageError extends Error {}

const local = (iso: string): string => new Date(iso).toLocaleString('sv-SE').slice(0, 16);

/** --from: an ISO date and time (a time without zone is this machine's), or now. */
function fromTime(given: string | undefined): number {
  if (given === undefined) return Date.now();
  const t = Date.parse(given);
  if (!/^\d{4}-\d{2}-\d{2}/.test(given) || Number.isNaN(t))
    throw new SchedulesUsageError(
      `--from takes a date and time such as 2026-01-05T08:00 (this machine's time) or 2026-01-05T08:00Z (got "${given}")`,
    );
  return t;
}

function check(phrase: string, zone: string | undefined, json: boolean, from: number): number {
  const r = resolveSchedule(zone ? { text: phrase, timezone: zone } : phrase, localZone());
  if (!r.ok) {
    if (json) process.stdout.write(JSON.stringify({ ok: false, error: r.error }) + '\n');
    else process.stderr.write(`runboard: ${r.error}\n`);
    return 2;
  }
  const next = nextFires(r.value.cron, r.value.timezone, from, 5).map((t) => new Date(t).toISOString());
  if (json) process.stdout.write(JSON.stringify({ ok: true, ...r.value, next }) + '\n');
  else
    process.stdout.write(
      `${r.value.text}\ncron: ${r.value.cron}  zone: ${r.value.timezone}\nnext:\n${next.map((t) => `  ${t}  (${local(t)} here)`).join('\n')}\n`,
    );
  return 0;
}

export async function cmdSchedules(args: string[], paths: StatePaths): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      project: { type: 'string' },
      json: { type: 'boolean' },
      check: { type: 'string' },
      timezone: { type: 'string' },
      from: { type: 'string' },
    },
  });
  if (values.check !== undefined)
    return check(values.check, values.timezone, values.json ?? false, fromTime(values.from));
  if (values.from !== undefined) throw new SchedulesUsageError('--from goes with --check "<phrase>"');
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  try {
    const project = values.project === undefined ? undefined : path.resolve(values.project);
    // The registered projects' cards are read again first: a schedule added since shows (or its refusal).
    const { projects } = await call(client.conn, ListProjects, {});
    const refused: (RefusedSchedule & { project: string })[] = [];
    const unreadable: string[] = [];
    for (const p of projects) {
      if (project !== undefined && p.project !== project) continue;
      if (p.error) unreadable.push(p.error);
      for (const r of p.refused) refused.push({ ...r, project: p.project });
    }
    const { schedules } = await call(client.conn, ListSchedules, project ? { project } : {});
    const rows = [];
    for (const s of schedules) {
      const { runs } = await client.list({ cardPath: s.cardPath, limit: 1 });
      const last = s.history.at(-1);
      rows.push({
        ...s,
        lastDecision: last ?? null,
        lastRun: runs[0]?.card.path === s.cardPath ? { runId: runs[0].runId, status: runs[0].status } : null,
      });
    }
    if (values.json) {
      for (const r of rows) process.stdout.write(JSON.stringify(r) + '\n');
      for (const r of refused) process.stdout.write(JSON.stringify({ refused: true, ...r }) + '\n');
      return 0;
    }
    for (const u of unreadable) process.stderr.write(`runboard: ${u}\n`);
    for (const r of refused)
      process.stdout.write(
        `${r.title ?? path.basename(r.cardPath)}  ${path.relative(process.cwd(), r.cardPath) || r.cardPath}\n` +
          `  refused, never fires: ${r.error}\n`,
      );
    if (!rows.length) {
      process.stdout.write(
        refused.length
          ? 'no other scheduled cards\n'
          : 'no scheduled cards (a card schedules itself with `schedule:` in its front matter; the supervisor reads the cards of projects made with `runboard init`, others once their board has opened)\n',
      );
      return 0;
    }
    for (const r of rows) {
      const last = r.lastDecision ? `${r.lastDecision.decision} (${r.lastDecision.reason})` : 'not fired yet';
      const run = r.lastRun ? `, last run ${r.lastRun.runId} ${r.lastRun.status}` : '';
      process.stdout.write(
        `${r.title}  ${path.relative(process.cwd(), r.cardPath) || r.cardPath}\n` +
          `  ${r.text}  cron ${r.cron}\n` +
          `  next: ${r.next.map(local).join(', ') || 'never'}\n` +
          (r.pending.length
            ? `  waiting to start: ${r.pending.map(local).join(', ')}${r.waiting ? ` (${r.waiting})` : ''}\n`
            : '') +
          (r.started.length
            ? `  started with no board open: ${r.started.map((x) => x.runId).join(', ')} (the board shows them when it opens)\n`
            : '') +
          `  last: ${last}${run}\n`,
      );
    }
    return 0;
  } finally {
    client.close();
  }
}
