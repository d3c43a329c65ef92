/**
 * A bare Xvfb on a display number of its own (700–899, free of locks and sockets), resolved once its
 * socket is there. Not Xvfb's -displayfd: it picks the lowest free number, which other X servers
 * starting at the same moment (test files run side by side) pick too, and a display it reported was
 * seen refused for seconds (CI, 2026-11-23). The same picking as scripts/desktop-session.sh.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';

export async function startBareXvfb(args: string[] = []): Promise<{ xvfb: ChildProcess; display: string }> {
  let n = 700 + Math.floor(Math.random() * 200);
  for (let tries = 0; tries < 40; tries++, n = 700 + ((n - 699) % 200)) {
    if (existsSync(`/tmp/.X${n}-lock`) || existsSync(`/tmp/.X11-unix/X${n}`)) continue;
    const xvfb = spawn('Xvfb', [`:${n}`, '-nolisten', 'tcp', '-noreset', ...args], { stdio: 'ignore' });
    const t0 = Date.now();
    for (;;) {
      if (xvfb.exitCode !== null || xvfb.signalCode !== null) break; // taken meanwhile: the next number
      if (existsSync(`/tmp/.X11-unix/X${n}`)) return { xvfb, display: `:${n}` };
      if (Date.now() - t0 > 10_000) {
        xvfb.kill('SIGKILL');
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error('no free display number for a bare Xvfb between :700 and :899');
}
