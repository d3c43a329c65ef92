/**
 * A provider's 429 with a reset parks that provider's waiting cards whichever runner met it, not only
 * computer use and replay: the model proxy sees every answer pass and the run reports the reset with the
 * request's log line (supervisor/src/node/proxy-ratelimit.ts), the board parks the key
 * (host/src/core/scheduler-caps.ts). A real `runboard serve` with the scripted model server (the one
 * double) upstream of both providers:
 *   - a claude run (the Claude Code CLI) is answered 429 with Anthropic's reset headers; the CLI retries
 *     through it and succeeds, yet the next anthropic card waits until the reset, then runs; a reflect
 *     card (openai) queued meanwhile is not held;
 *   - a reflect run is answered 429 with OpenAI's reset headers (reflect does not retry: it fails); the
 *     next reflect card waits until the reset, then runs; a claude card queued meanwhile is not held.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer, type ScriptedTurn } from '../fixtures/model-server/server.ts';
import { BoardServer, REPO, waitUntil } from '../e2e/helpers/board.ts';

/**
 * How far away the 429's reset lies. Within it only the steps that show the wait must happen (the key
 * parked, two cards queued, the waiting card's reason, the other key's run started); the rest is
 * checked afterwards by the times the runs carry (their supervisor's `startedAt` against the reset),
 * so runs slowed by a loaded machine need not fit in it (it was 40 s, two thirds of the test's limit).
 */
const PARK_MS = 20_000;
const REC = 'rec-20261127-190000-a1b2c3';
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
const CONFIG = `version: 2
scheduler: { maxConcurrency: 4 }
flows:
  agent:
    runner: claude
    provider: anthropic
    model: claude-sonnet-4-5
    prompt: ${path.join(REPO, 'prompts', 'review')}
    worktree: false
    readOnly: true
    cap: 2
    timeout: 2m
  reflect: { runner: reflect, provider: openai, model: gpt-5-mini, prompt: ${JSON.stringify(path.join(REPO, 'prompts'))}, cap: 2, timeout: 2m }
`;
const agentCard = (title: string): string =>
  `---\ntitle: ${title}\nflow: agent\nworkspace: ./workspace\n---\n# Task\nEPISODE:agent ${title}\n`;
const reflectCard = (title: string): string =>
  `---\ntitle: ${title}\nflow: reflect\nworkspace: ./workspace\nrecording: ${REC}\n---\n# Task\n${title}\n`;

/** The next request of each kind is answered 429 with the provider's reset headers (then cleared). */
const limitNext = { anthropic: false, openai: false };
/** When each 429 was sent, and the reset it named (epoch ms). */
const limited: Record<'anthropic' | 'openai', { at: number; until: number } | undefined> = {
  anthropic: undefined,
  openai: undefined,
};

function limit(provider: 'anthropic' | 'openai'): ScriptedTurn | undefined {
  if (!limitNext[provider]) return undefined;
  limitNext[provider] = false;
  const at = Date.now();
  const until = at + PARK_MS;
  limited[provider] = { at, until };
  const headers: Record<string, string> =
    provider === 'anthropic'
      ? {
          'anthropic-ratelimit-requests-remaining': '0',
          'anthropic-ratelimit-requests-reset': new Date(until).toISOString(),
          'anthropic-ratelimit-tokens-remaining': '90000',
          'anthropic-ratelimit-tokens-reset': new Date(at + 1000).toISOString(),
        }
      : {
          'x-ratelimit-remaining-requests': '0',
          'x-ratelimit-reset-requests': `${PARK_MS / 1000}s`,
          'x-ratelimit-remaining-tokens': '90000',
          'x-ratelimit-reset-tokens': '1s',
        };
  return { status: 429, errorMessage: 'rate limit reached', headers };
}

