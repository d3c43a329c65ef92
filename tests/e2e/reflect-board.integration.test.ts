/**
 * Reflect through the board: a real `runboard serve` runs a queued reflect card (its supervisor, the
 * proxy, the scripted model server), and the host installs the workflow the run made into the card's
 * folder, where the inspector's workflow method finds it. The recording is a small one written here
 * in the recorder's format (two steps, tiny screenshots): reflect needs no display.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkflow } from '@runboard/supervisor/protocol';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, REPO, waitUntil } from './helpers/board.ts';
import type { CardWorkflowView } from '../../host/src/shared/workflow-edit.ts';

const REC = 'rec-20261122-231500-a1b2c3';
// The smallest valid PNG (1x1): reflect sends the screenshots as they are.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const CONFIG = `version: 1
scheduler:
  maxConcurrency: 2
flows:
  reflect: { runner: reflect, provider: openai, model: gpt-5-mini, prompt: ${JSON.stringify(path.join(REPO, 'prompts'))}, cap: 1 }
`;
const element = {
  role: 'text',
  name: 'Search',
  bounds: [10, 10, 100, 20],
  path: [{ role: 'text', name: 'Search', index: 0 }],
};
const win = { id: 1, app: 'shop', title: 'Shop', bounds: [0, 0, 800, 600] };

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer({
    episodes: [
      {
        name: 'pass-b',
        match: 'You are a workflow compiler',
        requireTools: false,
        turns: [
          {
            text: JSON.stringify({
              detailed_task_description: 'Search the shop.',
              success_criteria: 'Results are shown.',
              task_params: [
                {
                  name: 'query',
                  type: 'string',
                  description: 'What to find.',
                  example: 'lamp',
                  sensitive: false,
                },
              ],
              subtasks: [{ text: 'Search for {query}', expected_outcome: 'Results for {query} are listed.' }],
              steps: [
                { i: 0, subtask: 0, action_value: null },
                { i: 1, subtask: 0, action_value: '{query}' },
              ],
            }),
          },
        ],
      },
      {
        name: 'pass-a',
        match: 'You turn one recorded step',
        requireTools: false,
        turns: [
          ({ body }) => ({
            text: JSON.stringify({
              expected_current_state: 'The shop is open.',
              intent: 'Search.',
              target: { primary: 'The search field', fallback: null },
              post_action: ['Something changes.'],
              action_value: JSON.stringify(body).includes('TYPE') ? 'lamp' : null,
            }),
          }),
        ],
      },
    ],
  });
  server = await BoardServer.start(
    CONFIG,
    {
      'search.md': `---\ntitle: Search the shop\nflow: reflect\nworkspace: ./workspace\nrecording: ${REC}\n---\n# Task\nSearch the shop.\n`,
    },
    BoardServer.withModel('openai', model.url),
  );
  const rec = path.join(server.project, 'recordings', REC);
  mkdirSync(path.join(rec, 'screenshots'), { recursive: true });
  for (const f of ['start', '0001', '0002']) writeFileSync(path.join(rec, 'screenshots', `${f}.png`), PNG);
  const steps = [
    {
      step: 1,
      at: 0,
      screenshot: 'screenshots/0001.png',
      action: { type: 'click', x: 60, y: 20, button: 'left' },
      window: win,
      element,
    },
    {
      step: 2,
      at: 900,
      screenshot: 'screenshots/0002.png',
      action: { type: 'type', text: 'lamp' },
      window: win,
      focus: element,
    },
  ];
  writeFileSync(path.join(rec, 'manifest.jsonl'), steps.map((s) => JSON.stringify(s)).join('\n') + '\n');
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

describe('a reflect card on the board', () => {
  it("runs, and its workflow is installed in the card's folder", async () => {
    await server.api('POST', '/api/cards/search/move', { to: 'queued', index: 0 });
    const card = await waitUntil(
      'the run to end',
      async () => {
        const c = await server.card('search');
        return c && (c.column === 'done' || c.column === 'failed' || c.column === 'needs-input')
          ? c
          : undefined;
      },
      60_000,
    );
    expect(card.column, JSON.stringify(card)).toBe('done');
    const text = readFileSync(path.join(server.project, 'cards', 'search', 'schema.json'), 'utf8');
    expect(checkWorkflow(JSON.parse(text)).ok).toBe(true);
    const view = await server.api<CardWorkflowView>('GET', '/api/cards/search/workflow');
    expect(view.file).toBe('cards/search/schema.json');
    expect(view.text).toBe(text);
    expect(view.workflow?.plan.subtasks[0]?.steps.map((s) => s.action_value)).toEqual([null, '{query}']);
    expect(view.workflow?.plan.subtasks[0]?.steps[0]?.recorded?.element).toEqual(element);
  });
});
