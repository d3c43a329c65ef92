/**
 * Idle CPU of a supervisor holding 1,000 schedules, against the same supervisor holding none: the
 * schedule book keeps one timer (the soonest fire of all, re-armed at least each minute), not one per
 * card, so idle CPU should not change. Also: how long `schedule/set` of 1,000 and `schedule/list` take.
 *   node bench/run.mjs bench/schedules.ts [-- seconds]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { statePaths } from '@runboard/supervisor/paths';
import { call, ListSchedules, SetSchedules, type ScheduleSpec } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../host/src/core/supervisor-client.ts';

const seconds = Number(process.argv[2] ?? 20);
const TICK = 100; // clock ticks per second (USER_HZ)

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICK; // utime + stime
}

async function idle(pid: number): Promise<number> {
  const before = cpuMs(pid);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return cpuMs(pid) - before;
}

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-sched-'));
const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
delete env.NODE_EXTRA_CA_CERTS;
const paths = statePaths(env);
const sv = spawn(process.execPath, [path.join(process.env.RUNBOARD_DIST ?? 'dist', 'supervisor.mjs')], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
await new Promise<void>((resolve) =>
  sv.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()),
);
const client = await SupervisorClient.connect(paths);
try {
  await new Promise((r) => setTimeout(r, 2000)); // start-up settles
  const none = await idle(sv.pid!);

  const crons = ['0 9 * * 1-5', '*/15 * * * *', '0 */2 * * *', '30 2 * * *', '0 8 * * 1#1', '0 23 L * *'];
  const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Australia/Lord_Howe'];
  const schedules: ScheduleSpec[] = Array.from({ length: 1000 }, (_, i) => ({
    cardPath: path.join(root, 'cards', `card-${i}.md`),
    cardId: `card-${i}`,
    title: `Card ${i}`,
    cron: crons[i % crons.length]!,
    timezone: zones[i % zones.length]!,
    text: 'bench',
    missed: 'latest_once',
    overlap: 'skip',
  }));
  let t = performance.now();
  await call(client.conn, SetSchedules, { project: root, schedules });
  const setMs = performance.now() - t;
  t = performance.now();
  const listed = await call(client.conn, ListSchedules, {});
  const listMs = performance.now() - t;
  if (listed.schedules.length !== 1000) throw new Error(`listed ${listed.schedules.length}`);
  await new Promise((r) => setTimeout(r, 2000));
  const thousand = await idle(sv.pid!);

  console.log(
    `supervisor idle CPU over ${seconds} s: ${none.toFixed(0)} ms with no schedules, ${thousand.toFixed(0)} ms with 1,000`,
  );
  console.log(
    `schedule/set of 1,000: ${setMs.toFixed(0)} ms; schedule/list of 1,000 (5 next fires each): ${listMs.toFixed(0)} ms`,
  );
} finally {
  client.close();
  sv.kill('SIGTERM');
  await new Promise((r) => sv.once('exit', r));
  rmSync(root, { recursive: true, force: true });
}
