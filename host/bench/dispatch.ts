/**
 * Scheduler dispatch overhead: 1,000 queued `command` cards; for the first N dispatches, the time from
 * a slot freeing (a run's end seen by the scheduler) to the next launch request being sent.
 * Run through host/bench/run.mjs (it bundles this file). Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import { openBoard } from '../src/core/open-board.ts';
import { SupervisorClient } from '../src/core/supervisor-client.ts';

const CARDS = Number(process.env.CARDS ?? 1000);
const SAMPLE = Number(process.env.SAMPLE ?? 120);
const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-'));
const project = path.join(root, 'project');
mkdirSync(path.join(project, 'cards'), { recursive: true });
mkdirSync(path.join(project, 'workspace'));
writeFileSync(
  path.join(project, 'config.yaml'),
  'version: 1\nscheduler: { maxConcurrency: 2 }\nflows:\n  shell: { runner: command, cap: 2 }\n',
);
for (let i = 0; i < CARDS; i++)
  writeFileSync(
    path.join(project, 'cards', `c${String(i).padStart(4, '0')}.md`),
    `---\nid: c${i}\ntitle: card ${i}\nflow: shell\nworkspace: ./workspace\ncommand: "true"\nstatus: queued\nrank: ${i}\n---\n`,
  );
const paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
createGrant(paths, path.join(project, 'workspace'));
process.env.RUNBOARD_HOME = paths.root;

const samples: number[] = [];
const t0 = performance.now();
const service = await openBoard(project, paths);
const opened = performance.now() - t0;
await new Promise<void>((resolve) => {
  service.scheduler.on('dispatch', ({ sinceFreeMs }) => {
    if (sinceFreeMs > 0) samples.push(sinceFreeMs);
    if (samples.length >= SAMPLE) resolve();
  });
});
service.scheduler.stop();
const wall = performance.now() - t0;
samples.sort((a, b) => a - b);
const q = (p: number): number => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!;
console.log(
  JSON.stringify({
    bench: 'scheduler-dispatch',
    queuedCards: CARDS,
    openMs: Math.round(opened),
    dispatches: samples.length,
    medianMs: +q(0.5).toFixed(2),
    p95Ms: +q(0.95).toFixed(2),
    maxMs: +samples[samples.length - 1]!.toFixed(2),
    wallS: +(wall / 1000).toFixed(1),
  }),
);
// the board first: an open board brings a supervisor that went away back
await service.close();
const c = await SupervisorClient.connect(paths);
await c.shutdown(true).catch(() => undefined);
c.close();
await new Promise((r) => setTimeout(r, 500));
rmSync(root, { recursive: true, force: true });
process.exit(0);
