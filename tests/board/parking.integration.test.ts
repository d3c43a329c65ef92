/**
 * A rate limit that outlasts the retry budget parks the flow instead of failing run after run: a real
 * computer-use run (on a private display the supervisor starts, against the scripted model server, the
 * one test double) meets a 429 with a reset an hour away; the scheduler parks its flow until then, the
 * board shows it, the next queued card of that flow waits (saying why), and a card of another flow runs.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, REPO, waitUntil } from '../e2e/helpers/board.ts';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 2 }
flows:
  shell: { runner: command, cap: 1 }
  desktop:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${path.join(REPO, 'prompts', 'execution_agent')}
    cap: 1
    timeout: 2m
    computerUse:
      privateDisplay: true
      displaySize: 800x600x24
`;
const card = (title: string, flow: string, extra = ''): string =>
  `---\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\n${extra}---\n# Task\n${title}\n`;

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer();
  model.setEpisodes([
    {
      name: 'limited',
      match: 'EPISODE-LIMIT',
      indexBy: 'requests',
      turns: [{ status: 429, headers: { 'retry-after': '3600' } }],
    },
  ]);
  server = await BoardServer.start(
    CONFIG,
    {
      'first.md': card('EPISODE-LIMIT first', 'desktop'),
      'second.md': card('EPISODE-LIMIT second', 'desktop'),
      'other.md': card('Other flow', 'shell', 'command: echo other-flow-ran\n'),
    },
    BoardServer.withModel('openai', model.url),
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

describe('a flow parked by a rate limit', () => {
  it('parks the flow until the reset; its next card waits, another flow runs', async () => {
    const id = async (title: string): Promise<string> =>
      (await server.board()).cards.find((c) => c.title === title)!.id;
    const first = await id('EPISODE-LIMIT first');
    await server.api('POST', `/api/cards/${first}/move`, { to: 'queued', index: 0 });
    await waitUntil(
      'the first run to fail',
      async () => (await server.card(first))?.column === 'failed',
      90_000,
    );

    const board = await server.board();
    const flow = board.flows.find((f) => f.name === 'desktop')!;
    expect(Date.parse(flow.parkedUntil!)).toBeGreaterThan(Date.now() + 3000_000);

    const second = await id('EPISODE-LIMIT second');
    await server.api('POST', `/api/cards/${second}/move`, { to: 'queued', index: 0 });
    await waitUntil('the second card to say why it waits', async () =>
      /parked until .*rate limit/.test((await server.card(second))?.waiting ?? ''),
    );
    const other = await id('Other flow');
    await server.api('POST', `/api/cards/${other}/move`, { to: 'queued', index: 1 });
    await waitUntil(
      'the other flow to run',
      async () => (await server.card(other))?.column === 'done',
      60_000,
    );
    expect((await server.card(second))?.column).toBe('queued'); // still parked, not failed again
    expect(model.requests.filter((r) => r.episode === 'limited')).toHaveLength(1); // no second request
  });
});
