/**
 * Benchmark of replay (docs/bench-computer-use.md, "Replay"): the same recorded workflow (the form fill
 * of tests/fixtures/workflows/form-replay) replayed by accessibility locators, and model-driven (the
 * same workflow with its locators and recorded facts taken out, so every step is predict_action's). A
 * real Runboard run each time (supervisor → jail → worker → proxy → scripted model server answering
 * at once), on the test desktop with the GTK form restarted before each run. Per case: replay time,
 * per step, model calls per step, tokens.
 *   node bench/replay.mjs [runs per case]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { serializeWorkflow, workflowFileFor, type Workflow } from '../supervisor/src/protocol/workflow.ts';
import type { TurnFn } from '../tests/fixtures/model-server/server.ts';
import { REPO } from '../tests/helpers/harness.ts';
import { CuHarness, find, imagePoint } from '../tests/cu/cu-harness.ts';

const RUNS = Number(process.argv[2] ?? 3);
const TITLE = 'Runboard Replay Form';
const FIXTURE = path.join(REPO, 'tests', 'fixtures', 'workflows', 'form-replay', 'schema.json');
const f1 = (n: number): string => (Number.isFinite(n) ? n.toFixed(1) : '–');
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  console.error('bench: starting the test desktop and a supervisor');
  const t = await CuHarness.start();
  let cards = 0;
  const card = (model: boolean): string => {
    const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
    w.detailed_task_description += ' (REPLAY-BENCH)';
    if (model)
      for (const st of w.plan.subtasks)
        for (const s of st.steps) {
          delete s.locator;
          delete s.recorded;
        }
    const file = path.join(t.h.root, `bench-${++cards}.md`);
    mkdirSync(path.dirname(workflowFileFor(file)), { recursive: true });
    writeFileSync(workflowFileFor(file), serializeWorkflow(w));
    writeFileSync(
      file,
      `---\ntitle: bench\nflow: replay\nparams:\n  name: Grace Hopper\n---\n# Task\nReplay.\n`,
    );
    return file;
  };
  const flow = t.flow({
    name: 'replay',
    runner: 'replay',
    prompt: path.join(REPO, 'prompts', 'replay_agent'),
  });
  try {
    const rows: string[] = [];
    for (const model of [false, true]) {
      const loop: number[] = [];
      const perStep: number[] = [];
      let calls = 0;
      let steps = 0;
      let tokens = 0;
      let saved = 0;
      for (let r = 0; r < RUNS; r++) {
        await t.closeForms();
        await t.startForm(TITLE);
        // A scripted model that does the step replay asks for, on the form as it is now (image scale 0.5).
        const at = async (role: string, name: string) =>
          imagePoint((await find(TITLE, (e) => e.role === role && e.name === name)).bounds, 0.5);
        const actions: Record<string, Record<string, unknown>> = {
          '1': { action: 'left_click', ...(await at('text', 'Name')) },
          '2': { action: 'type', text: 'Grace Hopper' },
          '3': { action: 'left_click', ...(await at('push button', 'Submit')) },
          '4': { action: 'left_click', ...(await at('check box', 'Subscribe')) },
        };
        const turn: TurnFn = ({ body }) => {
          const n = /Replay could not do step (\d+)/.exec(JSON.stringify(body))?.[1] ?? '';
          const a = actions[n];
          return a
            ? { toolCalls: [{ name: 'computer_use', arguments: { ...a, observation: 'bench', memory: '' } }] }
            : { toolCalls: [{ name: 'done', arguments: { observation: 'bench', memory: '' } }] };
        };
        t.episodes([
          { name: 'bench', match: 'REPLAY-BENCH', indexBy: 'requests', turns: Array(8).fill(turn) },
        ]);
        console.error(`bench: ${model ? 'model-driven' : 'by locators'}, run ${r + 1}/${RUNS}`);
        const rec = await t.run(card(model), flow);
        if (rec.result.status !== 'succeeded')
          throw new Error(`bench run ${rec.result.status}: ${rec.result.summary}`);
        const m = rec.result.metrics;
        const n = Number(m.replayLocatorSteps) + Number(m.replayModelSteps);
        loop.push(Number(m.loopMs));
        perStep.push(Number(m.loopMs) / n);
        calls += Number(m.replayModelCalls);
        steps += n;
        tokens += Number(m.inputTokens) + Number(m.outputTokens);
        saved += Number(m.tokensSavedEstimate);
      }
      rows.push(
        `| ${model ? 'model-driven (locators removed)' : 'by locators'} | ${steps / RUNS} | ${f1(median(loop))} | ${f1(median(perStep))} | ${(calls / steps).toFixed(2)} | ${Math.round(tokens / RUNS)} | ${Math.round(saved / RUNS)} |`,
      );
    }
    console.log(
      `\nReplay of the form-fill workflow (4 steps, 3 subtasks), ${RUNS} runs per case, medians:\n`,
    );
    console.log(
      '| replay | steps | replay ms | ms per step | model calls per step | tokens per run (scripted: 100 in + 10 out per call) | tokens saved (estimate) |',
    );
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(r);
  } finally {
    await t.stop();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
