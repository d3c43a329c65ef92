/**
 * A sensitive workflow parameter (a PIN) given to a replay is never at rest in clear (issue 30): the
 * board's form hands it to the supervisor's secrets (0600 under the state root) and the card keeps a
 * reference; the run gets the value from the supervisor, types it into a plain field (the worst case:
 * a field that shows what it holds) on the test desktop, and leaves it in no event, log, report, step
 * screenshot (the field is masked grey, as the recorder masks password fields) nor model request. Then
 * the step drifts: the model is asked for it and types the parameter by its name, `{pin}`, never seeing
 * its value; the report says the model typed it. Every byte the board, the supervisor and the runs left
 * under the test's root (state root, project, logs, artifacts) is searched for the value.
 * Real `runboard serve`, supervisor, jailed worker, GTK app, AT-SPI; the model server is the only double.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializeWorkflow, type Workflow, type WorkflowStep } from '@runboard/supervisor/protocol';
import { desktop } from '../../native/src/index.ts';
import { DesktopSession } from '../desktop/session.ts';
import { grayPatch } from '../helpers/gray-patch.ts';
import { predictClick } from '../cu/replay-script.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, cardRunEnded, REPO, waitUntil, writeCardWorkflow } from './helpers/board.ts';
import { FormApp } from './helpers/form-app.ts';

const TITLE = 'Runboard Secret Form';
const PIN = '4471905382';
const CARD = 'pin-card';

let session: DesktopSession;
let model: ModelServer;
let server: BoardServer;
const form = new FormApp(TITLE, () => session.env);

/** The committed form workflow plus a sensitive `pin` typed into the (plain) Email field. */
function pinWorkflow(emailName = 'Email'): string {
  const w = JSON.parse(
    readFileSync(path.join(REPO, 'tests/fixtures/workflows/form-replay/schema.json'), 'utf8'),
  ) as Workflow;
  w.task_params.push({
    name: 'pin',
    type: 'string',
    description: 'the PIN to put in the form',
    example: '',
    sensitive: true,
    optional: false,
  });
  const first = w.plan.subtasks[0]!;
  const loc = first.steps[0]!.locator!;
  const step = (i: number, type: 'CLICK' | 'TYPE', value: string | null): WorkflowStep => ({
    i,
    action_type: type,
    action_value: value,
    intent: type === 'CLICK' ? 'Focus the Email field' : 'Type the PIN into the Email field',
    expected_current_state: 'The form is open',
    target: { primary: 'the Email text field', fallback: null },
    post_action: ['The Email field holds the PIN'],
    locator: { app: loc.app, window_title: TITLE, role: 'text', name: emailName, path: [] },
  });
  first.steps.push(step(2, 'CLICK', null), step(3, 'TYPE', '{pin}'));
  for (const s of first.steps) if (s.locator) s.locator.window_title = TITLE;
  for (const st of w.plan.subtasks)
    for (const s of st.steps) {
      if (s.locator) s.locator.window_title = TITLE;
      if (s.recorded?.window) s.recorded.window.title = TITLE;
    }
  return serializeWorkflow(w);
}

/** Every regular file under `dir`. */
function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name));
}

/** The supervisor's store of parameter secrets (the one place the value may be). */
const secretStore = (): string => path.join(server.home, 'keys', 'params');

/** Files under the test's root holding the PIN in any of the forms an encoder would leave it. */
function leaks(): string[] {
  const forms = [
    PIN,
    Buffer.from(PIN).toString('base64').slice(0, 12),
    Buffer.from(PIN, 'utf16le').toString('latin1'),
  ];
  return files(server.root)
    .filter((f) => !f.startsWith(secretStore() + path.sep))
    .filter((f) => {
      const text = readFileSync(f).toString('latin1');
      return forms.some((x) => text.includes(x));
    });
}

const front = (): Record<string, unknown> => {
  const text = readFileSync(server.cardFile(`${CARD}.md`), 'utf8');
  return parse(/^---\n([\s\S]*?)\n---/.exec(text)![1]!) as Record<string, unknown>;
};

const ended = (id: string, after?: string) => cardRunEnded(server, id, after);

/** The run's folder (its events, logs and artifacts) in the state root. */
function runDir(runId: string): string {
  const hit = files(server.home).find((f) => f.endsWith(path.join(runId, 'events.jsonl')));
  if (!hit) throw new Error(`no events.jsonl of run ${runId}`);
  return path.dirname(hit);
}

beforeAll(async () => {
  session = await DesktopSession.start();
  model = await startModelServer({ episodes: [] });
  const env = JSON.stringify({
    DISPLAY: session.env.DISPLAY,
    DBUS_SESSION_BUS_ADDRESS: session.env.DBUS_SESSION_BUS_ADDRESS,
  });
  server = await BoardServer.start(
    `version: 1
scheduler:
  maxConcurrency: 2
flows:
  replay:
    runner: replay
    provider: openai
    model: gpt-5.2-codex
    prompt: ${JSON.stringify(path.join(REPO, 'prompts', 'replay_agent'))}
    cap: 1
    env: ${env}
    computerUse: { imageMaxWidth: 640 }
`,
    {
      [`${CARD}.md`]: `---\ntitle: Put the PIN in\nflow: replay\nworkspace: ./workspace\n---\n# Task\nFill the form with a PIN.\n`,
    },
    BoardServer.withModel('openai', model.url),
  );
  writeCardWorkflow(server, CARD, pinWorkflow());
  await waitUntil('the card on the board', () => server.card(CARD));
}, 120_000);

