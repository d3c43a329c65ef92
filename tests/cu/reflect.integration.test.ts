// The reflect runner (seed 002's Reflect) end to end below the board: a scripted person fills the GTK
// form while the recorder records (a real recording, made here), then real reflect runs through a real
// supervisor, its proxy and the scripted model server: pass A once per step with the screenshots
// before and after, pass B once over all, a workflow that validates with the one schema, keeping the
// recorder's accessibility facts. A pass B answer that does not validate is asked again once with what
// was wrong; invalid twice, the run ends needs-input saying what was wrong.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkflow, workflowFileFor, type FlowSpec, type Workflow } from '@runboard/supervisor/protocol';
import type { ManifestStep } from '../../native/src/index.ts';
import type { RecordedRequest, TurnFn } from '../fixtures/model-server/server.ts';
import { REPO } from '../helpers/harness.ts';
import { artifact, CuHarness, find, KEYS } from './cu-harness.ts';
import { formPassB, recordFormFill, requestParts, scriptedPassA } from './reflect-script.ts';

const TITLE = 'Runboard Reflect Form';
let cu: CuHarness;
let project: string;
let recording: string;
let manifest: ManifestStep[];

const parts = (r: RecordedRequest): { text: string; images: number } => requestParts(r.body);

/** Pass B, scripted per card marker: `good`, `retry` (invalid, then valid), `stubborn` (invalid twice). */
const passB: TurnFn = ({ body }) => {
  const text = requestParts(body).text;
  const again = text.includes('It could not be used');
  const bad = text.includes('MARK-stubborn') || (text.includes('MARK-retry') && !again);
  // Models wrap answers in prose and fences: reflect finds the JSON in them.
  return {
    text: `Here is the workflow:\n\`\`\`json\n${JSON.stringify(formPassB(text, bad ? '{fullname}' : '{full_name}'))}\n\`\`\``,
  };
};

function flow(): FlowSpec {
  return cu.flow({
    name: 'reflect',
    runner: 'reflect',
    prompt: path.join(REPO, 'prompts'),
  });
}

function card(marker: string): string {
  const file = path.join(project, 'cards', `${marker}.md`);
  writeFileSync(
    file,
    `---\ntitle: Fill the form\nflow: reflect\nrecording: ${recording}\n---\n# Task\nFill the form (${marker}).\n`,
  );
  return file;
}

async function launch(file: string) {
  const { runId } = await cu.h.client.launch({
    card: { path: file, title: path.basename(file), project },
    flow: flow(),
    workspace: cu.h.workspace,
    grant: cu.h.grant,
  });
  return cu.h.collect(runId);
}

async function reflect(marker: string) {
  const rec = await launch(card(marker));
  const mine = cu.model.requests.filter((r) => r.body && JSON.stringify(r.body).includes(`(${marker})`));
  return { rec, requests: mine };
}

