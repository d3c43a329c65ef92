/**
 * The soak (issue 34 item 1; a benchmark-style tool, not part of the suite's pass/fail): hundreds of
 * runs of mixed kinds flow through a real board (`runboard serve` and its supervisor) while a chaos
 * driver kills, at random moments from a seeded schedule, the supervisor, jails, workers, the board
 * server and private displays' X servers, fills the state root's own small filesystem for a while and
 * stalls the scripted model server. At the end it checks the invariants (docs/soak.md) and prints the
 * figures. Exit 0: every invariant held; 1: one broke (the seed and command repeat the schedule).
 *   npm run soak -- [--runs 300] [--minutes 10] [--seed N] [--gap 8] [--disk 256] [--concurrency 4] [--keep]
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import { workflowFileFor } from '@runboard/supervisor/protocol';
import { startModelServer } from '../../tests/fixtures/model-server/server.ts';
import {
  faultSchedule,
  fillDisk,
  FAULT_KINDS,
  mountSmallFs,
  processesOf,
  rssKiB,
  StallProxy,
  unmountSmallFs,
  type Fault,
  type FaultKind,
  stillRunning,
  type Proc,
  type ProcKind,
} from './chaos.ts';
import { REPO, soakCards, soakConfig, soakEpisodes, type SoakCard } from './cards.ts';
import { checkInvariants, type BoardCard, type Invariant, type RunRow } from './checks.ts';

const USAGE =
  'usage: npm run soak -- [--runs N] [--minutes M] [--seed S] [--gap SECONDS] [--disk MIB] [--concurrency C] [--keep]';
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '300' },
    minutes: { type: 'string', default: '10' },
    seed: { type: 'string' },
    gap: { type: 'string', default: '8' },
    disk: { type: 'string', default: '256' },
    concurrency: { type: 'string', default: '4' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
function whole(name: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) {
    console.error(`--${name} takes a number ≥ ${min} (got "${v}")\n${USAGE}`);
    process.exit(2);
  }
  return n;
}
const RUNS = Math.round(whole('runs', values.runs, 2));
const MINUTES = whole('minutes', values.minutes, 0.5);
const SEED = Math.round(whole('seed', values.seed ?? String(Date.now() % 1_000_000), 0));
const GAP_S = whole('gap', values.gap, 1);
const DISK_MB = Math.round(whole('disk', values.disk, 32));
const CONC = Math.round(whole('concurrency', values.concurrency, 1));
const CLI = path.join(REPO, 'dist', 'runboard.mjs');
if (!existsSync(CLI)) {
  console.error(
    `no ${CLI}: run the soak from the repository's root with \`npm run soak\` (it bundles dist/ first)`,
  );
  process.exit(2);
}
if (process.getuid?.() !== 0) {
  console.error('the soak mounts a small filesystem for the state root (to fill it): run it as root');
  process.exit(2);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const t0 = Date.now();
const since = (): string => `${((Date.now() - t0) / 1000).toFixed(1).padStart(7)}s`;
const log = (s: string): void => console.log(`${since()} ${s}`);

// ---- the project, its state root on its own small filesystem, the model server behind a stall proxy
const root = mkdtempSync(path.join(os.tmpdir(), 'rbsoak-'));
const home = path.join(root, 'home');
const project = path.join(root, 'project');
const workspace = path.join(project, 'workspace');
mkdirSync(home);
mountSmallFs(home, DISK_MB);
mkdirSync(path.join(project, 'cards'), { recursive: true });
mkdirSync(workspace);
const paths = statePaths({ RUNBOARD_HOME: home });
createGrant(paths, project);
writeFileSync(path.join(project, 'config.yaml'), soakConfig(REPO, CONC));
const cards = soakCards(SEED, RUNS);
const byId = new Map(cards.map((c) => [c.id, c]));
for (const c of cards) {
  const file = path.join(project, 'cards', `${c.id}.md`);
  writeFileSync(file, c.text);
  if (c.workflow) {
    mkdirSync(path.dirname(workflowFileFor(file)), { recursive: true });
    writeFileSync(workflowFileFor(file), c.workflow);
  }
}

/** On a crash of the soak itself: end its processes (by their pids, all under its root) and unmount. */
let finished = false;
function cleanUpAfterCrash(): void {
  if (finished) return;
  finished = true;
  for (const p of processesOf(root))
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone
    }
  unmountSmallFs(home);
  console.error(`the soak stopped before its end; its root ${root} is kept (the state root unmounted)`);
}
process.on('exit', cleanUpAfterCrash);
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => process.exit(130));

