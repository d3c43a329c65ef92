/**
 * The live view of a private display (`live.jpg`, rewritten every frame) never shows a sensitive value
 * (issue 30): a replay on its own display types a PIN into a plain field (one that shows its text), and
 * every live frame the run writes is kept by the test as it appears (a hard link taken at each rename)
 * and read: the field is grey from the moment the PIN is typed, in every frame after it, as in the step
 * screenshots. Each step's screenshot asks the live view for a frame: the view shows what every step
 * did, on a busy machine too. Real supervisor, jailed worker, private Xvfb + AT-SPI, GTK app; the model server is the
 * only double (it is never asked).
 */
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  watch,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import {
  serializeWorkflow,
  workflowFileFor,
  type Workflow,
  type WorkflowStep,
} from '../../supervisor/src/protocol/workflow.ts';
import { grayPatch } from '../helpers/gray-patch.ts';
import { REPO, waitUntil } from '../helpers/harness.ts';
import { type CuHarness, cuEvents, find, formApp } from './cu-harness.ts';
import { useCuHarness } from './use-harness.ts';

const TITLE = 'Runboard Live Secret Form';
const PIN = '8305527194';
const FIXTURE = path.join(REPO, 'tests', 'fixtures', 'workflows', 'form-replay', 'schema.json');

let t: CuHarness;
useCuHarness((h) => (t = h));

/** The committed form workflow, its first subtask then Tabbing to Email and typing the sensitive `pin`. */
function pinCard(): string {
  const w = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Workflow;
  w.task_params.push({
    name: 'pin',
    type: 'string',
    description: 'a PIN',
    example: '',
    sensitive: true,
    optional: false,
  });
  const first = w.plan.subtasks[0]!;
  const loc = first.steps[0]!.locator!;
  const step = (i: number, type: 'KEYPRESS' | 'TYPE', value: string): WorkflowStep => ({
    i,
    action_type: type,
    action_value: value,
    intent: type === 'TYPE' ? 'Type the PIN into the Email field' : 'Go to the Email field',
    expected_current_state: 'The form is open',
    target: { primary: 'the Email text field', fallback: null },
    post_action: ['The Email field holds the PIN'],
    locator: {
      app: loc.app,
      window_title: TITLE,
      role: 'text',
      name: type === 'TYPE' ? 'Email' : 'Name',
      path: [],
    },
  });
  // By Tab, not a click: the pointer stays off the field, so the frames show the field itself.
  first.steps.push(step(2, 'KEYPRESS', 'Tab'), step(3, 'TYPE', '{pin}'));
  for (const st of w.plan.subtasks)
    for (const s of st.steps) {
      if (s.locator) s.locator.window_title = TITLE;
      if (s.recorded?.window) s.recorded.window.title = TITLE;
    }
  const card = path.join(t.h.root, 'live-pin.md');
  mkdirSync(path.dirname(workflowFileFor(card)), { recursive: true });
  writeFileSync(workflowFileFor(card), serializeWorkflow(w));
  // The value in the card itself (a hand-written one: the run warns of it and treats it as sensitive).
  writeFileSync(
    card,
    `---\ntitle: Live PIN\nflow: replay\nparams:\n  name: "Grace Hopper"\n  pin: "${PIN}"\n---\n# Task\nReplay.\n`,
  );
  return card;
}

it(
  'a private display’s live frames show the field a sensitive value is typed into grey, from the moment it is typed',
  { timeout: 180_000 },
  async () => {
    // Where the Email field is: the same app, same size of screen, on the test desktop (the private
    // display's is gone with the run); the step screenshots below prove the place is right.
    await t.startForm(TITLE);
    const email = (await find(TITLE, (e) => e.role === 'text' && e.name === 'Email')).bounds;
    await t.closeForms();
    // beside the run's folder (a hard link needs the same file system)
    const kept = mkdtempSync(path.join(t.h.root, 'live-frames-'));
    try {
      const flow = t.flow(
        { name: 'replay', runner: 'replay', prompt: path.join(REPO, 'prompts', 'replay_agent'), sandbox: {} },
        {
          privateDisplay: true,
          displaySize: '1280x800x24',
          // The timer's frames only at the start: every later frame is one a step's screenshot asked
          // for, so a frame after the PIN is certain however loaded the machine (at 100 ms a loaded
          // CI wrote 2 frames in the whole run, both before it).
          liveFrameMs: 60_000,
          app: ['/usr/bin/python3', formApp, '--title', TITLE],
        },
      );
      const { runId, logDir } = await t.launch(pinCard(), flow);
      const artifacts = path.join(logDir, 'artifacts');
      await waitUntil('the run’s artifacts folder', () => existsSync(artifacts), 30_000);
      // Every live frame as it is renamed into place: a hard link to that very file (the next frame
      // replaces the name, not the file).
      let n = 0;
      const watcher = watch(artifacts, (_e, name) => {
        if (name !== 'live.jpg') return;
        try {
          linkSync(path.join(artifacts, 'live.jpg'), path.join(kept, `${String(++n).padStart(5, '0')}.jpg`));
        } catch {
          // removed at the run's end, or replaced twice before this ran: the next one is kept
        }
      });
      const rec = await t.h.collect(runId).finally(() => watcher.close());
      expect(rec.result.status, rec.result.summary).toBe('succeeded');
      expect(t.model.requests).toEqual([]);

      // The step screenshots after the typing are grey there (the place is right).
      const steps = cuEvents(rec, 'cu-step') as {
        args?: { type?: string; text?: string };
        screenshot?: string;
      }[];
      const typed = steps.findIndex((s) => s.args?.type === 'type' && s.args.text === '{pin}');
      expect(typed).toBeGreaterThan(0);
      for (const s of steps.slice(typed)) {
        const p = grayPatch(path.join(artifacts, s.screenshot!), 1280, email);
        expect(Math.abs(p.mean - 128), `${s.screenshot}: ${JSON.stringify(p)}`).toBeLessThan(12);
      }

      // Every live frame kept: the field is plain (before the PIN) or grey (after it); never its text.
      const frames = readdirSync(kept).sort();
      const looks = frames.map((f) => ({
        f,
        ...grayPatch(path.join(kept, f), 1280, email, { x: [0.1, 0.9], y: [0.3, 0.7] }),
      }));
      const grey = (p: { mean: number; min: number; max: number }): boolean =>
        Math.abs(p.mean - 128) < 12 && p.max - p.min < 40;
      // before it: one colour (the blank field; the screen before the app drew its window)
      const plain = (p: { mean: number; min: number; max: number }): boolean => p.max - p.min < 40;
      const first = looks.findIndex(grey);
      expect(
        first,
        `frames: ${frames.length} of ${String(rec.result.metrics.liveFrames)} written`,
      ).toBeGreaterThan(0);
      expect(looks.slice(0, first).filter((p) => !plain(p))).toEqual([]);
      expect(looks.slice(first).filter((p) => !grey(p))).toEqual([]);
    } finally {
      if (!process.env.KEEP_FRAMES) rmSync(kept, { recursive: true, force: true });
    }
  },
);
