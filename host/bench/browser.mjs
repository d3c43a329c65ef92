// Browser benchmarks against a real `runboard serve` (dist/), not tests (they print JSON lines):
// - board: `runboard serve` spawn → the first screen usable in Chromium (every column's count shown and
//   its first cards in the DOM), for BOARD_CARDS (2,000), for 300 cards and, as the baseline of the same
//   run, for an empty project; card moves (API call in the page → card shown in its new column); frame
//   times while a column scrolls and while a card is dragged across the board (against the 16.7 ms of a
//   60 Hz frame); the 2,000-card board served a second time (the first screen a person sees after the
//   first). BASE_DIST=<a dist/ of an older build> measures that build too, in the same run (put it
//   inside the repository: its supervisor finds native/build by walking up from its own folder).
// - log: memory after LOG_LINES (1,000,000) log lines through an open inspector (LOG_LINES=0 skips it).
// Run: node host/bench/run.mjs browser
/* global document, fetch, requestAnimationFrame, window -- page.evaluate callbacks run in the browser */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { firstScreen, writeBoardProject } from './board-projects.mjs';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const DIST = path.join(REPO, 'dist');
const CARDS = Number(process.env.BOARD_CARDS ?? 2000);
const LINES = Number(process.env.LOG_LINES ?? 1_000_000);
const BASE_DIST = process.env.BASE_DIST ? path.resolve(process.env.BASE_DIST) : undefined;

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-'));
const env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
delete env.NODE_EXTRA_CA_CERTS;

/** A project of `n` cards (backlog, done, failed in turn) and, with `log`, the card of LINES lines. */
function makeProject(name, n, log = false) {
  const project = path.join(root, name);
  writeBoardProject(project, n);
  if (log)
    writeFileSync(
      path.join(project, 'cards', 'zz-log.md'),
      `---\nid: log\ntitle: A million lines\nflow: shell\nworkspace: ./workspace\ncommand: "seq 1 ${LINES} | sed 's/^/log line /'"\nstatus: backlog\n---\n`,
    );
  execFileSync(
    process.execPath,
    [path.join(DIST, 'runboard.mjs'), 'grant', path.join(project, 'workspace')],
    {
      env,
    },
  );
  return project;
}

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--enable-precise-memory-info',
  ],
});

/** Every `runboard serve` still running: stopped when this process exits, even on an error. */
const live = new Set();
process.on('exit', () => {
  for (const s of live) s.kill('SIGKILL');
});