const model = await startModelServer();
model.setEpisodes(soakEpisodes());
const proxy = new StallProxy({ host: '127.0.0.1', port: Number(new URL(model.url).port) });
const proxyUrl = await proxy.listen();
const env: NodeJS.ProcessEnv = {
  ...process.env,
  RUNBOARD_HOME: home,
  RUNBOARD_PROVIDER_OPENAI_URL: proxyUrl,
};
delete env.NODE_EXTRA_CA_CERTS;

function cli(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = execFile(process.execPath, [CLI, ...args], { env, maxBuffer: 256 << 20 }, (err, out, errOut) =>
      err ? reject(new Error(`runboard ${args.join(' ')}: ${errOut || err.message}`)) : resolve(out),
    );
    if (input !== undefined) p.stdin!.end(input);
  });
}
await cli(['key', 'set', 'openai'], 'sk-test-openai-0123456789\n');

// ---- the board: `runboard serve`, restarted after the chaos kills it (as a person would)
class Board {
  proc?: ChildProcess;
  base = '';
  token = '';
  starts = 0;
  stderr = '';

  async start(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.spawn();
        this.starts++;
        return;
      } catch (e) {
        if (attempt >= 5) throw e;
        log(`board did not start (${(e as Error).message.split('\n')[0]}); again`);
        await sleep(1000);
      }
    }
  }

  private spawn(): Promise<void> {
    const proc = spawn(process.execPath, [CLI, 'serve', '--project', project, '--no-open'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    let out = '';
    proc.stderr.on('data', (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-20_000)));
    return new Promise<void>((resolve, reject) => {
      proc.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /(http:\/\/127\.0\.0\.1:\d+)\/\?token=(\S+)/.exec(out);
        if (m) {
          this.base = m[1]!;
          this.token = m[2]!;
          resolve();
        }
      });
      proc.once('exit', (code) =>
        reject(new Error(`runboard serve exited (${code}): ${this.stderr.slice(-400)}`)),
      );
    });
  }

  get up(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise((r) => p.once('exit', r));
    p.kill(signal);
    await gone;
  }

  async api<T>(method: string, p: string, body?: unknown): Promise<T> {
    const res = await fetch(this.base + p, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(20_000),
    });
    const data = (await res.json()) as T & { error?: string };
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${data.error}`);
    return data;
  }
}
const board = new Board();
await board.start();
log(
  `soak: seed ${SEED}, ${cards.length} cards, up to ${MINUTES} min, a fault every ~${GAP_S} s, root ${root}`,
);

// ---- watching: the board's cards, the processes of the soak, memory of the supervisor and the board
let lastCards: BoardCard[] = [];
const seenProcs = new Map<string, Proc>(); // by pid and start time (pids are reused)
const memory = new Map<number, { kind: ProcKind; samples: [number, number][] }>();
let boardErrors = 0;

async function snapshot(): Promise<BoardCard[] | undefined> {
  if (!board.up) return undefined;
  try {
    const view = await board.api<{ cards: BoardCard[] }>('GET', '/api/board');
    lastCards = view.cards;
    return view.cards;
  } catch {
    boardErrors++;
    return undefined;
  }
}

function watchProcesses(): Proc[] {
  const procs = processesOf(root);
  for (const p of procs) {
    if (!seenProcs.has(`${p.pid}@${p.start}`)) seenProcs.set(`${p.pid}@${p.start}`, p);
    if (p.kind === 'supervisor' || p.kind === 'serve') {
      const kib = rssKiB(p.pid);
      if (kib === undefined) continue;
      const m = memory.get(p.pid) ?? { kind: p.kind, samples: [] };
      m.samples.push([Date.now() - t0, kib]);
      memory.set(p.pid, m);
    }
  }
  return procs;
}

// ---- the chaos driver
const durationMs = MINUTES * 60_000;
const schedule = faultSchedule(SEED, durationMs, GAP_S * 1000);
const injected = new Map<FaultKind, number>(FAULT_KINDS.map((k) => [k, 0]));
const missed = new Map<FaultKind, number>(FAULT_KINDS.map((k) => [k, 0]));
const faultLog: { at: number; kind: FaultKind; target?: string; note?: string }[] = [];
let freeDisk: (() => void) | undefined;
let diskUntil = 0;
let stallUntil = 0;
let chaosOn = true;

const TARGET: Partial<Record<FaultKind, ProcKind>> = {
  'kill-worker': 'worker',
  'kill-jail': 'jail',
  'kill-xserver': 'xserver',
  'kill-supervisor': 'supervisor',
};

async function inject(f: Fault): Promise<void> {
  const at = Date.now() - t0;
  const kind = TARGET[f.kind];
  if (kind) {
    // a moment with a target: wait a little for one (a worker exists only while a run runs)
    let candidates: Proc[] = [];
    for (let i = 0; i < 50 && chaosOn; i++) {
      candidates = watchProcesses().filter((p) => p.kind === kind);
      if (candidates.length) break;
      await sleep(100);
    }
    const victim = candidates[Math.floor(f.pick * candidates.length)];
    if (!victim) {
      missed.set(f.kind, missed.get(f.kind)! + 1);
      faultLog.push({ at, kind: f.kind, note: 'no target' });
      return;
    }
    try {
      process.kill(victim.pid, 'SIGKILL');
      injected.set(f.kind, injected.get(f.kind)! + 1);
      faultLog.push({ at, kind: f.kind, target: `${victim.pid} ${victim.cmd.slice(0, 80)}` });
      log(`fault: ${f.kind} pid ${victim.pid}`);
    } catch {
      missed.set(f.kind, missed.get(f.kind)! + 1);
    }
    return;
  }
  if (f.kind === 'kill-board') {
    if (!board.up) return void missed.set(f.kind, missed.get(f.kind)! + 1);
    const pid = board.proc!.pid;
    await board.kill('SIGKILL');
    injected.set(f.kind, injected.get(f.kind)! + 1);
    faultLog.push({ at, kind: f.kind, target: String(pid) });
    log(`fault: kill-board pid ${pid}; the board restarts in ${(f.holdMs / 10_000).toFixed(1)} s`);
    await sleep(f.holdMs / 10);
    await board.start();
    return;
  }
  if (f.kind === 'disk-full') {
    if (freeDisk) return void missed.set(f.kind, missed.get(f.kind)! + 1);
    freeDisk = fillDisk(home);
    diskUntil = Date.now() + f.holdMs;
    injected.set(f.kind, injected.get(f.kind)! + 1);
    faultLog.push({ at, kind: f.kind, note: `${f.holdMs} ms` });
    log(`fault: the state root's disk is full for ${(f.holdMs / 1000).toFixed(1)} s`);
    return;
  }
  if (f.kind === 'model-stall') {
    proxy.stall(true);
    stallUntil = Math.max(stallUntil, Date.now() + f.holdMs);
    injected.set(f.kind, injected.get(f.kind)! + 1);
    faultLog.push({ at, kind: f.kind, note: `${f.holdMs} ms` });
    log(`fault: the model server stalls for ${(f.holdMs / 1000).toFixed(1)} s`);
  }
}

