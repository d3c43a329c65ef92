/**
 * A bare Xvfb on a display number of its own (700–899, free of live servers), resolved once the server
 * says it listens (`-displayfd` with the number given: it writes that number when ready). Not Xvfb's own
 * choice of number (-displayfd alone): it picks the lowest free number, which other X servers starting
 * at the same moment (test files run side by side) pick too, and a display it reported was seen refused
 * for seconds (CI, 2026-11-23). The same picking as scripts/desktop-session.sh.
 * A number held only by a dead server's lock (a killed Xvfb leaves its lock and socket) is free: Xvfb
 * removes such a lock and socket. Counting those as taken filled the range on a machine that runs the
 * suite all day (179 of 200 numbers, and "no free display number" in a loaded pass, session 15).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

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

export async function startBareXvfb(args: string[] = []): Promise<{ xvfb: ChildProcess; display: string }> {
  let n = 700 + Math.floor(Math.random() * 200);
  for (let tries = 0; tries < 40; tries++, n = 700 + ((n - 699) % 200)) {
    if (displayHeld(n)) continue;
    // Ready when the server says so: with its number given, `-displayfd` writes that number once its
    // sockets listen. It used to be "a socket whose inode is not the dead server's", but a new socket
    // can get the dead one's inode number back: the wait then lasted until a 10 s kill and the next
    // number (tests/integration/reads' beforeAll timed out so, alone at load 2, session 18).
    const xvfb = spawn('Xvfb', [`:${n}`, '-nolisten', 'tcp', '-noreset', '-displayfd', '3', ...args], {
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    });
    const ready = await new Promise<boolean>((resolve) => {
      let said = '';
      xvfb.stdio[3]!.on('data', (d: Buffer) => {
        said += d.toString();
        if (said.includes('\n')) resolve(true);
      });
      // ended first: the number was taken meanwhile (the next one), or the server could not start
      xvfb.once('exit', () => resolve(false));
    });
    if (ready) return { xvfb, display: `:${n}` };
  }
  throw new Error('no free display number for a bare Xvfb between :700 and :899');
}
