/**
 * Seed 002 whole, each stage on what the one before made: a scripted person fills the GTK form on the
 * test desktop while the recorder records; a reflect card on a real `runboard serve` turns that
 * recording into a workflow (its supervisor, the proxy, the scripted model server answering pass A
 * and pass B, outcome checks included); in Debian's Chromium a person renames a parameter and edits
 * the Submit step's locator (the app has renamed its button to "Send" since), and saves; the card
 * becomes a replay card, its new parameter value given in the board's form, and the replay on the
 * desktop fills the changed app with it, by locators alone: no model call. Then the same workflow
 * on the app as recorded (its button says "Submit" again): the model is asked exactly for that step;
 * and on an app whose Submit does nothing: the run ends needs-input, not done; and on a private
 * display the supervisor starts with the changed app, by locators alone again. The app's state is
 * read back through its accessibility tree. The model server is the only double.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkflow, type Workflow } from '@runboard/supervisor/protocol';
import type { ManifestStep } from '../../native/src/index.ts';
import { DesktopSession } from '../desktop/session.ts';
import { formApp } from '../cu/cu-harness.ts';
import { predictClick, predictDone } from '../cu/replay-script.ts';
import { formReflectEpisodes, recordFormFill } from '../cu/reflect-script.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { seriousViolations } from './helpers/axe.ts';
import {
  ARTIFACTS,
  BoardServer,
  cardRunEnded,
  launchBrowser,
  openCard,
  REPO,
  waitUntil,
} from './helpers/board.ts';
import { FormApp } from './helpers/form-app.ts';
import { savePicture } from '../helpers/picture.ts';

const TITLE = 'Runboard Chain Form';

let session: DesktopSession;
let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let page: Page;
const form = new FormApp(TITLE, () => session.env);
let recording: string;
const schemaFile = (): string => path.join(server.project, 'cards', 'signup', 'schema.json');

const ended = (id: string, after?: string) => cardRunEnded(server, id, after);
let reflectRun: string | undefined;
let lastRun: string | undefined;

/** Card signup's flow changed from `from` to `to` in its file, as a person edits it. */
async function setFlow(from: string, to: string): Promise<void> {
  const src = await server.api<{ text: string }>('GET', '/api/cards/signup/source');
  await server.api('PUT', '/api/cards/signup/source', {
    text: src.text.replace(`flow: ${from}\n`, `flow: ${to}\n`),
    base: src.text,
  });
}

/** Replays card signup again with `person` as its person_name, on the form as the test left it. */
async function replayAgain(person: string) {
  await server.api('PUT', '/api/cards/signup/params', { params: { person_name: person } });
  await server.api('POST', '/api/cards/signup/move', { to: 'queued', index: 0 });
  const card = await ended('signup', lastRun);
  lastRun = card.runId;
  return card;
}

/** The model's requests that carry `marker` (the replay's query names the parameter's value). */
const asked = (marker: string) => model.requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker));

beforeAll(async () => {
  session = await DesktopSession.start();
  model = await startModelServer({ episodes: formReflectEpisodes(TITLE) });
  const prompts = JSON.stringify(path.join(REPO, 'prompts'));
  const env = JSON.stringify({
    DISPLAY: session.env.DISPLAY,
    DBUS_SESSION_BUS_ADDRESS: session.env.DBUS_SESSION_BUS_ADDRESS,
  });
  server = await BoardServer.start(
    `version: 1
scheduler:
  maxConcurrency: 2
flows:
  reflect: { runner: reflect, provider: openai, model: gpt-5-mini, prompt: ${prompts}, cap: 1 }
  replay:
    runner: replay
    provider: openai
    model: gpt-5.2-codex
    prompt: ${JSON.stringify(path.join(REPO, 'prompts', 'replay_agent'))}
    cap: 1
    env: ${env}
    computerUse: { imageMaxWidth: 640 }
  replay-private:
    runner: replay
    provider: openai
    model: gpt-5.2-codex
    prompt: ${JSON.stringify(path.join(REPO, 'prompts', 'replay_agent'))}
    cap: 1
    computerUse:
      privateDisplay: true
      displaySize: 1024x768x24
      imageMaxWidth: 640
      app: ${JSON.stringify(['/usr/bin/python3', formApp, '--title', TITLE, '--variant', 'renamed'])}
`,
    {},
    BoardServer.withModel('openai', model.url),
  );
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await form.close();
  await browser?.close();
  await server?.stop();
  await model?.close();
  await session?.stop();
});

