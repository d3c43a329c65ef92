/**
 * Reflect through the board: a real `runboard serve` runs a queued reflect card (its supervisor, the
 * proxy, the scripted model server), and the host installs the workflow the run made into the card's
 * folder, where the inspector's workflow method finds it. The recording is a small one written here
 * in the recorder's format (two steps, tiny screenshots): reflect needs no display.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkflow } from '@runboard/supervisor/protocol';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import {
  CLICK_SEARCH,
  compilerEpisode,
  reflectCard,
  reflectFlow,
  SEARCH_FIELD,
  SHOP_WINDOW,
  stepAnswer,
  stepEpisode,
  writeRecording,
} from '../fixtures/reflect-recording.ts';
import { BoardServer, waitUntil } from './helpers/board.ts';
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
  ${reflectFlow()}
`;

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer({
    episodes: [
      compilerEpisode({
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
      stepEpisode(({ body }) => stepAnswer('Search.', JSON.stringify(body).includes('TYPE') ? 'lamp' : null)),
    ],
  });
  server = await BoardServer.start(
    CONFIG,
    { 'search.md': reflectCard(REC) },
    BoardServer.withModel('openai', model.url),
  );
  writeRecording(server.project, REC, PNG, [
    { at: 0, ...CLICK_SEARCH },
    { at: 900, action: { type: 'type', text: 'lamp' }, window: SHOP_WINDOW, focus: SEARCH_FIELD },
  ]);
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
    expect(view.workflow?.plan.subtasks[0]?.steps[0]?.recorded?.element).toEqual(SEARCH_FIELD);
  });
});