const result = (v: object): string => `RUNBOARD_RESULT: ${JSON.stringify(v)}`;

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer({
    episodes: [
      {
        name: 'agent',
        match: 'EPISODE:agent',
        turns: [() => limit('anthropic') ?? { text: result({ status: 'SUCCESS', summary: 'reviewed' }) }],
      },
      {
        name: 'pass-b',
        match: 'You are a workflow compiler',
        requireTools: false,
        turns: [
          () =>
            limit('openai') ?? {
              text: JSON.stringify({
                detailed_task_description: 'Search the shop.',
                success_criteria: 'Results are shown.',
                task_params: [],
                subtasks: [{ text: 'Search', expected_outcome: 'Results are listed.' }],
                steps: [{ i: 0, subtask: 0, action_value: null }],
              }),
            },
        ],
      },
      {
        name: 'pass-a',
        match: 'You turn one recorded step',
        requireTools: false,
        turns: [
          () =>
            limit('openai') ?? {
              text: JSON.stringify({
                expected_current_state: 'The shop is open.',
                intent: 'Search.',
                target: { primary: 'The search field', fallback: null },
                post_action: ['Something changes.'],
                action_value: null,
              }),
            },
        ],
      },
    ],
  });
  const a = BoardServer.withModel('anthropic', model.url);
  const o = BoardServer.withModel('openai', model.url);
  server = await BoardServer.start(
    CONFIG,
    {
      'claude-limited.md': agentCard('claude limited'),
      'claude-next.md': agentCard('claude next'),
      'claude-free.md': agentCard('claude free'),
      'reflect-free.md': reflectCard('reflect free'),
      'reflect-limited.md': reflectCard('reflect limited'),
      'reflect-next.md': reflectCard('reflect next'),
    },
    {
      env: { ...a.env, ...o.env },
      beforeServe: (p) => {
        a.beforeServe(p);
        o.beforeServe(p);
      },
    },
  );
  const rec = path.join(server.project, 'recordings', REC);
  mkdirSync(path.join(rec, 'screenshots'), { recursive: true });
  for (const f of ['start', '0001']) writeFileSync(path.join(rec, 'screenshots', `${f}.png`), PNG);
  const win = { id: 1, app: 'shop', title: 'Shop', bounds: [0, 0, 800, 600] };
  const element = {
    role: 'text',
    name: 'Search',
    bounds: [10, 10, 100, 20],
    path: [{ role: 'text', name: 'Search', index: 0 }],
  };
  const step = {
    step: 1,
    at: 0,
    screenshot: 'screenshots/0001.png',
    action: { type: 'click', x: 60, y: 20, button: 'left' },
    window: win,
    element,
  };
  writeFileSync(path.join(rec, 'manifest.jsonl'), JSON.stringify(step) + '\n');
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
});

const queue = (cardId: string, index = 99) =>
  server.api('POST', `/api/cards/${cardId}/move`, { to: 'queued', index });
const column = async (cardId: string) => (await server.card(cardId))?.column;
const ended = async (cardId: string) =>
  ['done', 'failed', 'needs-input'].includes((await column(cardId)) ?? '');
const parkedUntil = async (flow: string) =>
  (await server.board()).flows.find((f) => f.name === flow)?.parkedUntil;
/** The requests of the agent card titled `title` (its task is in them). */
const requestsFor = (title: string) =>
  model.requests.filter(
    (r) => r.episode === 'agent' && JSON.stringify(r.body).includes(`EPISODE:agent ${title}`),
  );
/** When the card's last run started, by its supervisor's record (epoch ms). */
const startedAt = async (cardId: string): Promise<number> => {
  const { runs } = await server.api<{ runs: { startedAt: string }[] }>('GET', `/api/cards/${cardId}`);
  return Date.parse(runs[0]!.startedAt);
};

