/**
 * Benchmark of the recorder under load (issue 30; docs/bench-desktop.md, "Recorder under load"): a
 * scripted person fills the GTK form at a person's pace (300 ms between actions, never waiting for the
 * recorder) while N CPU hogs per core run, and stops the recording at once after the last action.
 * Per case: the recorder's lag (how long after an input event it was handled, less the quickest event:
 * the recording's own lagMs, p50 and p99), steps lost (of the 7 the person took), steps misattributed
 * (a click's element or a typed word's focused field not the one it went to), and how many recordings
 * said they could not keep up (keptUp: false).
 *   node bench/recorder-load.mjs [runs per case] [hogs per core, comma-separated; default 0,2,4,8]
 * It prints the machine's load average as it was before the bench started anything.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { desktop, Recording, type Element, type ManifestStep } from '../native/src/index.ts';
import { DesktopSession, findElement, sleep } from '../tests/desktop/session.ts';

const RUNS = Number(process.argv[2] ?? 3);
const PER_CORE = (process.argv[3] ?? '0,2,4,8').split(',').map(Number);
const TITLE = 'Runboard Recorder Bench';
const CORES = os.availableParallelism();
const centre = (e: Element): [number, number] => [
  e.bounds[0] + Math.floor(e.bounds[2] / 2),
  e.bounds[1] + Math.floor(e.bounds[3] / 2),
];
const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

/** The steps the person takes, and where each went (element for clicks, focused field for keys). */
const EXPECTED: { action: Record<string, unknown>; target: string }[] = [
  { action: { type: 'click' }, target: 'Name' },
  { action: { type: 'type', text: 'Ada Lovelace' }, target: 'Name' },
  { action: { type: 'press', key: 'Tab' }, target: 'Name' }, // a Tab belongs to the field it left
  { action: { type: 'type', text: '42.50' }, target: 'Email' },
  { action: { type: 'click' }, target: 'Password' },
  { action: { type: 'type', secret: true }, target: 'Password' },
  { action: { type: 'click' }, target: 'Submit' },
];

function score(steps: ManifestStep[]): { lost: number; wrong: number } {
  let lost = 0;
  let wrong = 0;
  let j = 0;
  for (const want of EXPECTED) {
    const k = steps.findIndex(
      (s, i) =>
        i >= j &&
        Object.entries(want.action).every(([key, v]) => (s.action as Record<string, unknown>)[key] === v),
    );
    if (k < 0) {
      lost++;
      continue;
    }
    j = k + 1;
    const s = steps[k]!;
    const at = s.action.type === 'click' ? s.element?.name : s.focus?.name;
    if (at !== want.target) wrong++;
  }
  return { lost, wrong };
}

async function once(out: string, hogs: number) {
  const name = await findElement(TITLE, 'text', 'Name');
  const password = await findElement(TITLE, 'password text', 'Password');
  const submit = await findElement(TITLE, 'push button', 'Submit');
  const procs: ChildProcess[] = [];
  for (let i = 0; i < hogs; i++) procs.push(spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  try {
    const rec = await Recording.start({ dir: out, border: false });
    const pace = (): Promise<void> => sleep(300); // a person does not wait for the recorder
    await pace();
    await desktop.click(...centre(name));
    await pace();
    await desktop.key('ctrl+a');
    await desktop.type('Ada Lovelace', { delayMs: 15 });
    await pace();
    await desktop.key('Tab');
    await pace();
    await desktop.key('ctrl+a');
    await desktop.type('42.50', { delayMs: 15 });
    await pace();
    await desktop.click(...centre(password));
    await pace();
    await desktop.type('s3cret', { delayMs: 15 });
    await pace();
    await desktop.click(...centre(submit));
    const summary = await rec.stop(); // at once after the last action
    const steps = readFileSync(path.join(summary.dir, 'manifest.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ManifestStep)
      // the ctrl+a presses are the script's, not part of the scored steps
      .filter((s) => !(s.action.type === 'press' && s.action.key === 'ctrl+a'));
    return { summary, ...score(steps) };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
  }
}

async function main(): Promise<void> {
  // The machine's load before the bench adds any (its desktop, its load processes): read after them, the
  // 1-minute average is mostly the bench's own hogs.
  const before = os.loadavg();
  console.error('bench: starting the test desktop');
  const s = await DesktopSession.start();
  const out = mkdtempSync(path.join(os.tmpdir(), 'runboard-recorder-bench-'));
  try {
    await s.startForm(TITLE);
    await desktop.focus({ title: TITLE });
    const rows: string[] = [];
    for (const perCore of PER_CORE) {
      const lags: { p50: number[]; p99: number[] } = { p50: [], p99: [] };
      let lost = 0;
      let wrong = 0;
      let behind = 0;
      for (let r = 0; r < RUNS; r++) {
        const x = await once(out, perCore * CORES);
        lags.p50.push(x.summary.lagMs.p50);
        lags.p99.push(x.summary.lagMs.p99);
        lost += x.lost;
        wrong += x.wrong;
        if (!x.summary.keptUp) behind++;
        console.error(
          `  ${perCore}x/core run ${r + 1}: lag p50 ${x.summary.lagMs.p50} p99 ${x.summary.lagMs.p99} ms, lost ${x.lost}, misattributed ${x.wrong}, keptUp ${x.summary.keptUp}`,
        );
      }
      const n = RUNS * EXPECTED.length;
      rows.push(
        `| ${perCore === 0 ? 'quiet' : `${perCore}× hogs per core (${perCore * CORES})`} | ${Math.round(quantile(lags.p50, 0.5))} | ${Math.round(Math.max(...lags.p99))} | ${lost}/${n} | ${wrong}/${n} | ${behind}/${RUNS} |`,
      );
    }
    const [one, five] = before.map((x) => x.toFixed(1));
    console.log(
      `recorder under load: ${RUNS} runs per case, ${CORES} cores, load before (1/5 min, before the bench started anything): ${one}/${five}, after: ${os.loadavg()[0]!.toFixed(1)}`,
    );
    console.log(
      '| case | lag p50 (median of runs), ms | lag p99 (worst run), ms | steps lost | steps misattributed | said it fell behind |',
    );
    console.log('|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    rmSync(out, { recursive: true, force: true });
    await s.stop();
  }
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