describe('record → reflect → edit → replay', () => {
  it('records a person filling the form', async () => {
    await form.start();
    recording = (
      await recordFormFill(
        path.join(server.project, 'recordings'),
        await form.element((e) => e.role === 'text' && e.name === 'Name'),
        await form.element((e) => e.role === 'push button' && e.name === 'Submit'),
      )
    ).id;
    expect((await form.element((e) => e.name === 'Save status')).value).toBe('Saved: 1 time(s)');
    await form.close();
  });

  it(
    'reflects the recording into the card’s workflow, with outcome checks',
    { timeout: 120_000 },
    async () => {
      server.writeCard(
        'signup.md',
        `---\ntitle: Sign a person up\nflow: reflect\nworkspace: ./workspace\nrecording: ${recording}\n---\n# Task\nPut a name and an email in the form and submit it.\n`,
      );
      await waitUntil('the card on the board', () => server.card('signup'));
      await server.api('POST', '/api/cards/signup/move', { to: 'queued', index: 0 });
      const card = await ended('signup');
      reflectRun = card.runId;
      expect(card.column, JSON.stringify(card)).toBe('done');
      const w = JSON.parse(readFileSync(schemaFile(), 'utf8')) as Workflow;
      expect(checkWorkflow(w).ok).toBe(true);
      expect(w.task_params.map((p) => p.name)).toEqual(['full_name', 'email']);
      expect(w.plan.subtasks.map((s) => s.outcome_check)).toEqual([
        { role: 'text', name: 'Name', value: '{full_name}' },
        { role: 'label', name: 'Save status', value: 'Saved: 1 time(s)' },
      ]);
      const submit = w.plan.subtasks[1]!.steps[0]!;
      expect(submit.recorded?.recording).toBe(recording);
      expect(submit.locator).toMatchObject({ window_title: TITLE, role: 'push button', name: 'Submit' });
    },
  );

  it('renames a parameter and edits the Submit step’s locator in the editor, and saves', async () => {
    page = await openCard(server, browser, 'signup', 'Sign a person up');
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByRole('button', { name: 'Edit workflow' })
      .click();
    const status = page.locator('.workflow-editor [role="status"]');
    await status.getByText('The workflow is valid.').waitFor();
    const name = page.getByRole('textbox', { name: 'Parameter 1 name' });
    await name.fill('person_name');
    await name.blur();
    await page.getByRole('tab', { name: /Subtasks/ }).click();
    // The app calls its button "Send" now: the step finds it by that name.
    await page.getByText('Locator: push button “Submit”').click();
    await page.getByRole('textbox', { name: 'Subtask 2 step 1 locator name' }).fill('Send');
    await page.getByRole('textbox', { name: 'Subtask 2 step 1 intent' }).fill('Press Send to save the form.');
    await status.getByText('The workflow is valid.').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await savePicture(page, path.join(ARTIFACTS, 'workflow-chain-edit.png'), { fullPage: true });
    await page.getByRole('button', { name: 'Save workflow' }).click();
    await page
      .getByRole('region', { name: 'Workflow' })
      .getByText('parameters: person_name, email')
      .waitFor();
    const w = JSON.parse(readFileSync(schemaFile(), 'utf8')) as Workflow;
    expect(w.plan.subtasks[0]!.outcome_check?.value).toBe('{person_name}');
    expect(w.plan.subtasks[0]!.steps.map((s) => s.action_value)).toContain('{person_name}');
    const submit = w.plan.subtasks[1]!.steps[0]!;
    expect(submit.intent).toBe('Press Send to save the form.');
    expect(submit.locator?.name).toBe('Send');
    expect(submit.locator?.path.at(-1)).toMatchObject({ role: 'push button', name: 'Send' });
  });

  it(
    'replays the edited workflow with a new value in the changed app, without a model',
    { timeout: 120_000 },
    async () => {
      // The card becomes a replay card (its workflow stays in its folder).
      await setFlow('reflect', 'replay');
      await form.start(['--variant', 'renamed']);
      await page.reload();
      const params = page.getByRole('region', { name: 'Replay parameters' });
      const field = params.getByRole('textbox', { name: 'person_name' });
      await field.waitFor();
      const before = model.requests.length;
      await field.fill('Grace Hopper');
      await params.getByRole('button', { name: 'Save and queue' }).click();
      await params.getByText('Saved; the card is queued.').waitFor();
      const card = await ended('signup', reflectRun);
      lastRun = card.runId;
      expect(card.column, readFileSync(server.cardFile('signup.md'), 'utf8')).toBe('done');
      // The app holds the new value, the recorded email, and was saved once, by its "Send" button.
      expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe('Grace Hopper');
      expect((await form.element((e) => e.role === 'text' && e.name === 'Email')).value).toBe(
        'ada@example.org',
      );
      expect((await form.element((e) => e.name === 'Save status')).value).toBe('Saved: 1 time(s)');
      // Every step by its locator: the model was not asked.
      expect(model.requests.slice(before)).toEqual([]);
    },
  );

  it(
    'asks the model exactly for the step whose button is named otherwise again, then goes back to locators',
    { timeout: 120_000 },
    async () => {
      await form.close();
      await form.start(); // the app as recorded: its button says "Submit", the edited workflow "Send"
      const submit = await form.element((e) => e.role === 'push button' && e.name === 'Submit');
      model.setEpisodes([
        {
          name: 'drift',
          match: 'Alan Turing',
          indexBy: 'requests',
          turns: [predictClick(submit, 'the button that saves the form says Submit')],
        },
      ]);
      const card = await replayAgain('Alan Turing');
      expect(card.column, readFileSync(server.cardFile('signup.md'), 'utf8')).toBe('done');
      expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe('Alan Turing');
      expect((await form.element((e) => e.name === 'Save status')).value).toBe('Saved: 1 time(s)');
      const reqs = asked('Alan Turing');
      expect(reqs).toHaveLength(1);
      expect(JSON.stringify(reqs[0]!.body)).toContain('no push button \\"Send\\"');
    },
  );

  it(
    'ends needs-input, not done, when a subtask’s outcome check never holds',
    { timeout: 120_000 },
    async () => {
      await form.close();
      await form.start(['--variant', 'dead-submit']); // Submit does nothing
      const done = predictDone('it looks saved');
      model.setEpisodes([
        { name: 'dead', match: 'Edsger Dijkstra', indexBy: 'requests', turns: [done, done, done] },
      ]);
      const card = await replayAgain('Edsger Dijkstra');
      const text = readFileSync(server.cardFile('signup.md'), 'utf8');
      expect(card.column, text).toBe('needs-input');
      expect(text).toContain('its expected outcome never appeared');
      expect(text).toContain('Saved: 1 time(s)');
      expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe(
        'Edsger Dijkstra',
      );
      expect((await form.element((e) => e.name === 'Save status')).value).toBe('Saved: never');
    },
  );

  it(
    'replays on a private display (computerUse.privateDisplay) with the flow’s app, leaving the desktop in front alone',
    { timeout: 120_000 },
    async () => {
      await setFlow('replay', 'replay-private');
      const card = await replayAgain('Barbara Liskov');
      // Done only when both outcome checks held on that display: Name showed the new value, and
      // the form said it was saved; every step by locator, no model.
      expect(card.column, readFileSync(server.cardFile('signup.md'), 'utf8')).toBe('done');
      expect(asked('Barbara Liskov')).toEqual([]);
      // The form on the desktop in front is as the previous test left it.
      expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe(
        'Edsger Dijkstra',
      );
    },
  );

  it(
    'with a CPU hog started by the test: the recording keeps every step on its element, and the replay needs no model',
    { timeout: 180_000 },
    async () => {
      const hog = spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' });
      try {
        await form.close();
        await form.start(['--variant', 'renamed']);
        const rec = await recordFormFill(
          path.join(server.project, 'recordings'),
          await form.element((e) => e.role === 'text' && e.name === 'Name'),
          await form.element((e) => e.role === 'push button' && e.name === 'Send'),
        );
        const steps = readFileSync(path.join(rec.dir, 'manifest.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as ManifestStep);
        expect(steps.map((x) => x.action.type)).toEqual(['click', 'type', 'press', 'type', 'click']);
        expect(steps.map((x) => (x.action.type === 'click' ? x.element?.name : x.focus?.name))).toEqual([
          'Name',
          'Name',
          'Name', // a Tab's field is the one it left (the focus at its own time: docs/desktop.md)
          'Email',
          'Send',
        ]);
        const meta = JSON.parse(readFileSync(path.join(rec.dir, 'recording.json'), 'utf8')) as {
          stopReason: string;
          keptUp: boolean;
          message: string;
        };
        expect(meta.stopReason).toBe('stopped');
        expect(meta.message.includes('could not keep up')).toBe(!meta.keptUp);
        // Replayed on the loaded desktop, by locators alone.
        await setFlow('replay-private', 'replay');
        await form.close();
        await form.start(['--variant', 'renamed']);
        const before = model.requests.length;
        const card = await replayAgain('Margaret Hamilton');
        expect(card.column, readFileSync(server.cardFile('signup.md'), 'utf8')).toBe('done');
        expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe(
          'Margaret Hamilton',
        );
        expect((await form.element((e) => e.name === 'Save status')).value).toBe('Saved: 1 time(s)');
        expect(model.requests.slice(before)).toEqual([]);
      } finally {
        hog.kill('SIGKILL');
      }
    },
  );
});
