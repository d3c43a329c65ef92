/**
 * The replay runner end to end: a real supervisor and jailed worker replay a recorded form fill (the
 * committed workflow tests/fixtures/workflows/form-replay/schema.json, whose locators come from a real
 * recording of the GTK form app) on the test desktop, with a new parameter value. Deterministic steps
 * must make no model request at all; a step whose element was renamed or moved in the app must make
 * exactly one; a subtask whose outcome never appears must end needs-input. The app's state is read
 * back through its accessibility tree; the scripted model server is the only double.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { serializeWorkflow, workflowFileFor, type Workflow } from '../../supervisor/src/protocol/workflow.ts';
import { REPO, type RunRecord } from '../helpers/harness.ts';
import { desktop } from '../../native/src/index.ts';
import { artifact, type CuHarness, cuEvents, find, formApp } from './cu-harness.ts';
import { useCuHarness } from './use-harness.ts';
import { predictClick, predictDone } from './replay-script.ts';

const TITLE = 'Runboard Replay Form';
const FIXTURE = path.join(REPO, 'tests', 'fixtures', 'workflows', 'form-replay', 'schema.json');

let t: CuHarness;
let cards = 0;
useCuHarness((h) => (t = h));

/** A replay card with its workflow in its folder; `marker` goes into the task text every model query carries. */
function replayCard(marker: string, params: Record<string, string>, edit?: (w: Workflow) => void): string {
  const n = ++cards;
  const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
  w.detailed_task_description += ` (${marker})`;
  edit?.(w);
  const card = path.join(t.h.root, `replay-${n}.md`);
  mkdirSync(path.dirname(workflowFileFor(card)), { recursive: true });
  writeFileSync(workflowFileFor(card), serializeWorkflow(w));
  const lines = Object.entries(params).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`);
  writeFileSync(
    card,
    `---\ntitle: Replay the form\nflow: replay\n${lines.length ? `params:\n${lines.join('\n')}\n` : ''}---\n# Task\nReplay.\n\n## Questions\n- None.\n`,
  );
  return card;
}

/** A last subtask whose one EXTRACT step reads element `name` (by its locator: role and name) into `variable`. */
function withExtract(w: Workflow, variable: string, name: string, role = 'label'): void {
  const loc = w.plan.subtasks[0]!.steps[0]!.locator!;
  const k = w.plan.subtasks.length;
  w.plan.subtasks.push({
    subtask_i: k,
    text: `Read ${name}`,
    expected_outcome: '',
    dependencies: [],
    steps: [
      {
        i: 0,
        action_type: 'EXTRACT',
        action_value: `the text of ${name}`,
        variable_name: variable,
        intent: `Read ${name}`,
        expected_current_state: 'The form is shown',
        target: { primary: name, fallback: null },
        post_action: ['not relevant'],
        locator: { app: loc.app, window_title: loc.window_title, role, name, path: [] },
      },
    ],
  });
}

const flow = () =>
  t.flow({ name: 'replay', runner: 'replay', prompt: path.join(REPO, 'prompts', 'replay_agent') });

const requestsOf = (marker: string) =>
  t.model.requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker));
const stepsOf = (rec: RunRecord) =>
  cuEvents(rec, 'cu-step') as {
    action: string;
    screenshot?: string;
    replay: { mode: string; planStep?: number };
  }[];

/** What the form holds, read through its accessibility tree. */
async function form() {
  return {
    name: (await find(TITLE, (e) => e.role === 'text' && e.name === 'Name')).value,
    saved: (await find(TITLE, (e) => e.role === 'label' && e.name === 'Save status')).value,
    subscribed: (await find(TITLE, (e) => e.role === 'check box' && e.name === 'Subscribe')).checked,
  };
}
const filledIn = { name: 'Grace Hopper', saved: 'Saved: 1 time(s)', subscribed: true };