beforeAll(async () => {
  cu = await CuHarness.start();
  cu.episodes([
    { name: 'pass-b', match: 'You are a workflow compiler', requireTools: false, turns: [passB] },
    {
      name: 'pass-a',
      match: 'You turn one recorded step',
      requireTools: false,
      turns: [scriptedPassA(TITLE)],
    },
  ]);
  project = path.join(cu.h.root, 'project');
  mkdirSync(path.join(project, 'cards'), { recursive: true });
  await cu.startForm(TITLE);
  const rec = await recordFormFill(
    path.join(project, 'recordings'),
    await find(TITLE, (e) => e.role === 'text' && e.name === 'Name'),
    await find(TITLE, (e) => e.role === 'push button' && e.name === 'Submit'),
  );
  recording = rec.id;
  manifest = readFileSync(path.join(rec.dir, 'manifest.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as ManifestStep);
}, 120_000);

afterAll(async () => {
  await cu?.stop();
});

describe('reflect', () => {
  it('makes a valid, parameterised workflow of a real recording, keeping its accessibility facts', async () => {
    expect(manifest.map((s) => s.action.type)).toEqual(['click', 'type', 'press', 'type', 'click']);
    const { rec, requests } = await reflect('MARK-good');
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    // Pass A once per step, with the screenshots before and after (the last step has no after); then pass B.
    const a = requests.filter((r) => r.episode === 'pass-a');
    const b = requests.filter((r) => r.episode === 'pass-b');
    expect(a).toHaveLength(5);
    expect(b).toHaveLength(1);
    expect(a.map((r) => parts(r).images).sort()).toEqual([1, 2, 2, 2, 2]);
    expect(parts(b[0]!).text).toContain('"action_value": "Ada Lovelace"'); // pass A's cards go to pass B
    // Through the supervisor's proxy, which put the stored key in (the run never held it).
    expect(a[0]!.headers.authorization).toBe(`Bearer ${KEYS.openai}`);

    const text = artifact(rec, 'schema.json')!;
    const check = checkWorkflow(JSON.parse(text));
    expect(check.ok).toBe(true);
    const w = JSON.parse(text) as Workflow;
    expect(text.startsWith('{\n  "version": 1,\n  "task_name": "Fill the form",')).toBe(true);
    expect(w.task_params.map((p) => p.name)).toEqual(['full_name', 'email']);
    // Pass B's outcome checks are kept per subtask, for replay to check instead of a model's word.
    expect(w.plan.subtasks.map((s) => s.outcome_check)).toEqual([
      { role: 'text', name: 'Name', value: '{full_name}' },
      { role: 'label', name: 'Save status', value: 'Saved: 1 time(s)' },
    ]);
    const [fill, submit] = w.plan.subtasks;
    expect(fill!.steps.map((s) => [s.action_type, s.action_value])).toEqual([
      ['CLICK', null],
      ['TYPE', '{full_name}'],
      ['KEYPRESS', 'Tab'],
      ['TYPE', '{email}'],
    ]);
    // The recorder's facts, verbatim, and a locator replay can find the element by.
    const click = fill!.steps[0]!;
    expect(click.recorded?.recording).toBe(recording);
    expect(click.recorded?.element).toEqual(manifest[0]!.element);
    expect(click.recorded?.action).toEqual(manifest[0]!.action);
    expect(click.locator).toMatchObject({
      app: 'runboard-form',
      window_title: TITLE,
      role: 'text',
      name: 'Name',
    });
    expect(submit!.steps[0]!.locator?.name).toBe('Submit');
    expect(submit!.steps[0]!.locator?.path.at(-1)).toEqual({ role: 'push button', name: 'Submit', index: 0 });
    expect(rec.result.metrics.modelCalls).toBe(6);
  });

  it('asks again once, with what was wrong, when an answer does not validate', async () => {
    const { rec, requests } = await reflect('MARK-retry');
    expect(rec.result.status, rec.result.summary).toBe('succeeded');
    const b = requests.filter((r) => r.episode === 'pass-b');
    expect(b).toHaveLength(2);
    expect(parts(b[1]!).text).toContain(
      'plan.subtasks[0].steps[1].action_value: {fullname} is neither a parameter (full_name, email) nor an upstream extract',
    );
    const w = JSON.parse(artifact(rec, 'schema.json')!) as Workflow;
    expect(w.plan.subtasks[0]!.steps[1]!.action_value).toBe('{full_name}');
    expect(rec.result.metrics.retries).toBe(1);
  });

  it('ends needs-input, saying what was wrong, when the answer is invalid twice', async () => {
    const { rec, requests } = await reflect('MARK-stubborn');
    expect(requests.filter((r) => r.episode === 'pass-b')).toHaveLength(2);
    expect(rec.result.status).toBe('needs-input');
    expect(JSON.stringify(rec.result.questions)).toContain('{fullname} is neither a parameter');
    expect(artifact(rec, 'schema.json')).toBeNull(); // nothing half-made
  });

  it('`runboard run` of a reflect card installs its schema.json as the board’s scheduler does', async () => {
    // The CLI on the harness's state root: its supervisor, grant store and stored key.
    writeFileSync(
      path.join(project, 'config.yaml'),
      `version: 1\nflows:\n  reflect: { runner: reflect, provider: openai, prompt: ${JSON.stringify(path.join(REPO, 'prompts'))} }\n`,
    );
    const file = path.join(project, 'cards', 'cli.md');
    writeFileSync(
      file,
      `---\ntitle: Fill the form\nflow: reflect\nworkspace: ${cu.h.workspace}\nrecording: ${recording}\n---\n# Task\nFill the form (MARK-cli).\n`,
    );
    expect(existsSync(workflowFileFor(file))).toBe(false);
    // not spawnSync: the scripted model server answers from this process
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const c = spawn(process.execPath, [path.join(REPO, 'dist', 'runboard.mjs'), 'run', '--json', file], {
        env: { ...process.env, RUNBOARD_HOME: cu.h.paths.root },
      });
      let stdout = '';
      let stderr = '';
      c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      c.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; workflow?: unknown; result?: { status: string } });
    const result = lines.find((l) => l.type === 'result');
    expect(result?.result?.status, r.stderr).toBe('succeeded');
    expect(r.status).toBe(0);
    expect(result?.workflow).toBe(workflowFileFor(file));
    expect(checkWorkflow(JSON.parse(readFileSync(workflowFileFor(file), 'utf8'))).ok).toBe(true);
  });

  it('fails at once, saying what to do, when the card names no recording', async () => {
    const file = path.join(project, 'cards', 'none.md');
    writeFileSync(file, '---\ntitle: No recording\nflow: reflect\n---\n# Task\nNothing.\n');
    const rec = await launch(file);
    expect(rec.result.status).toBe('failed');
    expect(rec.result.summary).toContain('add `recording: rec-…`');
  });
});
