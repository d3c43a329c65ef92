/**
 * A bare Xvfb on a display number of its own (700–899, free of live servers), resolved once its own
 * socket is there. Not Xvfb's -displayfd: it picks the lowest free number, which other X servers
 * starting at the same moment (test files run side by side) pick too, and a display it reported was
 * seen refused for seconds (CI, 2026-11-23). The same picking as scripts/desktop-session.sh.
 * A number held only by a dead server's lock (a killed Xvfb leaves its lock and socket) is free: Xvfb
 * removes such a lock, and the socket before it listens; so the socket counts once it is a new one.
 * Counting those as taken filled the range on a machine that runs the suite all day (179 of 200
 * numbers, and "no free display number" in a loaded pass, session 15).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';

/** Whether a display number is held: by a live server's lock, or by a socket without a lock. */
export function displayHeld(n: number): boolean {
  const lock = `/tmp/.X${n}-lock`;
  if (!existsSync(lock)) return existsSync(`/tmp/.X11-unix/X${n}`);
  try {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    if (!(pid > 0)) return true; // being written
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ESRCH'; // ESRCH: a dead server's lock
  }
}

/** The socket file's inode, to tell the new server's socket from a dead one's. */
export function socketInode(n: number): number | undefined {
  try {
    return statSync(`/tmp/.X11-unix/X${n}`).ino;
  } catch {
    return undefined;
  }
}

export async function startBareXvfb(args: string[] = []): Promise<{ xvfb: ChildProcess; display: string }> {
  let n = 700 + Math.floor(Math.random() * 200);
  for (let tries = 0; tries < 40; tries++, n = 700 + ((n - 699) % 200)) {
    if (displayHeld(n)) continue;
    const stale = socketInode(n);
    const xvfb = spawn('Xvfb', [`:${n}`, '-nolisten', 'tcp', '-noreset', ...args], { stdio: 'ignore' });
    // Until its socket is there or it ended (the number taken meanwhile): no deadline of its own. A
    // server slower than 10 s to start on a loaded machine used to be killed and the next number tried,
    // as slow, until the caller's hook timed out (a possible cause, not confirmed, of
    // tests/integration/reads' beforeAll timing out with two suites at once in session 17). One that
    // never starts is the caller's timeout to report.
    for (;;) {
      if (xvfb.exitCode !== null || xvfb.signalCode !== null) break; // taken meanwhile: the next number
      const ino = socketInode(n);
      if (ino !== undefined && ino !== stale) return { xvfb, display: `:${n}` };
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error('no free display number for a bare Xvfb between :700 and :899');
}
