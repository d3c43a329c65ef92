// Screen video benchmark: disk per minute of video and the CPU of ffmpeg (x11grab + libx264
// ultrafast, 15 fps) while it records, on a still screen and on a screen that keeps changing (the
// GTK form being typed into and the pointer moving), no microphone (the test desktop has no sound
// server). Run through `node native/bench/run.mjs video`, which starts a test desktop around it.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { desktop } from '../src/desktop/desktop.ts';
import { ScreenVideo } from '../src/desktop/video.ts';

const repo = path.resolve(process.argv[3] ?? '.');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-bench-video-'));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const SECONDS = Number(process.env.VIDEO_BENCH_SECONDS ?? 20);

/** CPU seconds (user + system) of a process from /proc (USER_HZ = 100). */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

async function run(name: string, busy: boolean): Promise<string> {
  const { source } = await desktop.capture({});
  const video = await ScreenVideo.start({
    file: path.join(tmp, `${name}.mp4`),
    display: process.env.DISPLAY!,
    region: source,
    mic: 'none',
  });
  const c0 = cpuOf(video.pid!);
  const t0 = Date.now();
  let i = 0;
  while (Date.now() - t0 < SECONDS * 1000) {
    if (busy) {
      await desktop.move(100 + ((i * 37) % 600), 100 + ((i * 23) % 400));
      await desktop.type(i % 10 === 9 ? '\b'.repeat(9) : String.fromCharCode(97 + (i % 26)));
    }
    i++;
    await sleep(100);
  }
  const cpu = cpuOf(video.pid!) - c0;
  const secs = (Date.now() - t0) / 1000;
  const r = await video.stop();
  const mbPerMin = (r.bytes / 1024 ** 2 / secs) * 60;
  return `| ${name} | ${source[2]}x${source[3]} | ${secs.toFixed(0)} | ${mbPerMin.toFixed(2)} | ${((cpu / secs) * 100).toFixed(0)} % |`;
}

const form = spawn(
  '/usr/bin/python3',
  [path.join(repo, 'tests/fixtures/desktop/form_app.py'), '--title', 'Bench Video'],
  {
    stdio: 'ignore',
  },
);
try {
  await sleep(2000);
  const [w] = await desktop.listWindows({ title: 'Bench Video' });
  if (w) await desktop.focus({ windowId: w.id });
  const rows = [await run('still screen', false), await run('typing + pointer', true)];
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}\n`,
  );
  console.log('| screen | size | seconds | MB per minute | ffmpeg CPU (share of one core) |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(r);
} finally {
  form.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