function endHolds(force: boolean): void {
  if (freeDisk && (force || Date.now() >= diskUntil)) {
    freeDisk();
    freeDisk = undefined;
    log('the disk has room again');
  }
  if (stallUntil && (force || Date.now() >= stallUntil)) {
    proxy.stall(false);
    stallUntil = 0;
    log('the model server answers again');
  }
}

const chaos = (async () => {
  for (const f of schedule) {
    while (chaosOn && Date.now() - t0 < f.at) {
      endHolds(false);
      await sleep(200);
    }
    if (!chaosOn) break;
    await inject(f).catch((e: unknown) => log(`fault ${f.kind} went wrong: ${(e as Error).message}`));
  }
})();

// ---- feeding cards into Queued, a few more than the board runs at once
const fed = new Map<string, number>();
const queue = cards.filter((c) => c.kind !== 'scheduled');
const settled = (c: BoardCard): boolean => !['queued', 'running', 'backlog'].includes(c.column);
const feedDeadline = t0 + durationMs;
let lastReport = 0;
while (Date.now() < feedDeadline) {
  watchProcesses();
  const now = await snapshot();
  if (!now) {
    if (!board.up && !chaosOn) await board.start();
    await sleep(500);
    continue;
  }
  const active = now.filter((c) => c.column === 'queued' || c.column === 'running').length;
  for (let n = active; n < 2 * CONC && fed.size < queue.length; n++) {
    const c = queue[fed.size]!;
    try {
      await board.api('POST', `/api/cards/${c.id}/move`, { to: 'queued', index: 0 });
      fed.set(c.id, Date.now() - t0);
    } catch (e) {
      log(`could not queue ${c.id}: ${(e as Error).message}`);
      break;
    }
  }
  if (Date.now() - lastReport > 30_000) {
    lastReport = Date.now();
    const done = now.filter((c) => fed.has(c.id) && settled(c)).length;
    log(`progress: ${fed.size} fed, ${done} settled, ${active} queued or running`);
  }
  if (fed.size === queue.length && now.every((c) => !fed.has(c.id) || settled(c))) break;
  await sleep(1000);
}

