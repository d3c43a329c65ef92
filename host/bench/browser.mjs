// Browser benchmarks against a real `runboard serve` (dist/): a 2,000-card board (start → rendered,
// card move apply time) and memory after 1,000,000 log lines through an open inspector.
// Run: node host/bench/run.mjs   (not a test; prints JSON lines)
/* global document, fetch, requestAnimationFrame -- page.evaluate callbacks run in the browser */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const REPO = path.resolve(import.meta.dirname, '..', '..');
const RB = path.join(REPO, 'dist', 'runboard.mjs');
const CARDS = Number(process.env.BOARD_CARDS ?? 2000);
const LINES = Number(process.env.LOG_LINES ?? 1_000_000);

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-'));
const project = path.join(root, 'project');
const env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
mkdirSync(path.join(project, 'cards'), { recursive: true });
mkdirSync(path.join(project, 'workspace'));
writeFileSync(
  path.join(project, 'config.yaml'),
  'version: 1\nflows:\n  shell: { runner: command, cap: 2 }\n',
);
const cols = ['backlog', 'done', 'failed'];
for (let i = 0; i < CARDS; i++)
  writeFileSync(
    path.join(project, 'cards', `c${String(i).padStart(4, '0')}.md`),
    `---\nid: c${i}\ntitle: Card number ${i}\nflow: shell\nworkspace: ./workspace\ncommand: "true"\nstatus: ${cols[i % 3]}\n---\n# Task\nCard ${i}.\n`,
  );
writeFileSync(
  path.join(project, 'cards', 'zz-log.md'),
  `---\nid: log\ntitle: A million lines\nflow: shell\nworkspace: ./workspace\ncommand: "seq 1 ${LINES} | sed 's/^/log line /'"\nstatus: backlog\n---\n`,
);
execFileSync(process.execPath, [RB, 'grant', path.join(project, 'workspace')], { env });

const rssKb = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const t0 = performance.now();
const serve = spawn(process.execPath, [RB, 'serve', '--project', project], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url = await new Promise((resolve) => {
  let out = '';
  serve.stdout.on('data', (d) => {
    out += d;
    const m = /(http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
});
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
const page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
await page.goto(url);
await page.waitForFunction((n) => document.querySelectorAll('li.card').length >= n, CARDS + 1, {
  timeout: 120_000,
});
const startToRendered = performance.now() - t0;

// card move: API call in the page → the card shows in its new column (host write + change push + render)
const moves = [];
for (let i = 0; i < 10; i++) {
  const id = `c${i * 3}`; // backlog cards
  const ms = await page.evaluate(async (id) => {
    const t = performance.now();
    await fetch(`/api/cards/${id}/move`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: 'done', index: 0 }),
    });
    await new Promise((resolve) => {
      const check = () =>
        document.querySelector(`ul[data-column="done"] li[data-card-id="${id}"]`)
          ? resolve()
          : requestAnimationFrame(check);
      check();
    });
    return performance.now() - t;
  }, id);
  moves.push(ms);
}
moves.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    bench: 'board-2000',
    cards: CARDS,
    startToRenderedMs: Math.round(startToRendered),
    moveApplyMedianMs: Math.round(moves[5]),
    moveApplyMaxMs: Math.round(moves[9]),
  }),
);

// 1M lines through an open inspector
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
await page.locator('li[data-card-id="log"]').click();
await page.getByText('No runs yet').waitFor();
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

await browser.close();
serve.kill('SIGTERM');
await new Promise((r) => serve.once('exit', r));
try {
  execFileSync(process.execPath, [RB, 'supervisor', 'stop', '--force'], { env, stdio: 'ignore' });
} catch {
  // no supervisor left
}
rmSync(root, { recursive: true, force: true });
