/**
 * Benchmark of the recorder while a window is dragged (decision 140; docs/bench-desktop.md, "Session
 * 21: masks between the events"): a GTK form with a password field goes through `places` places (a
 * drag: 1 px right and down each, then back, a place every 10 ms) with no input event during it, then
 * one click and the stop. Per run: the recording process's CPU time during the drag (every thread:
 * the recorder's, JavaScript's), the stop's wall time (the video's masking re-encode included), and
 * the video's masked rectangles after merging.
 *   node bench/recorder-drag.mjs [runs, default 3] [places, default 300]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { desktop, Recording } from '../native/src/index.ts';
import { DesktopSession, findElement, sleep } from '../tests/desktop/session.ts';

const RUNS = Number(process.argv[2] ?? 3);
const PLACES = Number(process.argv[3] ?? 300);
const TITLE = 'Runboard Drag Bench';

async function main(): Promise<void> {
  const s = await DesktopSession.start();
  const out = mkdtempSync(path.join(os.tmpdir(), 'runboard-bench-drag-'));
  try {
    console.log(`bench: load average before ${os.loadavg()[0]!.toFixed(1)}; ${PLACES} places per drag`);
    for (let run = 1; run <= RUNS; run++) {
      const half = Math.floor(PLACES / 2);
      const places = Array.from({ length: PLACES }, (_, i) => (i < half ? i : PLACES - i)).map(
        (d) => `${d},${d}`,
      );
      const form = await s.startForm(`${TITLE} ${run}`, {}, [
        ...['--x', '0', '--y', '0', '--path-on-usr2', places.join(';')],
      ]);
      await findElement(`${TITLE} ${run}`, 'password text', 'Password');
      const rec = await Recording.start({ dir: out, display: s.env.DISPLAY!, video: { mic: 'none' } });
      await rec.idle();
      const cpu0 = process.cpuUsage();
      const t0 = Date.now();
      for (let i = 0; i < PLACES; i++) {
        process.kill(form.pid, 'SIGUSR2');
        await sleep(10);
      }
      await sleep(300);
      const dragMs = Date.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      await desktop.click(1200, 20);
      await rec.idle();
      const t1 = Date.now();
      const summary = await rec.stop();
      const stopMs = Date.now() - t1;
      console.log(
        `  run ${run}: drag ${dragMs} ms, CPU during it ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms; ` +
          `stop ${stopMs} ms; video masked ${summary.video?.masked ?? 0} rectangles, complete ${summary.video?.complete}`,
      );
      process.kill(form.pid, 'SIGTERM');
      await sleep(300);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
    await s.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
