// Desktop benchmark: the targets an agent's loop needs (list < 50 ms, read --depth 3 < 200 ms, click --id < 100 ms,
// type hello < 50 ms) as whole CLI processes and as in-process addon calls, on our GTK form and on a
// Chromium page; the whole-tree read against libatspi's naive walk measured in the same run; and the
// output size in tokens. Run it through run.mjs, which starts a test desktop around it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encode } from 'gpt-tokenizer/encoding/o200k_base';
import { desktop } from '../src/desktop/desktop.ts';
import { allElements, platformRolesFor, shortRole, toVerbose } from '../src/desktop/compact.ts';
import { chromiumWindow } from '../../tests/helpers/chromium.ts';

const cli = process.argv[2]!;
const repo = path.resolve(import.meta.dirname ?? '.', process.argv[3] ?? '.');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'runboard-bench-'));
const children: ChildProcess[] = [];
const rows: string[] = [];
const sizeRows: string[] = [];
const startRows: string[] = [];

const cliEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  DISPLAY: process.env.DISPLAY,
  DBUS_SESSION_BUS_ADDRESS: process.env.DBUS_SESSION_BUS_ADDRESS,
  RUNBOARD_HOME: path.join(tmp, 'home'),
  RUNBOARD_NATIVE_DIR: process.env.RUNBOARD_NATIVE_DIR,
};

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p * (s.length - 1)))]!;
}