afterAll(async () => {
  await form.close();
  await server?.stop();
  await model?.close();
  await session?.stop();
});

describe('a sensitive parameter given to a replay', () => {
  let firstRun: string | undefined;

  it(
    'is kept by the supervisor, typed by locator, and left nowhere in clear',
    { timeout: 120_000 },
    async () => {
      await form.start();
      await server.api('PUT', `/api/cards/${CARD}/params`, { params: { name: 'Grace Hopper', pin: PIN } });
      // The card holds a reference, never the value; the form gets nothing of it back.
      const params = front().params as Record<string, unknown>;
      expect(params.name).toBe('Grace Hopper');
      expect(params.pin).toEqual({ secret: expect.stringMatching(/^[a-z0-9-]+$/) });
      const view = await server.api<{ params: { name: string; value?: string; stored?: boolean }[] }>(
        'GET',
        `/api/cards/${CARD}/params`,
      );
      expect(view.params.find((p) => p.name === 'pin')).toMatchObject({ stored: true });
      expect(JSON.stringify(view)).not.toContain(PIN);
      // The value lives in the supervisor's store: one file, 0600, in a 0700 folder.
      const stored = files(secretStore());
      expect(stored).toHaveLength(1);
      expect(statSync(stored[0]!).mode & 0o777).toBe(0o600);
      expect(statSync(secretStore()).mode & 0o777).toBe(0o700);

      await server.api('POST', `/api/cards/${CARD}/move`, { to: 'queued', index: 0 });
      const card = await ended(CARD);
      firstRun = card.runId;
      expect(card.column, readFileSync(server.cardFile(`${CARD}.md`), 'utf8')).toBe('done');
      // The run typed the value where the workflow says (read back through AT-SPI), by locator alone.
      expect((await form.element((e) => e.role === 'text' && e.name === 'Email')).value).toBe(PIN);
      expect((await form.element((e) => e.role === 'text' && e.name === 'Name')).value).toBe('Grace Hopper');
      expect(model.requests).toEqual([]);

      // The step screenshots after the PIN was typed show the Email field grey.
      const dir = runDir(card.runId!);
      const email = await form.element((e) => e.role === 'text' && e.name === 'Email');
      const screenW = (await desktop.capture({ scale: 0.05, format: 'jpeg', cursor: false })).source[2];
      const events = readFileSync(path.join(dir, 'events.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as {
              data?: { kind?: string; step?: number; screenshot?: string; args?: { type?: string } };
            },
        );
      const steps = events.filter((e) => e.data?.kind === 'cu-step').map((e) => e.data!);
      const typed = steps.findIndex((s) => s.step === 4);
      expect(steps[typed]!.args).toMatchObject({ type: 'type' });
      for (const s of steps.slice(typed)) {
        const shot = files(dir).find((f) => f.endsWith(s.screenshot!))!;
        const p = grayPatch(shot, screenW, email.bounds);
        expect(Math.abs(p.mean - 128), `${s.screenshot}: ${JSON.stringify(p)}`).toBeLessThan(12);
        expect(p.max - p.min, `${s.screenshot}: ${JSON.stringify(p)}`).toBeLessThan(40);
      }
      expect(leaks()).toEqual([]);
    },
  );

  it(
    'when its step drifts, the model types it by name and never sees it; the report says so',
    { timeout: 120_000 },
    async () => {
      await form.close();
      await form.start();
      // The workflow's Email step now looks for a field the app does not have: the model is asked.
      writeCardWorkflow(server, CARD, pinWorkflow('E-mail'));
      const email = await form.element((e) => e.role === 'text' && e.name === 'Email');
      model.setEpisodes([
        {
          name: 'drift',
          match: 'Fill in the name on the test form',
          indexBy: 'requests',
          turns: [
            predictClick(email, 'the field is called Email here'),
            {
              toolCalls: [
                {
                  name: 'computer_use',
                  arguments: { action: 'type', text: '{pin}', observation: 'typing the PIN', memory: '' },
                },
              ],
            },
          ],
        },
      ]);
      await server.api('POST', `/api/cards/${CARD}/move`, { to: 'queued', index: 0 });
      const card = await ended(CARD, firstRun);
      expect(card.column, readFileSync(server.cardFile(`${CARD}.md`), 'utf8')).toBe('done');
      expect((await form.element((e) => e.role === 'text' && e.name === 'Email')).value).toBe(PIN);
      expect(model.requests).toHaveLength(2);
      for (const r of model.requests) expect(JSON.stringify(r.body)).not.toContain(PIN);
      const query = JSON.stringify(model.requests[1]!.body);
      expect(query).toContain('{pin}');
      const report = readFileSync(path.join(runDir(card.runId!), 'artifacts', 'report.md'), 'utf8');
      expect(report).toMatch(/typed the sensitive parameter `pin`/);
      expect(leaks()).toEqual([]);
    },
  );
});
