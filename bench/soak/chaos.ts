/**
 * The soak's chaos: a seeded schedule of faults, the processes they hit (found in /proc by what they
 * run and the soak's state root), a TCP proxy in front of the scripted model server that can stall,
 * and a filler for the state root's own small filesystem.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** mulberry32: a small seeded PRNG, so a seed gives the same schedule of faults again. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const FAULT_KINDS = [
  'kill-worker',
  'kill-jail',
  'kill-xserver',
  'kill-supervisor',
  'kill-board',
  'disk-full',
  'model-stall',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** How often each kind comes, relative: the processes whose death ends many runs at once come less. */
const WEIGHTS: Record<FaultKind, number> = {
  'kill-worker': 4,
  'kill-jail': 4,
  'kill-xserver': 3,
  'kill-supervisor': 1.2,
  'kill-board': 1.2,
  'disk-full': 1,
  'model-stall': 1,
};

export interface Fault {
  /** ms after the soak's start. */
  at: number;
  kind: FaultKind;
  /** Which of the candidate processes (a fraction: index = floor(pick * candidates)). */
  pick: number;
  /** How long a disk-full or model-stall lasts, ms. */
  holdMs: number;
}

/** The faults of a soak: exponential gaps of mean `meanGapMs`, kinds by WEIGHTS, all from `seed`. */
export function faultSchedule(seed: number, durationMs: number, meanGapMs: number): Fault[] {
  const r = rng(seed);
  const total = Object.values(WEIGHTS).reduce((a, b) => a + b, 0);
  const out: Fault[] = [];
  // the first fault after the board is up and some runs go
  for (
    let at = 15_000 + -Math.log(1 - r()) * meanGapMs;
    at < durationMs;
    at += -Math.log(1 - r()) * meanGapMs
  ) {
    let w = r() * total;
    const kind = FAULT_KINDS.find((k) => (w -= WEIGHTS[k]) < 0) ?? 'kill-worker';
    out.push({ at: Math.round(at), kind, pick: r(), holdMs: Math.round(5_000 + r() * 20_000) });
  }
  return out;
}

/** When this process started (clock ticks after boot, /proc/self/stat field 22). */
const SELF_START = ((): number => {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
})();

export type ProcKind = 'serve' | 'supervisor' | 'jail' | 'worker' | 'xserver' | 'app' | 'other';

export interface Proc {
  pid: number;
  /** When it started (clock ticks after boot): a pid is one process only with its start time. */
  start: number;
  kind: ProcKind;
  cmd: string;
}

/**
 * Is this very process still alive (not a zombie)? The pid alone does not say: pids wrap at pid_max
 * (32768 here) several times in a long soak on a busy machine, and an "orphaned Xvfb :100" at the end
 * of one was another process that had been given the pid of an X server killed 20 minutes before.
 */
export function stillRunning(p: Proc): boolean {
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, 'utf8');
    const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return after[0] !== 'Z' && Number(after[19]) === p.start;
  } catch {
    return false;
  }
}

function kindOf(argv: string[]): ProcKind {
  const exe = path.basename(argv[0] ?? '');
  const cmd = argv.join(' ');
  if (/^(Xvfb|Xorg|Xvnc)$/.test(exe)) return 'xserver';
  if (exe === 'runboard-jail' || cmd.includes('runboard-jail')) return 'jail';
  if (argv.some((a) => a.endsWith('supervisor.mjs'))) return 'supervisor';
  if (argv.some((a) => a.endsWith('worker.mjs'))) return 'worker';
  if (argv.some((a) => a.endsWith('runboard.mjs')) && argv.includes('serve')) return 'serve';
  if (cmd.includes('form_app.py')) return 'app';
  return 'other';
}

/**
 * The live processes of the soak: those whose command line or environment mentions `needle` (its root),
 * and their descendants (a jailed worker's environment is its own). A process whose parent is a jail
 * and which is not one itself is the run's worker (a command run's command, a Node worker).
 */
export function processesOf(needle: string): Proc[] {
  const all = new Map<number, { ppid: number; start: number; argv: string[]; mentions: boolean }>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (after[0] === 'Z') continue; // zombies hold nothing
      // Older than the soak: not one of its processes. Their command lines are not read: reading one
      // blocks while that process is stuck in a page fault (seen on this VM under I/O stalls).
      if (Number(after[19]) < SELF_START) continue;
      const raw = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      let env = '';
      try {
        env = readFileSync(`/proc/${d}/environ`, 'utf8');
      } catch {
        // not ours to read
      }
      const argv = raw.split('\0').filter(Boolean);
      all.set(Number(d), {
        ppid: Number(after[1]),
        start: Number(after[19]),
        argv,
        mentions: raw.includes(needle) || env.includes(needle),
      });
    } catch {
      // gone while we looked
    }
  }
  const ours = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      const e = all.get(p);
      if (!e) return false;
      if (e.mentions) return true;
      p = e.ppid;
    }
    return false;
  };
  const out: Proc[] = [];
  for (const [pid, e] of all) {
    if (!ours(pid)) continue;
    let kind = kindOf(e.argv);
    const parent = all.get(e.ppid);
    if (kind === 'other' && parent && kindOf(parent.argv) === 'jail') kind = 'worker';
    out.push({ pid, start: e.start, kind, cmd: e.argv.join(' ').slice(0, 200) });
  }
  return out;
}

/** Resident memory of a process, KiB (undefined when it is gone). */
export function rssKiB(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A TCP proxy to the scripted model server that can stall: while stalled, bytes stop flowing both ways
 * on every connection (open ones and new ones), as a provider that stops answering mid-stream.
 */
export class StallProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private stalled = false;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target);
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.pairs.add(pair);
      client.pipe(upstream);
      upstream.pipe(client);
      const end = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
      if (this.stalled) this.hold(pair);
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.port = (this.server.address() as net.AddressInfo).port;
    return `http://127.0.0.1:${this.port}`;
  }

  private hold([a, b]: [net.Socket, net.Socket]): void {
    a.unpipe(b);
    b.unpipe(a);
    a.pause();
    b.pause();
  }

  stall(on: boolean): void {
    if (on === this.stalled) return;
    this.stalled = on;
    for (const pair of this.pairs) {
      if (on) this.hold(pair);
      else {
        pair[0].pipe(pair[1]);
        pair[1].pipe(pair[0]);
      }
    }
  }

  close(): Promise<void> {
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The state root's own filesystem (tmpfs of `mb` MiB), mounted at `dir`; we are root. */
export function mountSmallFs(dir: string, mb: number): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m,mode=0700`, 'tmpfs', dir]);
}

export function unmountSmallFs(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'ignore' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
  }
}

/** Fills the filesystem of `dir` to the last block with one file; returns a function that frees it. */
export function fillDisk(dir: string): () => void {
  const file = path.join(dir, 'soak-filler');
  try {
    // fallocate as far as it goes, then dd fills the rest (tmpfs may refuse fallocate past the free space)
    const free = Number(
      execFileSync('df', ['--output=avail', '-B1', dir], { encoding: 'utf8' }).split('\n')[1],
    );
    if (free > 0) execFileSync('fallocate', ['-l', String(free), file], { stdio: 'ignore' });
  } catch {
    // fallocate refused: dd below fills it
  }
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=64k', 'oflag=append', 'conv=notrunc'], {
      stdio: 'ignore',
    });
  } catch {
    // "No space left on device": the point
  }
  return () => rmSync(file, { force: true });
}
