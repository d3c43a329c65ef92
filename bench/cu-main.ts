/**
 * Benchmark of the computer-use loop's own overhead (docs/bench-computer-use.md). A real Runboard run
 * (supervisor → jail → worker → loop → proxy → scripted model server answering instantly) on the test
 * desktop with the GTK form; per step: capture + encode, request build, action, as the worker measured
 * them; bytes of image per step; and the start/teardown time of a private display.
 *   node bench/cu.mjs [steps per run] [runs per case]
 */
import { act, CuHarness, cuEvents, final, find, formApp, imagePoint } from '../tests/cu/cu-harness.ts';

const STEPS = Number(process.argv[2] ?? 30);
const RUNS = Number(process.argv[3] ?? 3);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))]! : NaN;
};
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');

/**
 * STEPS cheap actions around point `p`, then SUCCESS: the loop's overhead, not an app's reaction time,
 * is what is measured.
 */
function benchEpisode(name: string, match: string, p: { x: number; y: number }) {
  const turns = Array.from({ length: STEPS }, (_, i) =>
    i % 3 === 0
      ? act({ action: 'left_click', ...p })
      : i % 3 === 1
        ? act({ action: 'mouse_move', x: p.x + 5, y: p.y })
        : act({ action: 'screenshot' }),
  );
  return {
    name,
    match,
    turns: [...turns, final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] })],
  };
}

/**
 * The step as the model sees it: from one request's arrival at the scripted server to the next one's,
 * within a run. The server answers at once, so this is the loop's whole cost per step (proxy both ways,
 * SDK, events, capture, action), the figure a real model's latency adds to.
 */
function modelGaps(reqs: { at: number; episode: string | null }[]): number[] {
  const played = reqs.filter((q) => q.episode !== null);
  return played.slice(1).map((q, i) => q.at - played[i]!.at);
}

