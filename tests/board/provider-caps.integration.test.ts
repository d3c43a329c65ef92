/**
 * Caps and rate limits per provider key, across flows, with real computer-use runs (private displays,
 * the scripted model server upstream) scheduled by a real board: two flows on one key with
 * `providers.openai.maxConcurrent: 1` never have two runs at once (the second card says which cap holds
 * it), and a 429 with a reset met by a run of one flow parks the other flow's card on the same key
 * until the reset, after which it starts.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, REPO, waitUntil } from '../e2e/helpers/board.ts';

const flow = (name: string): string => `  ${name}:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${path.join(REPO, 'prompts', 'execution_agent')}
    cap: 2
    timeout: 2m
    computerUse: { privateDisplay: true, displaySize: 800x600x24, liveFrameMs: 0, maxRetries: 0 }
`;
const CONFIG = `version: 2
scheduler: { maxConcurrency: 4 }
providers:
  openai: { maxConcurrent: 1 }
flows:
${flow('one')}${flow('two')}`;
const card = (title: string, flowName: string): string =>
  `---\ntitle: ${title}\nflow: ${flowName}\nworkspace: ./workspace\n---\n# Task\n${title}\n`;
const done = { text: JSON.stringify({ status: 'SUCCESS', summary: 'done', error: '', questions: [] }) };

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer();
  model.setEpisodes([
    // holds its answer until the test sends the release request: the run is in flight until then
    { name: 'held', match: 'CAP-HELD', turns: [{ ...done, after: 'release' }] },
    { name: 'release', match: 'CAP-RELEASE', requireTools: false, turns: [{ text: 'ok' }] },
    { name: 'second', match: 'CAP-SECOND', turns: [done] },
    { name: 'limited', match: 'RL-FIRST', turns: [{ status: 429, headers: { 'retry-after': '20' } }] },
    { name: 'after', match: 'RL-AFTER', turns: [done] },
  ]);
  server = await BoardServer.start(
    CONFIG,
    {
      'held.md': card('CAP-HELD first', 'one'),
      'second.md': card('CAP-SECOND second', 'two'),
      'limited.md': card('RL-FIRST limited', 'one'),
      'after.md': card('RL-AFTER next', 'two'),
    },
    BoardServer.withModel('openai', model.url),
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

const id = async (title: string): Promise<string> =>
  (await server.board()).cards.find((c) => c.title === title)!.id;
const queue = (cardId: string, index: number) =>
  server.api('POST', `/api/cards/${cardId}/move`, { to: 'queued', index });
const column = async (cardId: string) => (await server.card(cardId))?.column;
const requestsOf = (episode: string) => model.requests.filter((r) => r.episode === episode);

describe('a provider key’s cap and rate limit, across flows', () => {
  it('two flows on one key with maxConcurrent 1: the second waits, saying so, and runs after the first', async () => {
    const held = await id('CAP-HELD first');
    const second = await id('CAP-SECOND second');
    await queue(held, 0);
    await waitUntil('the first run to ask the model', async () => requestsOf('held').length > 0, 60_000);
    await queue(second, 1);
    await waitUntil('the second card to say which cap holds it', async () =>
      /provider "openai" is at its cap \(1\/1 runs over all flows/.test(
        (await server.card(second))?.waiting ?? '',
      ),
    );
    expect(await column(second)).toBe('queued');
    expect(requestsOf('second')).toHaveLength(0);
    // the release: the held answer goes, the first run ends, the second starts
    await fetch(`${model.url}/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body: JSON.stringify({ model: 'gpt-test', input: 'CAP-RELEASE' }),
    }).then((r) => r.text());
    await waitUntil(
      'both cards done',
      async () => (await column(held)) === 'done' && (await column(second)) === 'done',
      90_000,
    );
    const heldEnd = Math.max(...requestsOf('held').map((r) => r.at));
    expect(requestsOf('second')[0]!.at).toBeGreaterThan(heldEnd);
  });

  it('a 429 with a reset met by one flow parks the other flow on the key until then; it starts after', async () => {
    const limited = await id('RL-FIRST limited');
    const next = await id('RL-AFTER next');
    await queue(limited, 0);
    await queue(next, 1);
    // the other flow, same key: parked too as the 429 is seen, and its card says why. Only this has to
    // happen before the reset (20 s); the limited run's end (its private display taken down, slow on a
    // loaded machine) and the next run's start are checked after, by the times they carry
    const parked = await waitUntil(
      'the other flow to be parked',
      async () => (await server.board()).flows.find((f) => f.name === 'two')?.parkedUntil,
      90_000,
    );
    const until = Date.parse(parked);
    await waitUntil('the next card to say its provider is parked', async () =>
      /provider "openai" is parked until .*rate limit resets then/.test(
        (await server.card(next))?.waiting ?? '',
      ),
    );
    await waitUntil('the limited run to fail', async () => (await column(limited)) === 'failed', 90_000);
    await waitUntil(
      'the next card to run after the reset',
      async () => (await column(next)) === 'done',
      120_000,
    );
    const { runs } = await server.api<{ runs: { startedAt: string }[] }>('GET', `/api/cards/${next}`);
    expect(Date.parse(runs[0]!.startedAt)).toBeGreaterThanOrEqual(until);
    expect(requestsOf('after')[0]!.at).toBeGreaterThanOrEqual(until);
  });
});