describe('replay', () => {
  it('replays with a new parameter value by locators alone: the form holds it, and no model is asked', async () => {
    await t.startForm(TITLE);
    const marker = 'REPLAY-PLAIN';
    const rec = await t.run(replayCard(marker, { name: 'Grace Hopper' }), flow());
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    expect(await form()).toEqual(filledIn);
    expect(requestsOf(marker)).toHaveLength(0);
    const steps = stepsOf(rec);
    expect(steps.map((s) => [s.action, s.replay.mode, s.replay.planStep])).toEqual([
      ['click', 'locator', 1],
      ['type', 'locator', 2],
      ['click', 'locator', 3],
      ['click', 'locator', 4],
    ]);
    for (const s of steps) expect(s.screenshot).toMatch(/^step-\d{3}\.jpg$/);
    expect(rec.result.metrics).toMatchObject({
      replayLocatorSteps: 4,
      replayModelSteps: 0,
      replayModelCalls: 0,
    });
    expect(rec.result.metrics.tokensSavedEstimate as number).toBeGreaterThan(0);
    const report = artifact(rec, 'report.md')!;
    expect(report).toContain('Status: **succeeded**');
    expect(report).toContain('`name`: Grace Hopper');
    expect(report).toMatch(/\| 3 \| Submit the form \| 3 \| click \| locator \|/);
  });

  it.each([
    ['renamed', 'Send', /no push button "Submit"/],
    ['moved', 'Submit', /push button "Submit" moved/],
  ])(
    'asks the model exactly for the step whose element was %s, then goes back to the locators',
    async (variant, label, why) => {
      await t.startForm(TITLE, {}, ['--variant', variant]);
      const button = await find(TITLE, (e) => e.role === 'push button' && e.name === label);
      const marker = `REPLAY-${variant.toUpperCase()}`;
      t.episodes([
        {
          name: variant,
          match: marker,
          indexBy: 'requests',
          turns: [predictClick(button, `the submit button is labelled ${label}`)],
        },
      ]);
      const rec = await t.run(replayCard(marker, { name: 'Grace Hopper' }), flow());
      expect(rec.result.status, rec.result.summary).toBe('succeeded');
      // back to the locators after the model's step: Subscribe was ticked without a model
      expect(await form()).toEqual(filledIn);
      const reqs = requestsOf(marker);
      expect(reqs).toHaveLength(1);
      // The compact user query (Responses API: the first input text) and one screenshot.
      const body = reqs[0]!.body as { input: { content: { type: string; text?: string }[] }[] };
      const query = body.input[0]!.content[0]!.text!;
      expect(query).toMatch(why);
      expect(query).toContain('Replay could not do step 3');
      expect(query).toContain('- name: Grace Hopper'); // the resolved parameter
      expect(query).toContain('3. Press Submit: click'); // this subtask's reference step
      expect(body.input.flatMap((m) => m.content).filter((c) => c.type === 'input_image')).toHaveLength(1);
      expect(stepsOf(rec).map((s) => [s.action, s.replay.mode, s.replay.planStep])).toEqual([
        ['click', 'locator', 1],
        ['type', 'locator', 2],
        ['left_click', 'model', 3],
        ['click', 'locator', 4],
      ]);
      expect(rec.result.metrics).toMatchObject({
        replayLocatorSteps: 3,
        replayModelSteps: 1,
        replayModelCalls: 1,
      });
    },
  );

  it('ends needs-input, not succeeded, when a subtask’s expected outcome never appears', async () => {
    await t.startForm(TITLE, {}, ['--variant', 'dead-submit']);
    const marker = 'REPLAY-DEAD';
    const done = predictDone('the form looks submitted');
    t.episodes([{ name: 'dead', match: marker, indexBy: 'requests', turns: [done, done, done] }]);
    const rec = await t.run(replayCard(marker, { name: 'Grace Hopper' }), flow());
    expect(rec.result.status, rec.result.summary).toBe('needs-input');
    expect(rec.result.summary).toMatch(/expected outcome never appeared/);
    expect(JSON.stringify(rec.result.questions)).toContain('Saved: 1 time(s)');
    // The model claimed done twice; the screen said otherwise both times.
    expect(requestsOf(marker)).toHaveLength(2);
    expect(await form()).toEqual({ name: 'Grace Hopper', saved: 'Saved: never', subscribed: false });
  });

  it('reads an extract off its locator without a model; asks the model only when the locator does not resolve', async () => {
    await t.startForm(TITLE);
    const marker = 'REPLAY-EXTRACT';
    t.episodes([
      {
        name: 'extract',
        match: marker,
        indexBy: 'requests',
        turns: [predictDone('the status line reads subscribe on', 'subscribe on')],
      },
    ]);
    const rec = await t.run(
      replayCard(marker, { name: 'Grace Hopper' }, (w) => {
        withExtract(w, 'saved_text', 'Save status');
        withExtract(w, 'status_text', 'no such label'); // renamed since: the model reads it
      }),
      flow(),
    );
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    expect(cuEvents(rec, 'replay-extract').map((e) => [e.name, e.value, e.by])).toEqual([
      ['saved_text', 'Saved: 1 time(s)', 'locator'],
      ['status_text', 'subscribe on', 'model'],
    ]);
    const reqs = requestsOf(marker);
    expect(reqs).toHaveLength(1);
    expect(JSON.stringify(reqs[0]!.body)).toContain('no label \\"no such label\\"');
    expect(stepsOf(rec).map((s) => [s.action, s.replay.mode, s.replay.planStep])).toEqual([
      ['click', 'locator', 1],
      ['type', 'locator', 2],
      ['click', 'locator', 3],
      ['click', 'locator', 4],
      ['extract', 'locator', 5],
      ['done', 'model', 6],
    ]);
    expect(rec.result.metrics).toMatchObject({ replayLocatorSteps: 5, replayModelCalls: 1 });
  });

  it("a model step may read the workspace's documents (read_document) when the flow grants them", async () => {
    await t.startForm(TITLE);
    const marker = 'REPLAY-DOCS';
    writeFileSync(
      path.join(t.h.workspace, 'status-note.md'),
      '# Status\n\nThe status reads: subscribed via the note\n',
    );
    t.episodes([
      {
        name: 'replay-docs',
        match: marker,
        indexBy: 'requests',
        turns: [
          { toolCalls: [{ name: 'read_document', arguments: { path: 'status-note.md' } }] },
          {
            toolCalls: [
              {
                name: 'done',
                arguments: { observation: 'the note says it', memory: '', value: 'subscribed via the note' },
              },
            ],
          },
        ],
      },
    ]);
    const card = replayCard(marker, { name: 'Grace Hopper' }, (w) =>
      withExtract(w, 'status_text', 'no such label'),
    );
    const rec = await t.run(card, flow());
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    expect(cuEvents(rec, 'replay-extract').map((e) => [e.name, e.value, e.by])).toEqual([
      ['status_text', 'subscribed via the note', 'model'],
    ]);
    const reqs = requestsOf(marker);
    expect(reqs).toHaveLength(2);
    const offered = (b: unknown) => JSON.stringify(b);
    expect(offered(reqs[0]!.body)).toContain('"read_document"');
    // the document's text reached the model in the next (fresh) query
    expect(offered(reqs[1]!.body)).toContain('The status reads: subscribed via the note');
    expect(stepsOf(rec).map((s) => [s.action, s.replay.mode])).toContainEqual(['read_document', 'model']);
  });

  // (a test of its own: two replays in one test took the whole of the test's limit under load)
  it('a flow that turns the document tools off offers none to a model step', async () => {
    await t.startForm(TITLE);
    t.episodes([
      {
        name: 'replay-nodocs',
        match: 'REPLAY-NODOCS',
        indexBy: 'requests',
        turns: [{ toolCalls: [{ name: 'done', arguments: { observation: 'x', memory: '', value: 'x' } }] }],
      },
    ]);
    const off = await t.run(
      replayCard('REPLAY-NODOCS', { name: 'Grace Hopper' }, (w) =>
        withExtract(w, 'status_text', 'no such label'),
      ),
      { ...flow(), documents: false },
    );
    expect(off.result.status, off.result.summary).toBe('succeeded');
    expect(JSON.stringify(requestsOf('REPLAY-NODOCS')[0]!.body)).not.toContain('read_document');
  });

  it('replays on its own private display (computerUse.privateDisplay) with the flow’s app, not on the desktop in front', async () => {
    const marker = 'REPLAY-PRIVATE';
    const rec = await t.run(
      replayCard(marker, { name: 'Grace Hopper' }, (w) => {
        withExtract(w, 'typed_name', 'Name', 'text');
        withExtract(w, 'saved_text', 'Save status');
      }),
      t.flow(
        {
          name: 'replay',
          runner: 'replay',
          prompt: path.join(REPO, 'prompts', 'replay_agent'),
          sandbox: {}, // the private Xvfb listens on its path socket only
        },
        {
          privateDisplay: true,
          displaySize: '1024x768x24',
          app: ['/usr/bin/python3', formApp, '--title', TITLE],
        },
      ),
    );
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    const display = cuEvents(rec, 'display')[0]!;
    expect(display.display).toMatch(/^:\d+$/);
    expect(display.display).not.toBe(t.session!.env.DISPLAY);
    // The app on the run's display holds the new value and was submitted (its outcome checks held,
    // and the extracts read them back through AT-SPI there)...
    expect(cuEvents(rec, 'replay-extract').map((e) => [e.name, e.value, e.by])).toEqual([
      ['typed_name', 'Grace Hopper', 'locator'],
      ['saved_text', 'Saved: 1 time(s)', 'locator'],
    ]);
    expect(cuEvents(rec, 'cu-screenshot')[0]!.source).toEqual([0, 0, 1024, 768]);
    expect(requestsOf(marker)).toHaveLength(0);
    // ...while the desktop in front has no such window: nothing ran there.
    expect((await desktop.listWindows()).filter((w) => w.title === TITLE)).toEqual([]);
  });

  it('asks for a parameter that has neither a value nor an example, before touching the desktop', async () => {
    const marker = 'REPLAY-NOPARAM';
    const card = replayCard(marker, {}, (w) => (w.task_params[0]!.example = ''));
    const rec = await t.run(card, flow());
    expect(rec.result.status).toBe('needs-input');
    expect(JSON.stringify(rec.result.questions)).toContain('What value should \\"name\\" have');
    expect(cuEvents(rec, 'cu-step')).toHaveLength(0);
  });
});