describe("a provider's 429 with a reset, met by any runner", () => {
  it("a claude run retries through it; the key's next card waits until the reset, another key's card runs", async () => {
    limitNext.anthropic = true;
    await queue('claude-limited');
    await waitUntil('the claude run to meet the 429', async () => limited.anthropic !== undefined, 90_000);
    const { at, until } = limited.anthropic!;
    await waitUntil('the anthropic key to be parked', async () => (await parkedUntil('agent')) !== undefined);
    expect(Date.parse((await parkedUntil('agent'))!)).toBe(until);
    expect(await parkedUntil('reflect')).toBeUndefined();
    const queuedAt = Date.now();
    await queue('claude-next');
    await queue('reflect-free');
    expect(queuedAt, 'the cards were queued while the key was parked').toBeLessThan(until);
    await waitUntil('the next anthropic card to say its provider is parked', async () =>
      /provider "anthropic" is parked until .*rate limit resets then/.test(
        (await server.card('claude-next'))?.waiting ?? '',
      ),
    );
    // the other key's card is not held: its run started before the reset, and ends done
    await waitUntil('the reflect card to end', () => ended('reflect-free'), 90_000);
    expect(await column('reflect-free')).toBe('done');
    expect(await startedAt('reflect-free')).toBeLessThan(until);
    // the CLI retried through the 429: its run succeeded
    await waitUntil('the limited claude run to end', () => ended('claude-limited'), 90_000);
    expect(await column('claude-limited')).toBe('done');
    // after the reset the waiting card runs: its run started then, and none of its requests came before
    await waitUntil('the next anthropic card to run', () => ended('claude-next'), 120_000);
    expect(await column('claude-next')).toBe('done');
    expect(await startedAt('claude-next')).toBeGreaterThanOrEqual(until);
    // the limited run retried after the 429 (it was going: not held)
    expect(requestsFor('claude limited').filter((r) => r.at > at).length).toBeGreaterThan(0);
    const nextRun = requestsFor('claude next');
    expect(nextRun.length).toBeGreaterThan(0);
    expect(Math.min(...nextRun.map((r) => r.at))).toBeGreaterThanOrEqual(until);
  });

  it("a reflect run fails on it; the key's next card waits until the reset, another key's card runs", async () => {
    limitNext.openai = true;
    await queue('reflect-limited');
    await waitUntil('the reflect run to meet the 429', async () => limited.openai !== undefined, 90_000);
    const { until } = limited.openai!;
    const parked = await waitUntil('the openai key to be parked', () => parkedUntil('reflect'));
    // x-ratelimit-reset-requests is a duration from the answer: within a second of the time it was sent
    const reset = Date.parse(parked);
    expect(Math.abs(reset - until)).toBeLessThan(1000);
    const queuedAt = Date.now();
    await queue('reflect-next');
    await queue('claude-free');
    expect(queuedAt, 'the cards were queued while the key was parked').toBeLessThan(reset);
    await waitUntil('the next reflect card to say its provider is parked', async () =>
      /provider "openai" is parked until .*rate limit resets then/.test(
        (await server.card('reflect-next'))?.waiting ?? '',
      ),
    );
    await waitUntil('the limited reflect run to end', () => ended('reflect-limited'), 90_000);
    expect(await column('reflect-limited')).toBe('failed');
    // the other key's card is not held
    await waitUntil('the claude card to end', () => ended('claude-free'), 90_000);
    expect(await column('claude-free')).toBe('done');
    expect(await startedAt('claude-free')).toBeLessThan(reset);
    // after the reset the waiting card runs: its run (and so each of its requests) started then
    await waitUntil('the next reflect card to run', () => ended('reflect-next'), 120_000);
    expect(await column('reflect-next')).toBe('done');
    const nextStart = await startedAt('reflect-next');
    expect(nextStart).toBeGreaterThanOrEqual(reset);
    expect(
      model.requests.filter((r) => ['pass-a', 'pass-b'].includes(r.episode ?? '') && r.at >= nextStart)
        .length,
    ).toBeGreaterThan(0);
  });
});