// ---- the end: chaos stops, every card must settle
chaosOn = false;
await chaos;
endHolds(true);
if (!board.up) await board.start();
log(`chaos over: ${fed.size} cards fed; waiting for every card to settle`);
const settleDeadline = Date.now() + 5 * 60_000;
for (;;) {
  watchProcesses();
  const now = await snapshot();
  const open = (now ?? lastCards).filter((c) => (fed.has(c.id) || c.id === 'tick') && !settled(c));
  const tick = open.filter((c) => c.id === 'tick' && c.column === 'backlog');
  if (now && open.length === tick.length) break;
  if (Date.now() > settleDeadline) {
    log(`not settled after 5 minutes: ${open.map((c) => `${c.id} ${c.column}`).join(', ')}`);
    break;
  }
  await sleep(1000);
}
const finalCards = lastCards;
await board.kill('SIGTERM');
const runsOut = await cli(['runs', '--json', '--limit', '10000']);
const runs = runsOut
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as RunRow);
// --force: the scheduled card's supervisor-side schedule may have started a run in the last minute,
// which a plain stop refuses to end (the supervisor and that run were then left behind); it is cancelled.
await cli(['supervisor', 'stop', '--force']).catch((e: unknown) =>
  log(`supervisor stop: ${(e as Error).message}`),
);
// the processes of the soak have a moment to go, then whatever is left is an orphan
const orphanDeadline = Date.now() + 20_000;
let left = processesOf(root);
while (left.length && Date.now() < orphanDeadline) {
  await sleep(250);
  left = processesOf(root);
}
const xLeft = [...seenProcs.values()].filter((p) => p.kind === 'xserver' && stillRunning(p));

const invariants: Invariant[] = await checkInvariants({
  cards: finalCards,
  fed: new Set(fed.keys()),
  byId,
  runs,
  orphans: [...left, ...xLeft.filter((x) => !left.some((l) => l.pid === x.pid))],
  memory,
});

// ---- figures
const kinds = (k: SoakCard['kind']): number => runs.filter((r) => byId.get(cardId(r))?.kind === k).length;
function cardId(r: RunRow): string {
  return path.basename(r.card.path, '.md');
}
const statuses = new Map<string, number>();
for (const r of runs) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
const reasons = new Map<string, number>();
for (const r of runs) {
  const why = r.termination?.reason ?? '?';
  reasons.set(why, (reasons.get(why) ?? 0) + 1);
}
const fmt = (m: Map<string, number>): string => [...m].map(([k, v]) => `${k} ${v}`).join(', ');
console.log(`
== soak figures (seed ${SEED}; repeat: npm run soak -- --runs ${RUNS} --minutes ${MINUTES} --seed ${SEED} --gap ${GAP_S} --disk ${DISK_MB} --concurrency ${CONC})
duration            ${((Date.now() - t0) / 60_000).toFixed(1)} min, load average at the end ${os
  .loadavg()
  .map((l) => l.toFixed(1))
  .join(' ')}
cards               ${fed.size} fed of ${queue.length} (+1 scheduled), board (re)starts ${board.starts}
runs                ${runs.length}: command ${kinds('command')}, computer-use ${kinds('computer-use')}, replay ${kinds('replay')}, scheduled ${kinds('scheduled')}
run statuses        ${fmt(statuses)}
end reasons         ${fmt(reasons)}
faults injected     ${[...injected].map(([k, v]) => `${k} ${v}`).join(', ')} (total ${[...injected.values()].reduce((a, b) => a + b, 0)})
faults w/o target   ${
  [...missed]
    .filter(([, v]) => v)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || 'none'
}
processes seen      ${[...new Set([...seenProcs.values()].map((p) => p.kind))].map((k) => `${k} ${[...seenProcs.values()].filter((p) => p.kind === k).length}`).join(', ')}
board API errors    ${boardErrors} (while the board was being killed or restarted)
invariants`);
for (const i of invariants)
  console.log(`  ${i.measured === false ? 'n/a   ' : i.held ? 'held  ' : 'BROKEN'} ${i.name}: ${i.detail}`);
const broken = invariants.filter((i) => !i.held).length;
const unmeasured = invariants.filter((i) => i.measured === false).length;
console.log(
  `${invariants.length - broken - unmeasured} of ${invariants.length} invariants held` +
    (unmeasured ? `, ${unmeasured} not measurable in this soak` : ''),
);
writeFileSync(
  path.join(root, 'soak-report.json'),
  JSON.stringify({ seed: SEED, faults: faultLog, invariants, runs: runs.length }, null, 2),
);

// ---- clean up (unless --keep, or something broke: then the root stays for a look)
await proxy.close();
await model.close();
if (!values.keep && broken === 0) {
  unmountSmallFs(home);
  rmSync(root, { recursive: true, force: true });
} else {
  console.log(`kept ${root} (state root on its own tmpfs: umount ${home} when done; soak-report.json there)`);
}
finished = true;
process.exit(broken ? 1 : 0);