async function main(): Promise<void> {
  console.error('bench: starting the test desktop and a supervisor');
  const t = await CuHarness.start();
  try {
    console.error('bench: starting the form');
    await t.startForm('Bench Form');
    const name = await find('Bench Form', (e) => e.role === 'text' && e.name === 'Name');
    const rows: string[] = [];
    for (const [width, hud] of [
      [1280, false],
      [1024, false],
      [640, false],
      [640, true],
    ] as const) {
      const scale = width / 1280;
      const p = imagePoint(name.bounds, scale);
      t.episodes([benchEpisode('bench', 'CU-BENCH', p)]);
      const cap: number[] = [];
      const build: number[] = [];
      const action: number[] = [];
      const total: number[] = [];
      const model: number[] = [];
      const bytes: number[] = [];
      const reqBytes: number[] = [];
      const seen: number[] = [];
      for (let r = 0; r < RUNS; r++) {
        const first = t.model.requests.length;
        console.error(`bench: width ${width}${hud ? ' + HUD' : ''}, run ${r + 1}/${RUNS}`);
        const rec = await t.run(
          t.card('bench', 'CU-BENCH'),
          t.flow({}, { imageMaxWidth: width, takeover: hud }),
        );
        if (rec.result.status !== 'succeeded')
          throw new Error(`bench run ${rec.result.status}: ${rec.result.summary}`);
        for (const s of cuEvents(rec, 'cu-step')) {
          const tm = s.timings as Record<string, number>;
          cap.push(tm.captureMs!);
          build.push(tm.buildMs!);
          action.push(tm.actMs!);
          total.push(tm.captureMs! + tm.buildMs! + tm.actMs!);
          model.push(tm.modelMs!);
          bytes.push(tm.imageBytes!);
          reqBytes.push(tm.requestBytes!);
        }
        seen.push(...modelGaps(t.model.requests.slice(first)));
      }
      rows.push(
        `| ${width} px${hud ? ' + takeover HUD' : ''} | ${total.length} | ${f1(pct(total, 0.5))} / ${f1(pct(total, 0.95))} | ${f1(pct(cap, 0.5))} / ${f1(pct(cap, 0.95))} | ${f1(pct(build, 0.5))} / ${f1(pct(build, 0.95))} | ${f1(pct(action, 0.5))} / ${f1(pct(action, 0.95))} | ${Math.round(pct(bytes, 0.5) / 1024)} KiB | ${Math.round(pct(reqBytes, 0.5) / 1024)} KiB | ${f1(pct(model, 0.5))} | ${f1(pct(seen, 0.5))} / ${f1(pct(seen, 0.95))} |`,
      );
    }
    console.log(
      `\nPer-step loop overhead, model time excluded (ms, p50 / p95), ${RUNS} runs x ${STEPS} steps per case:\n`,
    );
    console.log(
      '| image | steps | overhead (capture+encode + build + action) | capture+encode | request build | action | image (base64) | request body | model round trip p50 (scripted, via proxy) | step seen from the model (request to request) |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);

    // The live view (private displays only): the same loop with the frame timer off, at its default
    // (1 s) and at 100 ms (ten times the default, to make its cost visible). The cases take turns run by
    // run, so a machine whose load drifts affects them alike.
    const liveCases = [0, 1000, 100];
    const live = new Map(
      liveCases.map((ms) => [
        ms,
        {
          total: [] as number[],
          cap: [] as number[],
          act: [] as number[],
          frames: 0,
          frameMs: [] as number[],
          loopMs: 0,
        },
      ]),
    );
    {
      const p = imagePoint(name.bounds, 0.5);
      t.episodes([benchEpisode('bench-live', 'CU-BENCH-LIVE', p)]);
      for (let r = 0; r < RUNS; r++)
        for (const liveFrameMs of liveCases) {
          console.error(`bench: private display, live frames ${liveFrameMs || 'off'}, run ${r + 1}/${RUNS}`);
          const rec = await t.run(
            t.card('bench-live', 'CU-BENCH-LIVE'),
            t.flow(
              { env: {}, sandbox: {} },
              {
                privateDisplay: true,
                displaySize: '1280x800x24',
                app: ['/usr/bin/python3', formApp, '--title', 'Bench Private'],
                imageMaxWidth: 640,
                liveFrameMs,
              },
            ),
          );
          if (rec.result.status !== 'succeeded')
            throw new Error(`bench run ${rec.result.status}: ${rec.result.summary}`);
          const c = live.get(liveFrameMs)!;
          for (const s of cuEvents(rec, 'cu-step')) {
            const tm = s.timings as Record<string, number>;
            c.total.push(tm.captureMs! + tm.buildMs! + tm.actMs!);
            c.cap.push(tm.captureMs!);
            c.act.push(tm.actMs!);
          }
          const m = rec.result.metrics;
          c.frames += Number(m.liveFrames ?? 0);
          if (m.liveFrameP50Ms !== undefined) c.frameMs.push(Number(m.liveFrameP50Ms));
          c.loopMs += Number(m.loopMs ?? 0);
        }
    }
    console.log(
      `\nLive view on a private display (1280x800, images 640 px), ${RUNS} runs x ${STEPS} steps per case, ms p50 / p95:\n`,
    );
    console.log(
      '| live frames | steps | overhead | capture+encode | action | frames written | frames per s of loop | one frame (p50 of runs) |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [ms, c] of live)
      console.log(
        `| ${ms ? `every ${ms} ms` : 'off'} | ${c.total.length} | ${f1(pct(c.total, 0.5))} / ${f1(pct(c.total, 0.95))} | ${f1(pct(c.cap, 0.5))} / ${f1(pct(c.cap, 0.95))} | ${f1(pct(c.act, 0.5))} / ${f1(pct(c.act, 0.95))} | ${c.frames} | ${f1(c.frames / (c.loopMs / 1000))} | ${f1(pct(c.frameMs, 0.5))} |`,
      );

    // Private displays: start (Xvfb + D-Bus + AT-SPI + openbox) and teardown, as the supervisor measured.
    t.episodes([
      {
        name: 'disp',
        match: 'CU-DISP',
        turns: [final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] })],
      },
    ]);
    const start: number[] = [];
    const down: number[] = [];
    for (let r = 0; r < Math.max(5, RUNS); r++) {
      const rec = await t.run(t.card('disp', 'CU-DISP'), t.flow({ env: {} }, { privateDisplay: true }));
      if (rec.result.status !== 'succeeded')
        throw new Error(`display run ${rec.result.status}: ${rec.result.summary}`);
      start.push(rec.result.metrics.displayStartMs as number);
      down.push(rec.result.metrics.displayTeardownMs as number);
    }
    console.log(
      `\nPrivate display (ms, p50 / max of ${start.length}): start ${f1(pct(start, 0.5))} / ${f1(Math.max(...start))}, teardown ${f1(pct(down, 0.5))} / ${f1(Math.max(...down))}`,
    );
  } finally {
    await t.stop();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
