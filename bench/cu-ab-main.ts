/**
 * A computer-use step's overhead through the model proxy, this build against a baseline build,
 * alternated in ONE process (issue 28: the step's overhead through the proxy must not regress by more
 * than 10 %). Pairs of separate benchmark processes drift on this VM within minutes; here both
 * supervisors live side by side (each its own RUNBOARD_HOME and dist/), drive the same test desktop
 * and form, and blocks of one run each alternate between them (the order flips every block), so a
 * drift of the machine weighs on both alike. Per block: the model round trip through the proxy (the
 * worker's `modelMs`: request out, answer in, via the supervisor's proxy to the scripted server,
 * which answers at once) and the step as the model sees it (request to request). The verdict is the
 * median of the blocks' ratios (this build / baseline, p50 each).
 *
 * The baseline is a worktree of the old commit with its native build and bundles:
 *   git worktree add ../old <commit> && bash scripts/worktree.sh --relink ../old && \
 *     cp -a native/build ../old/native/build && (cd ../old && node scripts/bundle.mjs)
 * (copy native/build only when native/ C++ did not change in between; else node native/scripts/build.mjs)
 * Usage: node bench/cu-ab.mjs --baseline DIR [--blocks 8] [--steps 30]   (docs/bench-computer-use.md)
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { act, CuHarness, cuEvents, final, find, imagePoint } from '../tests/cu/cu-harness.ts';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    blocks: { type: 'string', default: '8' },
    steps: { type: 'string', default: '30' },
  },
});
if (!values.baseline) {
  console.error(
    'cu-ab needs --baseline DIR: a worktree of the commit to compare with, with its dist/ (head of bench/cu-ab-main.ts)',
  );
  process.exit(2);
}
const BASE_SUPERVISOR = path.join(path.resolve(values.baseline), 'dist', 'supervisor.mjs');
const BLOCKS = Math.max(2, Number(values.blocks));
const STEPS = Math.max(3, Number(values.steps));

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : NaN;
};
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');
const f2 = (n: number): string => (Number.isFinite(n) ? n.toFixed(2) : '–');

function episode(p: { x: number; y: number }) {
  const turns = Array.from({ length: STEPS }, (_, i) =>
    i % 3 === 0
      ? act({ action: 'left_click', ...p })
      : i % 3 === 1
        ? act({ action: 'mouse_move', x: p.x + 5, y: p.y })
        : act({ action: 'screenshot' }),
  );
  return {
    name: 'ab',
    match: 'CU-AB',
    turns: [...turns, final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] })],
  };
}

/** One run of STEPS steps on `t`, with `flowFrom`'s flow (the desktop's env): model ms and step gaps. */
async function oneRun(t: CuHarness, flowFrom: CuHarness): Promise<{ model: number[]; gap: number[] }> {
  const first = t.model.requests.length;
  const rec = await t.run(t.card('ab', 'CU-AB'), flowFrom.flow({}, { imageMaxWidth: 640 }));
  if (rec.result.status !== 'succeeded')
    throw new Error(`bench run ${rec.result.status}: ${rec.result.summary}`);
  const model = cuEvents(rec, 'cu-step').map((s) => (s.timings as Record<string, number>).modelMs!);
  const played = t.model.requests.slice(first).filter((q) => q.episode !== null);
  const gap = played.slice(1).map((q, i) => q.at - played[i]!.at);
  return { model, gap };
}

async function main(): Promise<void> {
  console.error('bench: starting the test desktop, this build and the baseline');
  const now = await CuHarness.start();
  const base = await CuHarness.start({
    desktop: false,
    wrap: (argv) => [argv[0]!, BASE_SUPERVISOR, ...argv.slice(2)],
  });
  try {
    await now.startForm('AB Form');
    const name = await find('AB Form', (e) => e.role === 'text' && e.name === 'Name');
    const ep = episode(imagePoint(name.bounds, 0.5));
    now.episodes([ep]);
    base.episodes([ep]);
    await oneRun(now, now); // warm both (first runs load the bundles into the page cache)
    await oneRun(base, now);
    const rows: string[] = [];
    const ratios = { model: [] as number[], gap: [] as number[] };
    for (let b = 0; b < BLOCKS; b++) {
      const order = b % 2 === 0 ? ([now, base] as const) : ([base, now] as const);
      const got = new Map<CuHarness, { model: number[]; gap: number[] }>();
      for (const t of order) {
        console.error(`bench: block ${b + 1}/${BLOCKS}, ${t === now ? 'this build' : 'baseline'}`);
        got.set(t, await oneRun(t, now));
      }
      const n = got.get(now)!;
      const o = got.get(base)!;
      const rm = pct(n.model, 0.5) / pct(o.model, 0.5);
      const rg = pct(n.gap, 0.5) / pct(o.gap, 0.5);
      ratios.model.push(rm);
      ratios.gap.push(rg);
      rows.push(
        `| ${b + 1} | ${f1(pct(o.model, 0.5))} | ${f1(pct(n.model, 0.5))} | ${f2(rm)}× | ${f1(pct(o.gap, 0.5))} | ${f1(pct(n.gap, 0.5))} | ${f2(rg)}× |`,
      );
    }
    console.log(
      `\ncu step through the proxy, ${BLOCKS} alternated blocks x ${STEPS} steps, ms p50 (baseline ${values.baseline}):\n`,
    );
    console.log(
      '| block | model round trip, baseline | this build | ratio | step seen by the model, baseline | this build | ratio |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
    console.log(
      `\nmedian ratio (this build / baseline): model round trip ${f2(pct(ratios.model, 0.5))}×, step ${f2(pct(ratios.gap, 0.5))}× (load ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
    );
  } finally {
    await base.stop();
    await now.stop();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
