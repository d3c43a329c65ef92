// A newcomer's first run, end to end (not a test: it prints figures), ROUNDS (5) rounds, each on a fresh
// state root (so its supervisor starts from nothing too), with `node -e 0` timed in the same round:
//  (a) fresh folder → first run done: `runboard init` → `runboard serve --no-open` → the page in
//      Chromium → the checklist's "Run “My first card”" → that card in Done;
//  (b) serve → first screen of the demo project (project/, its workspace granted): spawn → every
//      column's count and first cards in the page.
// Prints medians in ms and as a ratio to `node -e 0`.
// Run: node scripts/bundle.mjs && node host/bench/first-run.mjs
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { firstScreen } from './board-projects.mjs';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const DIST = path.join(REPO, 'dist');
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-first-'));

const envOf = (home) => {
  const env = { ...process.env, RUNBOARD_HOME: home };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
};
const runboard = (home, args, cwd) =>
  new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), ...args], {
      env: envOf(home),
      cwd,
      stdio: 'ignore',
    });
    p.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`runboard ${args[0]}: ${code}`))));
  });
const nodeE0 = () =>
  new Promise((resolve) => {
    const t0 = performance.now();
    spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' }).once('exit', () =>
      resolve(performance.now() - t0),
    );
  });

function startServe(home, args, cwd) {
  const serve = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), 'serve', '--no-open', ...args], {
    env: envOf(home),
    cwd,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const url = new Promise((resolve, reject) => {
    let out = '';
    serve.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    serve.once('exit', (code) => reject(new Error(`runboard serve exited (${code})`)));
  });
  return { serve, url };
}

async function stop(home, serve) {
  if (serve.exitCode === null) {
    const exited = new Promise((r) => serve.once('exit', r));
    serve.kill('SIGTERM');
    await exited;
  }
  execFileSync(process.execPath, [path.join(DIST, 'runboard.mjs'), 'supervisor', 'stop', '--force'], {
    env: envOf(home),
    stdio: 'ignore',
  });
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

/** (a) A fresh folder to its first card Done, through the board as a person does it. */
async function firstRunDone(r) {
  const home = path.join(root, `home-a${r}`);
  const folder = path.join(root, `mine-${r}`);
  mkdirSync(folder);
  const t0 = performance.now();
  await runboard(home, ['init'], folder);
  const initMs = performance.now() - t0;
  const { serve, url } = startServe(home, [], folder);
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await page.goto(await url);
    await page.getByRole('button', { name: 'Run “My first card”' }).click();
    await page.waitForSelector('ul.cards[data-column="done"] li[data-card-id="first-card"]', {
      timeout: 60_000,
    });
    const doneMs = performance.now() - t0;
    await page.close();
    return { initMs, doneMs };
  } finally {
    await stop(home, serve);
  }
}

/** (b) serve → the first screen of the demo project. */
async function demoFirstScreen(r, project, cards) {
  const home = path.join(root, `home-b${r}`);
  await runboard(home, ['grant', path.join(project, 'workspace')], root);
  const t0 = performance.now();
  const { serve, url } = startServe(home, ['--project', project], root);
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
    await page.goto(await url);
    await page.waitForFunction(firstScreen, cards, { timeout: 60_000, polling: 'raf' });
    const ms = performance.now() - t0;
    await page.close();
    return ms;
  } finally {
    await stop(home, serve);
  }
}

try {
  const demo = path.join(root, 'demo', 'project');
  cpSync(path.join(REPO, 'project'), demo, { recursive: true });
  cpSync(path.join(REPO, 'prompts'), path.join(root, 'demo', 'prompts'), { recursive: true });
  const cards = readdirSync(path.join(demo, 'cards')).filter((f) => f.endsWith('.md')).length;
  const rows = [];
  for (let r = 0; r < ROUNDS; r++) {
    const node0 = await nodeE0();
    const a = await firstRunDone(r);
    const b = await demoFirstScreen(r, demo, cards);
    rows.push({ node0, ...a, b });
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const n0 = median(rows.map((x) => x.node0));
  const line = (what, ms) => `| ${what} | ${ms.toFixed(0)} | ${(ms / n0).toFixed(1)}× |`;
  console.log(`first run, medians of ${ROUNDS} rounds (ms; ratio to node -e 0 in the same rounds)`);
  console.log('| step | ms | ratio |');
  console.log('| --- | --- | --- |');
  console.log(line('node -e 0', n0));
  console.log(line('runboard init (fresh folder, fresh state root)', median(rows.map((x) => x.initMs))));
  console.log(line('init → serve → Run → first card Done', median(rows.map((x) => x.doneMs))));
  console.log(
    line(`serve → first screen of the demo project (${cards} cards)`, median(rows.map((x) => x.b))),
  );
} finally {
  await browser.close();
  rmSync(root, { recursive: true, force: true });
}