async function time(n: number, fn: () => Promise<unknown> | unknown): Promise<number[]> {
  await fn(); // warm-up, not counted
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

function runCli(args: string[]): string {
  const r = spawnSync(process.execPath, [cli, ...args], { env: cliEnv, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`desktop-cli ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

function runProcess(file: string, args: string[], env: NodeJS.ProcessEnv): void {
  const r = spawnSync(file, args, { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${file} ${args.join(' ')} failed: ${r.stderr}`);
}

/**
 * Whole processes, measured in turns (one of each per round, so a machine whose load drifts affects
 * them alike), p50 of each and its ratio to the first (the baseline).
 */
function inTurns(n: number, cases: [label: string, run: () => void][]): void {
  const ms = cases.map(() => [] as number[]);
  const cpu = cases.map(() => 0);
  for (let i = 0; i <= n; i++)
    cases.forEach(([, run], k) => {
      const c = childrenCpuMs();
      const t = performance.now();
      run();
      if (i === 0) return; // round 0 warms the page cache
      ms[k]!.push(performance.now() - t);
      cpu[k]! += childrenCpuMs() - c;
    });
  const base = pct(ms[0]!, 0.5);
  const baseCpu = cpu[0]! / n;
  cases.forEach(([label], k) => {
    const p50 = pct(ms[k]!, 0.5);
    const c = cpu[k]! / n;
    startRows.push(
      `| ${label} | ${p50.toFixed(1)} | ${pct(ms[k]!, 0.95).toFixed(1)} | ${(p50 / base).toFixed(2)}× | ${c.toFixed(1)} | ${(c / baseCpu).toFixed(2)}× |`,
    );
    process.stderr.write(`${label}: p50 ${p50.toFixed(1)}, CPU ${c.toFixed(1)}\n`);
  });
}

/**
 * CPU time (user + system) of the children waited for so far, from /proc/self/stat (clock ticks of
 * 10 ms, but a running total: the mean over n processes is good to 10/n ms). On a loaded machine a
 * process's wall time is mostly waiting for a core; its CPU time is what it costs.
 */
function childrenCpuMs(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) * 10; // cutime, cstime (fields 16 and 17; USER_HZ = 100)
}

/**
 * Where a CLI command's time goes, each step a whole process of its own: Node alone, Node loading the
 * CLI bundle (--version: no addon, no display), Node loading the addon alone, then the commands; and
 * the same start as an agent's shell makes it, through the file's own #! line with the caller's
 * NODE_EXTRA_CA_CERTS (the run's environment drops it; a person's shell may not).
 */
function startUpBreakdown(title: string): void {
  const addon = path.join(process.env.RUNBOARD_NATIVE_DIR ?? '', 'runboard_native.node');
  const node = (args: string[]) => () => runProcess(process.execPath, args, cliEnv);
  // BENCH_CLI_BEFORE: a desktop-cli bundle built from an earlier checkout (BENCH_NATIVE_BEFORE: that
  // checkout's native/build/Release), measured in the same turns.
  const before = process.env.BENCH_CLI_BEFORE;
  const beforeEnv = {
    ...cliEnv,
    RUNBOARD_NATIVE_DIR: process.env.BENCH_NATIVE_BEFORE ?? cliEnv.RUNBOARD_NATIVE_DIR,
  };
  const old = (args: string[]) => () => runProcess(process.execPath, [before!, ...args], beforeEnv);
  const earlier: [string, () => void][] = before
    ? [
        ['before: `desktop-cli list --windows`', old(['list', '--windows'])],
        ['before: `desktop-cli type --text hello`', old(['type', '--text', 'hello'])],
        ['before: `desktop-cli click --id`', old(['click', '--id', String(clickId), '--window', title])],
      ]
    : [];
  inTurns(40, [
    ['`node -e 0`', node(['-e', '0'])],
    ['`desktop-cli --version` (Node + the bundle)', node([cli, '--version'])],
    ['`node -e require(addon)` (Node + the addon)', node(['-e', `require(${JSON.stringify(addon)})`])],
    ['`desktop-cli list --windows`', node([cli, 'list', '--windows'])],
    ['`desktop-cli type --text hello`', node([cli, 'type', '--text', 'hello'])],
    [
      '`desktop-cli click --id` (re-read + click)',
      node([cli, 'click', '--id', String(clickId), '--window', title]),
    ],
    ...earlier,
  ]);
  const ca = process.env.BENCH_NODE_EXTRA_CA_CERTS;
  if (!ca) return;
  const withCa = { ...cliEnv, NODE_EXTRA_CA_CERTS: ca };
  startRows.push("| *with the caller's NODE_EXTRA_CA_CERTS* | | | | | |");
  inTurns(20, [
    ['`node -e 0`, NODE_EXTRA_CA_CERTS set', () => runProcess(process.execPath, ['-e', '0'], withCa)],
    [
      '`desktop-cli list --windows` run as a file (its #! line)',
      () => runProcess(cli, ['list', '--windows'], withCa),
    ],
    [
      '`node desktop-cli list --windows`, NODE_EXTRA_CA_CERTS kept',
      () => runProcess(process.execPath, [cli, 'list', '--windows'], withCa),
    ],
  ]);
}
let clickId = 0;

function row(
  target: string,
  what: string,
  how: string,
  ms: number[],
  elements: number | string,
  goal = '',
): void {
  const p50 = pct(ms, 0.5);
  const p95 = pct(ms, 0.95);
  rows.push(
    `| ${target} | ${what} | ${how} | ${p50.toFixed(1)} | ${p95.toFixed(1)} | ${elements} | ${goal} |`,
  );
  process.stderr.write(`${target} ${what} ${how}: p50 ${p50.toFixed(1)} p95 ${p95.toFixed(1)}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(
  title: string,
  check: (names: string[]) => boolean,
  timeoutMs = 40_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const tree = await desktop.read({ title }).catch(() => undefined);
    if (tree && check(allElements(tree.elements).map((e) => e.name))) return;
    if (Date.now() > deadline) throw new Error(`"${title}" did not come up`);
    await sleep(100);
  }
}

function start(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): void {
  children.push(spawn(cmd, args, { env: { ...process.env, ...env }, stdio: 'ignore', detached: true }));
}

/** Chromium on the test page (`query` after its URL), 1000x780 at 0,0, a fresh profile in `profile`. */
function testPage(profile: string, query: string): void {
  const url = `file://${path.join(repo, 'tests/fixtures/desktop/page.html')}${query}`;
  const { args, env } = chromiumWindow({ profile, at: [0, 0], size: [1000, 780], url });
  start('chromium', args, env);
}

interface Target {
  name: string;
  title: string;
  app: string;
  button: string; // something harmless to click
  field: string; // a text field to type into
}

async function measureTarget(t: Target): Promise<void> {
  const N = 30;
  const C = 15;
  // ---- in-process (what a worker pays) ----
  row(
    t.name,
    'list windows',
    'addon',
    await time(N, () => desktop.listWindows()),
    (await desktop.listWindows()).length,
  );
  const d3 = await desktop.read({ app: t.app, title: t.title, depth: 3 });
  row(
    t.name,
    'read depth 3',
    'addon',
    await time(N, () => desktop.read({ app: t.app, title: t.title, depth: 3 })),
    d3.stats.returned,
    '< 200',
  );
  const vis = await desktop.read({ title: t.title });
  row(
    t.name,
    'read whole window, visible only',
    'addon',
    await time(N, () => desktop.read({ title: t.title })),
    vis.stats.returned,
  );
  const whole = await desktop.read({ title: t.title, visibleOnly: false });
  row(
    t.name,
    'read whole tree (all nodes)',
    'addon',
    await time(N, () => desktop.read({ title: t.title, visibleOnly: false })),
    whole.stats.returned,
    '< 100',
  );
  const naiveCount = await desktop.naiveWalkForBench({ title: t.title });
  row(
    t.name,
    'naive walk (libatspi, 1 call/attribute)',
    'addon',
    await time(5, () => desktop.naiveWalkForBench({ title: t.title })),
    naiveCount,
  );
  const button = allElements(vis.elements).find((e) => e.name === t.button)!;
  // As click --id does: re-read only the elements of the remembered role, then click.
  const clickRoles = platformRolesFor([shortRole(button.role, button.editable)]);
  const clickMs = await time(N, async () => {
    const r = await desktop.read({ title: t.title, roles: clickRoles, actions: false });
    const b = allElements(r.elements).find((e) => e.id === button.id)!;
    await desktop.click(b.bounds[0] + (b.bounds[2] >> 1), b.bounds[1] + (b.bounds[3] >> 1));
  });
  row(t.name, 'click by id (re-read of the role + click)', 'addon', clickMs, vis.stats.returned, '< 100');
  const field = allElements(vis.elements).find((e) => e.name === t.field && e.editable)!;
  await desktop.focus({ title: t.title });
  await desktop.click(field.bounds[0] + 20, field.bounds[1] + (field.bounds[3] >> 1));
  await sleep(100);
  row(t.name, 'type "hello"', 'addon', await time(N, () => desktop.type('hello')), '-', '< 50');

  // ---- whole CLI processes (what an agent's shell pays) ----
  row(t.name, 'list --windows', 'CLI', await time(C, () => runCli(['list', '--windows'])), '-', '< 50');
  row(
    t.name,
    `read --app ${t.app} --depth 3`,
    'CLI',
    await time(C, () => runCli(['read', '--app', t.app, '--window', t.title, '--depth', '3'])),
    d3.stats.returned,
    '< 200',
  );
  const read = JSON.parse(runCli(['read', '--window', t.title, '--compact'])) as {
    elements: { i: number; t?: string }[];
  };
  const id = read.elements.find((e) => e.t === t.button)!.i;
  clickId = id;
  row(
    t.name,
    'click --id',
    'CLI',
    await time(C, () => runCli(['click', '--id', String(id), '--window', t.title])),
    vis.stats.returned,
    '< 100',
  );
  await desktop.focus({ title: t.title });
  await desktop.click(field.bounds[0] + 20, field.bounds[1] + (field.bounds[3] >> 1));
  await sleep(100);
  row(
    t.name,
    'type --text hello',
    'CLI',
    await time(C, () => runCli(['type', '--text', 'hello'])),
    '-',
    '< 50',
  );

  // ---- output size ----
  const tokens = (s: string) => encode(s).length;
  const verbose = JSON.stringify({
    app: vis.window.app,
    pid: vis.window.pid,
    window: vis.window.title,
    elements: toVerbose(vis.elements),
  });
  const compact = runCli(['read', '--window', t.title]).trim();
  const flat = runCli(['read', '--window', t.title, '--compact']).trim();
  const roles = runCli(['read', '--window', t.title, '--roles', 'btn,input,lnk,chk,radio,menuitem']).trim();
  const n = (s: string) => {
    const j = JSON.parse(s) as { elements: unknown[] };
    let c = 0;
    const walk = (els: { c?: unknown[] }[]) =>
      els.forEach((e) => (c++, walk((e.c as { c?: unknown[] }[]) ?? [])));
    walk(j.elements as { c?: unknown[] }[]);
    return c;
  };
  const base = tokens(verbose);
  for (const [label, s, count] of [
    ['verbose (full keys, every field)', verbose, allElements(vis.elements).length],
    ['compact tree (default)', compact, n(compact)],
    ['--compact (flat)', flat, n(flat)],
    ['--roles btn,input,lnk,chk,radio,menuitem', roles, n(roles)],
  ] as const)
    sizeRows.push(
      `| ${t.name} | ${label} | ${count} | ${s.length} | ${tokens(s)} | ${((tokens(s) / base) * 100).toFixed(0)}% |`,
    );
}

try {
  start('/usr/bin/python3', [path.join(repo, 'tests/fixtures/desktop/form_app.py')]);
  await waitFor('Runboard Test Form', (names) => names.includes('Submit'));
  await measureTarget({
    name: 'GTK form',
    title: 'Runboard Test Form',
    app: 'runboard-form',
    button: 'Remove',
    field: 'Name',
  });
  startUpBreakdown('Runboard Test Form');
  testPage(`${tmp}/chromium`, '');
  await waitFor('Runboard Test Page - Chromium', (names) => names.includes('Item 60'));
  await measureTarget({
    name: 'Chromium page',
    title: 'Runboard Test Page - Chromium',
    app: 'Chromium',
    button: 'Go',
    field: 'Search',
  });
  // Capture: the XShm fast path (the segment is kept between calls), then encoding.
  for (const [what, opts] of [
    ['capture 1280x800 raw (XShm + cursor)', { format: 'raw' }],
    ['capture 1280x800 PNG', { format: 'png' }],
    ['capture 1280x800 JPEG q80', { format: 'jpeg', quality: 80 }],
    ['capture 1280x800 -> 640x400 PNG', { format: 'png', scale: 0.5 }],
  ] as const)
    row('screen', what, 'addon', await time(20, () => desktop.capture(opts)), '-');
  row(
    'screen',
    'screenshot (scale 0.5, PNG, to a file)',
    'CLI',
    await time(10, () => runCli(['screenshot', '--output', path.join(tmp, 's.png')])),
    '-',
  );
  for (const c of children.splice(0)) process.kill(-c.pid!, 'SIGKILL');
  // The reference size: a page whose window has about 260 nodes (?items=2 gives 262 here).
  testPage(`${tmp}/chromium2`, '?items=2');
  const small = 'Runboard Test Page (2 items) - Chromium';
  await waitFor(small, (names) => names.includes('Item 2'));
  await sleep(500);
  const sw = await desktop.read({ title: small, visibleOnly: false });
  row(
    'Chromium page, ~260 nodes',
    'read whole tree (all nodes)',
    'addon',
    await time(30, () => desktop.read({ title: small, visibleOnly: false })),
    sw.stats.returned,
    '< 100',
  );
  const sn = await desktop.naiveWalkForBench({ title: small });
  row(
    'Chromium page, ~260 nodes',
    'naive walk (libatspi, 1 call/attribute)',
    'addon',
    await time(5, () => desktop.naiveWalkForBench({ title: small })),
    sn,
  );
  start('gtk3-widget-factory', []);
  await waitFor('gtk3-widget-factory', (names) => names.length > 50);
  const wf = await desktop.read({ title: 'gtk3-widget-factory', visibleOnly: false });
  row(
    'gtk3-widget-factory',
    'read whole tree (all nodes)',
    'addon',
    await time(30, () => desktop.read({ title: 'gtk3-widget-factory', visibleOnly: false })),
    wf.stats.returned,
    '< 100',
  );
  const wfv = await desktop.read({ title: 'gtk3-widget-factory' });
  row(
    'gtk3-widget-factory',
    'read whole window, visible only',
    'addon',
    await time(30, () => desktop.read({ title: 'gtk3-widget-factory' })),
    wfv.stats.returned,
  );
  const naive = await desktop.naiveWalkForBench({ title: 'gtk3-widget-factory' });
  row(
    'gtk3-widget-factory',
    'naive walk (libatspi, 1 call/attribute)',
    'addon',
    await time(5, () => desktop.naiveWalkForBench({ title: 'gtk3-widget-factory' })),
    naive,
  );

  console.log('| target | operation | how | p50 ms | p95 ms | elements | seed goal ms |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log('\nStart-up, whole processes in turns (GTK form open), ms:\n');
  console.log('| process | wall p50 | wall p95 | wall vs `node -e 0` | CPU (mean) | CPU vs `node -e 0` |');
  console.log('|---|---|---|---|---|---|');
  for (const r of startRows) console.log(r);
  console.log('\n| target | output | elements | bytes | tokens (o200k_base) | vs verbose |');
  console.log('|---|---|---|---|---|---|');
  for (const r of sizeRows) console.log(r);
} finally {
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  rmSync(tmp, { recursive: true, force: true });
}
