// Recorder benchmark: what recording costs while a person works. (1) CPU: this process (the recorder
// thread, frame conversion) and the X server (the GetImage requests), idle, recorder off vs on.
// (2) The latency the recorder adds to input: an injected key (XTest) until another X client (the
// key watcher, on its own connection) sees it, recorder off vs on. (3) Disk: bytes per step of a
// scripted session on the GTK form, and per minute at a person's pace. Run through
// `node native/bench/run.mjs recorder`, which starts a test desktop around it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { desktop } from '../src/desktop/desktop.ts';
import { Recording } from '../src/desktop/recording.ts';
import { allElements } from '../src/desktop/compact.ts';

const repo = path.resolve(process.argv[3] ?? '.');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-bench-rec-'));
const children: ChildProcess[] = [];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const TICK = 100; // USER_HZ: /proc times are in 1/100 s

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p * (s.length - 1)))]!;
}

/** CPU seconds (user + system) of a process from /proc. */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
}

/** The X server of $DISPLAY: the Xvfb/Xorg process holding its listening socket (-displayfd hides :N). */
function xServerPid(): number {
  const n = process.env.DISPLAY!.replace(/^:/, '').split('.')[0];
  const inodes = new Set(
    readFileSync('/proc/net/unix', 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(`/tmp/.X11-unix/X${n}`))
      .map((l) => l.trim().split(/\s+/)[6]),
  );
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (!/^(Xvfb|Xorg)$/.test(readFileSync(`/proc/${e}/comm`, 'utf8').trim())) continue;
      for (const fd of readdirSync(`/proc/${e}/fd`)) {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${e}/fd/${fd}`));
        if (m && inodes.has(m[1])) return Number(e);
      }
    } catch {
      // gone, or not ours to read
    }
  }
  throw new Error(`no X server process for ${process.env.DISPLAY}`);
}

/** CPU used over `ms` by this process and the X server, as a share of one core. */
async function cpuOver(ms: number): Promise<{ self: number; server: number }> {
  const x = xServerPid();
  const s0 = process.cpuUsage();
  const x0 = cpuOf(x);
  await sleep(ms);
  const s = process.cpuUsage(s0);
  return { self: (s.user + s.system) / 1000 / ms, server: ((cpuOf(x) - x0) * 1000) / ms };
}

/** Injected key → seen by the key watcher, ms, n times. */
async function keyLatency(n: number): Promise<number[]> {
  let resolveSeen: (() => void) | undefined;
  const watcher = await desktop.watchKeys(() => resolveSeen?.(), { keys: ['F19'] });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const seen = new Promise<void>((r) => (resolveSeen = r));
    const t = performance.now();
    await desktop.key('F19');
    await seen;
    out.push(performance.now() - t);
    await sleep(7 + (i % 13)); // spread over the recorder's frame cycle
  }
  watcher.stop();
  return out;
}

async function main(): Promise<void> {
  const form = spawn(
    '/usr/bin/python3',
    [path.join(repo, 'tests/fixtures/desktop/form_app.py'), '--title', 'Bench Form'],
    {
      stdio: 'ignore',
    },
  );
  children.push(form);
  for (let i = 0; i < 200; i++) {
    const w = (await desktop.listWindows({ title: 'Bench Form' }))[0];
    if (w && (await desktop.read({ windowId: w.id }).catch(() => undefined))?.elements.length) break;
    await sleep(50);
  }
  const rows: string[] = [];
  const idleOff = await cpuOver(3000);
  const latOff = await keyLatency(150);
  const plain = await Recording.start({ dir: tmp, border: false });
  await sleep(500);
  const idlePlain = await cpuOver(3000);
  const latPlain = await keyLatency(150);
  await plain.stop();
  // With the red border (the default): each frame's border strips are repainted from the windows below.
  const rec = await Recording.start({ dir: tmp });
  await sleep(500);
  const idleOn = await cpuOver(3000);
  const latOn = await keyLatency(150);
  await rec.stop();
  const fast = await Recording.start({ dir: tmp, frameIntervalMs: 50 });
  await sleep(500);
  const idleFast = await cpuOver(3000);
  const latFast = await keyLatency(150);
  await fast.stop();

  rows.push(
    '| recorder | this process, CPU (share of a core) | X server, CPU | key → other client p50 | p95 |',
  );
  rows.push('|---|---|---|---|---|');
  const row = (name: string, c: { self: number; server: number }, l: number[]): void => {
    rows.push(
      `| ${name} | ${(c.self * 100).toFixed(1)}% | ${(c.server * 100).toFixed(1)}% | ${pct(l, 0.5).toFixed(2)} ms | ${pct(l, 0.95).toFixed(2)} ms |`,
    );
  };
  row('off', idleOff, latOff);
  row('on, no border (default frames: on change, at most every 50 ms)', idlePlain, latPlain);
  row('on, with the border (the default)', idleOn, latOn);
  row('on, frameIntervalMs 50', idleFast, latFast);
  rows.push('');
  rows.push(
    `Added input latency, p50 ratio on/off: ${(pct(latOn, 0.5) / pct(latOff, 0.5)).toFixed(2)} (default), ${(pct(latFast, 0.5) / pct(latOff, 0.5)).toFixed(2)} (50 ms); p95 ratio ${(pct(latOn, 0.95) / pct(latOff, 0.95)).toFixed(2)} / ${(pct(latFast, 0.95) / pct(latOff, 0.95)).toFixed(2)}.`,
  );

  // Disk: a scripted session (clicks and words) with the whole recording service.
  const els = allElements((await desktop.read({ title: 'Bench Form' })).elements);
  const at = (role: string, name: string): [number, number] => {
    const e = els.find((x) => x.role === role && x.name === name)!;
    return [e.bounds[0] + e.bounds[2] / 2, e.bounds[1] + e.bounds[3] / 2].map(Math.floor) as [number, number];
  };
  const session = await Recording.start({ dir: tmp });
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < 5; i++) {
    await desktop.click(...at('text', 'Name'));
    await sleep(150);
    await desktop.type(`word${i}`, { delayMs: 20 });
    await sleep(150);
    await desktop.click(...at('push button', 'Submit'));
    await sleep(150);
  }
  const activeMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const summary = await session.stop();
  const perStep = summary.bytes / summary.steps;
  rows.push('');
  rows.push(
    '| scripted session | steps | bytes | bytes per step | MB per minute at 30 steps/min | this process, CPU while active |',
  );
  rows.push('|---|---|---|---|---|---|');
  rows.push(
    `| GTK form, PNG, 1280x800 | ${summary.steps} | ${summary.bytes} | ${Math.round(perStep)} | ${((perStep * 30) / 1e6).toFixed(1)} | ${(((cpu.user + cpu.system) / 1000 / activeMs) * 100).toFixed(0)}% |`,
  );
  console.log(rows.join('\n'));
}

try {
  await main();
} finally {
  for (const c of children) c.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
