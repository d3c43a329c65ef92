// Board start-up benchmark (not a test: it prints figures): `runboard serve` spawn → URL printed and →
// first screen in Chromium, for an empty project and a BOARD_CARDS (2,000) card project opened before
// (its card parse cache filled), ROUNDS (7) rounds; with BASE_DIST=<a dist/ of another build>, both
// builds in turns within each round (the order swapped every round), each serve on its own state root
// and its supervisor stopped after it. Prints medians: one sample per case moved by ±400 ms here.
// Run: node scripts/bundle.mjs && node host/bench/start.mjs
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { firstScreen, writeBoardProject } from './board-projects.mjs';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const CARDS = Number(process.env.BOARD_CARDS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const builds = [['this', path.join(REPO, 'dist')]];
if (process.env.BASE_DIST) builds.push(['base', path.resolve(process.env.BASE_DIST)]);

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-start-'));
const envOf = (build) => {
  const env = { ...process.env, RUNBOARD_HOME: path.join(root, `home-${build}`) };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
};
const runboard = (dist, build, ...args) =>
  execFileSync(process.execPath, [path.join(dist, 'runboard.mjs'), ...args], {
    env: envOf(build),
    stdio: 'ignore',
  });

function makeProject(name, n) {
  const project = path.join(root, name);
  writeBoardProject(project, n);
  for (const [build, dist] of builds) runboard(dist, build, 'grant', path.join(project, 'workspace'));
  return project;
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});

async function once(build, dist, project, cards) {
  const t0 = performance.now();
  const serve = spawn(process.execPath, [path.join(dist, 'runboard.mjs'), 'serve', '--project', project], {
    env: envOf(build),
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      serve.stdout.on('data', (d) => {
        out += d;
        const m = /(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      serve.once('exit', (code) => reject(new Error(`runboard serve exited (${code})`)));
    });
    const urlMs = performance.now() - t0;
    const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    await page.goto(url);
    await page.waitForFunction(firstScreen, cards, { timeout: 120_000, polling: 'raf' });
    const firstScreenMs = performance.now() - t0;
    await page.close();
    return { urlMs, firstScreenMs };
  } finally {
    if (serve.exitCode === null) {
      const exited = new Promise((r) => serve.once('exit', r));
      serve.kill('SIGTERM');
      await exited;
    }
    try {
      runboard(dist, build, 'supervisor', 'stop', '--force');
    } catch {
      // no supervisor left
    }
  }
}

try {
  const projects = [
    ['empty project', makeProject('empty', 0), 0],
    [`${CARDS} cards, opened before`, makeProject('big', CARDS), CARDS],
  ];
  // the first open of the big project fills each build's card parse cache (and warms the page cache)
  for (const [build, dist] of builds) await once(build, dist, projects[1][1], CARDS);
  const samples = new Map();
  for (let r = 0; r < ROUNDS; r++)
    for (const [name, project, cards] of projects)
      for (const [build, dist] of r % 2 ? [...builds].reverse() : builds) {
        const key = `${name} | ${build}`;
        if (!samples.has(key)) samples.set(key, []);
        samples.get(key).push(await once(build, dist, project, cards));
      }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`board start-up, medians of ${ROUNDS} rounds (ms)`);
  console.log('| case | build | serve → URL | serve → first screen |');
  console.log('| --- | --- | --- | --- |');
  for (const [key, s] of samples) {
    const [name, build] = key.split(' | ');
    const url = median(s.map((x) => x.urlMs)).toFixed(0);
    const first = median(s.map((x) => x.firstScreenMs)).toFixed(0);
    console.log(`| ${name} | ${build} | ${url} | ${first} |`);
  }
} finally {
  await browser.close();
  rmSync(root, { recursive: true, force: true });
}
