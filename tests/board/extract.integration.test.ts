/**
 * Recording → task from the board (a real `runboard serve`, its supervisor, the scripted model
 * server): `extractTask` (POST /api/extract) answers at once with the card and the run; the card then
 * holds the task with its question, which the Q&A method answers (the one clarification round); a
 * provider's failure shows on the card in the board's view; a bad input is refused saying why.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CardDetail, ExtractStart } from '../../host/src/shared/board-types.ts';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';
import { EXTRACT_CONFIG, makeVideo, TASK_WITH_QUESTION } from '../fixtures/extract-board.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';

let model: ModelServer;
let server: BoardServer;
let video: string;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(EXTRACT_CONFIG, {}, BoardServer.withModel('openai', model.url));
  video = path.join(server.workspace, 'demo.mp4'); // in the granted folder
  makeVideo(video);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

const settled = async (id: string) => {
  await waitUntil('the extraction has ended', async () => !(await server.card(id))?.needs, 60_000);
  return (await server.card(id))!;
};

describe('the board’s → task card', () => {
  it('makes a card with the task, whose question the Q&A panel answers', async () => {
    model.setEpisodes([{ name: 'x', requireTools: false, turns: [{ text: TASK_WITH_QUESTION }] }]);
    const started = await server.api<ExtractStart>('POST', '/api/extract', { file: video });
    expect(started.runId).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    const card = await settled(started.cardId);
    expect(card).toMatchObject({ column: 'needs-input', flow: 'desktop', openQuestions: 1 });
    expect(card.lastError).toBeUndefined();
    await server.api('POST', `/api/cards/${started.cardId}/answer`, {
      answers: [{ index: 0, answer: 'ada@example.com' }],
    });
    const detail = await server.api<CardDetail>('GET', `/api/cards/${started.cardId}`);
    expect(detail.body).toContain('# Task\nSign Ada up');
    expect(detail.body).toContain(
      '- [x] Which email address should the form get?\n  Answer: ada@example.com',
    );
    expect(detail.body).not.toMatch(/TaskDetected/);
    expect(detail.runs.map((r) => r.runId)).toContain(started.runId); // the extraction, in the inspector
  });

  it("shows the provider's failure on the card", async () => {
    model.setEpisodes([
      { name: 'x', requireTools: false, turns: [{ status: 500, errorMessage: 'the model is down' }] },
    ]);
    const started = await server.api<ExtractStart>('POST', '/api/extract', { file: video });
    const card = await settled(started.cardId);
    expect(card.lastError).toMatch(/openai answered 500: the model is down/);
  });

  it('a board restarted while an extraction runs still writes its task when the run ends', async () => {
    model.setEpisodes([
      { name: 'x', requireTools: false, turns: [{ text: TASK_WITH_QUESTION, delayMs: 4000 }] },
    ]);
    model.requests.length = 0;
    const started = await server.api<ExtractStart>('POST', '/api/extract', { file: video });
    await waitUntil('the model is asked', () => model.requests.some((r) => r.api === 'responses'));
    const exited = new Promise((r) => server.proc.once('exit', r));
    server.proc.kill('SIGTERM'); // the host only: the supervisor and the run go on
    await exited;
    await server.startServe();
    const card = await settled(started.cardId);
    expect(card).toMatchObject({ column: 'needs-input', openQuestions: 1 });
    expect(card.lastError).toBeUndefined();
    expect(readFileSync(server.cardFile(`${started.cardId}.md`), 'utf8')).not.toMatch(/extraction:/);
  });

  it('refuses a bad input with a clear message and makes no card', async () => {
    const before = (await server.board()).cards.length;
    await expect(
      server.api('POST', '/api/extract', { file: path.join(server.workspace, 'missing.mp4') }),
    ).rejects.toThrow(/400 no file .*missing\.mp4/);
    await expect(server.api('POST', '/api/extract', {})).rejects.toThrow(/400 name one input/);
    expect((await server.board()).cards.length).toBe(before);
  });
});
