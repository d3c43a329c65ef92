/**
 * `runboard schedules`: the schedules the supervisor keeps (next fire times, fires waiting to start
 * and why, runs started while no board was open, the last decision and the card's last run), and `--check` to try a phrase before saving it.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { call, ListSchedules } from '@runboard/supervisor/protocol';
import { nextFires, resolveSchedule } from '@runboard/supervisor/schedule';
import { localZone } from '../core/schedules.ts';
import { SupervisorClient } from '../core/supervisor-client.ts';

export const SCHEDULES_USAGE = `schedules [--project DIR] [--json]       scheduled cards: next fire times, last outcome
  schedules --check "<phrase>" [--timezone Z]  what a schedule phrase (or cron) means, and its next five fires`;

const local = (iso: string): string => new Date(iso).toLocaleString('sv-SE').slice(0, 16);

function check(phrase: string, zone: string | undefined, json: boolean): number {
  const r = resolveSchedule(zone ? { text: phrase, timezone: zone } : phrase, localZone());
  if (!r.ok) {
    if (json) process.stdout.write(JSON.stringify({ ok: false, error: r.error }) + '\n');
    else process.stderr.write(`runboard: ${r.error}\n`);
    return 2;
  }
  const next = nextFires(r.value.cron, r.value.timezone, Date.now(), 5).map((t) => new Date(t).toISOString());
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
    },
  });
  if (values.check !== undefined) return check(values.check, values.timezone, values.json ?? false);
  const client = await SupervisorClient.connect(paths, { autoStart: true });
  try {
    const project = values.project === undefined ? undefined : path.resolve(values.project);
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
      return 0;
    }
    if (!rows.length) {
      process.stdout.write(
        'no scheduled cards (a card schedules itself with `schedule:` in its front matter)\n',
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