async function startServe(dist, project) {
  const t0 = performance.now();
  const serve = spawn(process.execPath, [path.join(dist, 'runboard.mjs'), 'serve', '--project', project], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  live.add(serve);
  serve.once('exit', () => live.delete(serve));
  const url = await new Promise((resolve) => {
    let out = '';
    serve.stdout.on('data', (d) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  return { serve, url, t0, urlMs: performance.now() - t0 };
}

async function stopServe(dist, serve) {
  if (serve.exitCode === null && serve.signalCode === null) {
    const exited = new Promise((r) => serve.once('exit', r));
    serve.kill('SIGTERM');
    const late = setTimeout(() => serve.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(late);
  }
  try {
    execFileSync(process.execPath, [path.join(dist, 'runboard.mjs'), 'supervisor', 'stop', '--force'], {
      env,
      stdio: 'ignore',
    });
  } catch {
    // no supervisor left
  }
}

/** Frame intervals (ms) in the page while `action` runs: p50, p95, max and the share over 16.7 ms. */
async function frames(page, action) {
  await page.evaluate(() => {
    const w = window;
    w.__frames = [];
    let last = performance.now();
    w.__framing = true;
    const tick = (t) => {
      w.__frames.push(t - last);
      last = t;
      if (w.__framing) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  await action();
  const f = await page.evaluate(() => {
    window.__framing = false;
    return window.__frames.slice(1);
  });
  f.sort((a, b) => a - b);
  const q = (p) => +f[Math.min(f.length - 1, Math.floor(p * f.length))].toFixed(1);
  return {
    frames: f.length,
    p50: q(0.5),
    p95: q(0.95),
    max: +f[f.length - 1].toFixed(1),
    over16_7: +(f.filter((x) => x > 16.7 * 1.5).length / f.length).toFixed(3),
  };
}

/**
 * One board: serve → first screen, moves, scroll and drag frames. `reopened`: only the first screen, of
 * a project this build has served before (what a person sees every time after the first).
 */
async function boardRun(dist, label, project, cards, reopened = false) {
  process.stderr.write(`board ${label} ${cards}${reopened ? ' reopened' : ''}…\n`);
  const { serve, url, t0, urlMs } = await startServe(dist, project);
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  await page.goto(url);
  await page.waitForFunction(firstScreen, cards, { timeout: 120_000, polling: 'raf' });
  const firstScreenMs = performance.now() - t0;
  const inDom = await page.evaluate(() => document.querySelectorAll('li.card').length);
  const out = {
    bench: 'board',
    build: label,
    cards,
    ...(reopened ? { reopened } : {}),
    urlMs: Math.round(urlMs),
    firstScreenMs: Math.round(firstScreenMs),
    cardsInDom: inDom,
  };
  if (cards >= 30 && !reopened) {
    // card move: API call in the page → the card shows in its new column (host write + delta + render)
    page.setDefaultTimeout(30_000);
    const moves = [];
    for (let i = 0; i < 10; i++) {
      const id = `c${i * 3 + 1}`; // Done cards, back to the top of Backlog
      moves.push(
        await page.evaluate(async (id) => {
          const t = performance.now();
          await fetch(`/api/cards/${id}/move`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ to: 'backlog', index: 0 }),
          });
          await new Promise((resolve) => {
            const check = () =>
              document.querySelector(`ul[data-column="backlog"] li[data-card-id="${id}"]`)
                ? resolve()
                : requestAnimationFrame(check);
            check();
          });
          return performance.now() - t;
        }, id),
      );
    }
    moves.sort((a, b) => a - b);
    out.moveApplyMedianMs = Math.round(moves[5]);
    out.moveApplyMaxMs = Math.round(moves[9]);
    // scrolling the Backlog column by wheel, ~1.5 s
    // (the scrolling part is the list itself in older builds, its parent in newer ones)
    const list = page.locator('ul.cards[data-column="backlog"]');
    const col = await page.locator('.column').first().boundingBox();
    await page.mouse.move(col.x + col.width / 2, col.y + col.height / 2);
    out.scroll = await frames(page, async () => {
      for (let i = 0; i < 40; i++) {
        await page.mouse.wheel(0, 400);
        await new Promise((r) => setTimeout(r, 30));
      }
    });
    await list.evaluate((e) => {
      e.scrollTop = 0;
      e.parentElement.scrollTop = 0;
    });
    await new Promise((r) => setTimeout(r, 300));
    // dragging the first Backlog card over every column and back, ~1.5 s
    const first = await page.locator('ul.cards[data-column="backlog"] li.card').first().boundingBox();
    const board = await page.locator('.board').boundingBox();
    out.drag = await frames(page, async () => {
      await page.mouse.move(first.x + first.width / 2, first.y + first.height / 2);
      await page.mouse.down();
      await page.mouse.move(first.x + first.width / 2 + 10, first.y + 20, { steps: 3 });
      for (const x of [board.x + board.width - 80, first.x + first.width / 2])
        await page.mouse.move(x, first.y + 200, { steps: 45 });
      await page.keyboard.press('Escape'); // no drop: the board stays as it was
      await page.mouse.up();
    });
  }
  await page.close();
  await stopServe(dist, serve);
  console.log(JSON.stringify(out));
  return out;
}

const empty = makeProject('empty', 0);
const p300 = makeProject('p300', 300);
const big = makeProject('big', CARDS, LINES > 0);
const builds = [[DIST, 'this']];
if (BASE_DIST) builds.push([BASE_DIST, 'base']);
for (const [dist, label] of builds) {
  const base = await boardRun(dist, label, empty, 0);
  const r300 = await boardRun(dist, label, p300, 300);
  const rBig = await boardRun(dist, label, big, CARDS + (LINES > 0 ? 1 : 0));
  const rBigAgain = await boardRun(dist, label, big, CARDS + (LINES > 0 ? 1 : 0), true);
  console.log(
    JSON.stringify({
      bench: 'board-ratios',
      build: label,
      [`firstScreen ${CARDS} / empty project`]: +(rBig.firstScreenMs / base.firstScreenMs).toFixed(2),
      [`firstScreen ${CARDS} reopened / empty project`]: +(
        rBigAgain.firstScreenMs / base.firstScreenMs
      ).toFixed(2),
      'firstScreen 300 / empty project': +(r300.firstScreenMs / base.firstScreenMs).toFixed(2),
      [`scroll p95 frame / 16.7 ms, 300 → ${CARDS}`]: [r300.scroll.p95 / 16.7, rBig.scroll.p95 / 16.7].map(
        (x) => +x.toFixed(2),
      ),
      [`drag p95 frame / 16.7 ms, 300 → ${CARDS}`]: [r300.drag.p95 / 16.7, rBig.drag.p95 / 16.7].map(
        (x) => +x.toFixed(2),
      ),
    }),
  );
}

if (LINES > 0) {
  // 1M lines through an open inspector
  const { serve, url } = await startServe(DIST, big);
  const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
  const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
  await page.goto(`${url}#card=log`);
  const perf = await page.context().newCDPSession(page);
  await perf.send('Performance.enable'); // counts main-thread time from here on
  const heap = async () => {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    await cdp.detach();
    const { metrics } = await perf.send('Performance.getMetrics');
    const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
    return {
      jsHeapMB: +(m.JSHeapUsedSize / 1048576).toFixed(1),
      domNodes: m.Nodes,
      // cumulative main-thread time of the page (s): the difference shows what the stream cost the page
      taskS: +m.TaskDuration.toFixed(2),
      scriptS: +m.ScriptDuration.toFixed(2),
    };
  };
  await page
    .getByText('No runs yet')
    .waitFor({ timeout: 60_000 })
    .catch(async (err) => {
      const shot = path.join(os.tmpdir(), 'rb-bench-log-inspector.png');
      await page.screenshot({ path: shot });
      throw new Error(`the log card's inspector did not show "No runs yet" (screenshot: ${shot})`, {
        cause: err,
      });
    });
  const before = { hostRssMB: +(rssKb(serve.pid) / 1024).toFixed(1), ...(await heap()) };
  // host RSS sampled while the log streams (peak), and a second, slow viewer: a client that takes nothing
  // for 8 s, then reads to the end (the host must pause its stream, not buffer the log)
  let peakRssKb = 0;
  const sampler = setInterval(() => (peakRssKb = Math.max(peakRssKb, rssKb(serve.pid))), 50);
  const tl = performance.now();
  const u = new URL(url);
  const slowViewer = (async () => {
    let runId;
    while (!runId) {
      const b = await (
        await fetch(`${u.origin}/api/board`, {
          headers: { authorization: `Bearer ${u.searchParams.get('token')}` },
        })
      ).json();
      runId = b.cards.find((c) => c.id === 'log')?.runId;
      if (!runId) await new Promise((r) => setTimeout(r, 20));
    }
    return new Promise((resolve, reject) => {
      const req = http.get(
        `${u.origin}/api/runs/${runId}/stream`,
        { headers: { authorization: `Bearer ${u.searchParams.get('token')}` } },
        (res) => {
          res.pause();
          let lines = 0;
          let tail = '';
          setTimeout(() => {
            res.setEncoding('utf8');
            res.on('data', (d) => {
              const text = tail + d;
              const msgs = text.split('\n\n');
              tail = msgs.pop();
              for (const m of msgs) {
                if (!m.startsWith('data: ')) continue;
                const msg = JSON.parse(m.slice(6));
                if (msg.type === 'lines') lines += msg.lines.length;
                if (msg.type === 'end') {
                  req.destroy();
                  resolve({ lines, s: +((performance.now() - tl) / 1000).toFixed(1) });
                }
              }
            });
            res.resume();
          }, 8000);
        },
      );
      req.on('error', reject);
    });
  })();
  await page.evaluate(() =>
    fetch('/api/cards/log/move', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'queued', index: 0 }),
    }),
  );
  await page.waitForFunction(
    () =>
      document.querySelector('.log-head span')?.textContent?.includes('lines') &&
      document.querySelector('.metrics .status')?.textContent === 'succeeded',
    undefined,
    { timeout: 300_000 },
  );
  await page.getByText(`log line ${LINES}`, { exact: true }).waitFor({ timeout: 120_000 });
  const streamS = (performance.now() - tl) / 1000;
  const slow = await slowViewer;
  clearInterval(sampler);
  const after = { hostRssMB: +(rssKb(serve.pid) / 1024).toFixed(1), ...(await heap()) };
  const shown = await page.locator('.log-head span').textContent();
  console.log(
    JSON.stringify({
      bench: 'log-stream',
      lines: LINES,
      streamS: +streamS.toFixed(1),
      before,
      after,
      hostPeakRssMB: +(peakRssKb / 1024).toFixed(1),
      pageBusyS: {
        task: +(after.taskS - before.taskS).toFixed(2),
        script: +(after.scriptS - before.scriptS).toFixed(2),
      },
      slowViewer: slow,
      inspector: shown,
    }),
  );
  await stopServe(DIST, serve);
}

await browser.close();
rmSync(root, { recursive: true, force: true });
