// The vision route: a run whose flow has a vision profile of another provider than its own (a claude
// run, Anthropic, with an OpenAI vision model) gets a second token on its own proxy listener. What the
// run may do with it is one request: the vision request, with the profile's model. The attacks take
// the token from the run's own environment (where its documents MCP server gets it) and use it on the
// run's own port, the one port its jail lets it reach; each must be refused before anything reaches a
// provider, and nothing in the run may hold a provider key.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processesMentioning, waitUntil } from '../helpers/harness.ts';
import { AgentHarness, KEYS, processEnv } from '../agents/agent-harness.ts';

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start();
}, 30_000);
afterAll(async () => {
  await a?.stop();
});

const EYES = { profile: 'eyes', provider: 'openai', model: 'vision-eyes' };

/** The environment of run `runId`'s claude process (the test, as the user, may read it; so may the run). */
const claudeEnv = (runId: string): Record<string, string> =>
  processEnv('ANTHROPIC_API_KEY=rbp-', (env) => env.includes(`RUNBOARD_RUN_ID=${runId}\0`));

/** A run holding on the scripted model, and its claude's environment. */
async function holdingRun(
  marker: string,
  vision: typeof EYES | undefined,
): Promise<{ runId: string; env: Record<string, string>; port: string }> {
  a.episodes([{ name: marker, match: `EPISODE:${marker}`, turns: [{ hang: true }] }]);
  const waiting = a.model.nextRequest(marker);
  const { runId } = await a.launch(
    a.card('Hold', `EPISODE:${marker} wait`),
    a.flow('claude', { worktree: false, ...(vision ? { vision } : {}) }),
  );
  await waiting;
  let env: Record<string, string> = {};
  await waitUntil('the run’s claude process', () => {
    try {
      env = claudeEnv(runId);
      return true;
    } catch {
      return false;
    }
  });
  return { runId, env, port: new URL(env.ANTHROPIC_BASE_URL!).port };
}

/** One request to the run's listener, as the run would make it; the status and the answer. */
async function send(
  port: string,
  pathAndQuery: string,
  token: string,
  init: { method?: string; body?: string; auth?: 'bearer' | 'x-api-key' } = {},
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (init.auth === 'x-api-key') headers['x-api-key'] = token;
  else headers.authorization = `Bearer ${token}`;
  const res = await fetch(`http://127.0.0.1:${port}${pathAndQuery}`, {
    method: init.method ?? 'POST',
    headers,
    ...(init.body !== undefined ? { body: init.body } : {}),
  });
  return { status: res.status, text: await res.text() };
}

/** Requests since `from` that are not the holding claude's own (its Messages calls). */
const stray = (from: number) =>
  a.model.requests
    .slice(from)
    .filter((r) => !r.path.startsWith('/v1/messages') || JSON.stringify(r.body ?? {}).includes('stolen'))
    .map((r) => `${r.method} ${r.path}`);

const chat = (model: string, marker: string): string =>
  JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: `EPISODE:${marker}` }] });

describe('the vision route of a run (attacks)', () => {
  it('makes the vision request only: no other model, endpoint, method or query, not the run’s own provider', async () => {
    a.episodes([]);
    const { runId, env, port } = await holdingRun('vision-hold', EYES);
    const token = env.RUNBOARD_VISION_TOKEN!;
    expect(token).toMatch(/^rbp-/);
    expect(token).not.toBe(env.ANTHROPIC_API_KEY);
    const before = a.model.requests.length;

    const attacks: [string, string, Parameters<typeof send>[3]][] = [
      ['another model', '/openai/v1/chat/completions', { body: chat('gpt-5', 'stolen-model') }],
      ['another endpoint', '/openai/v1/responses', { body: chat('vision-eyes', 'stolen-responses') }],
      ['the model list', '/openai/v1/models', { method: 'GET' }],
      [
        'a query string',
        '/openai/v1/chat/completions?stream=true',
        { body: chat('vision-eyes', 'stolen-q') },
      ],
      [
        'a second "model" key naming another model',
        '/openai/v1/chat/completions',
        { body: '{"model":"vision-eyes","model":"gpt-5","messages":[]}' },
      ],
      ['a body that is not JSON', '/openai/v1/chat/completions', { body: 'model=vision-eyes' }],
    ];
    for (const [what, p, init] of attacks) {
      const r = await send(port, p, token, init);
      expect(r.status, `${what}: ${r.text}`).toBe(403);
      expect(r.text).toContain('vision route');
    }
    // The vision token on the run's own provider's route: not its provider.
    const own = await send(port, '/anthropic/v1/messages', token, {
      auth: 'x-api-key',
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [] }),
    });
    expect(own.status).toBe(401);
    // The run's own token on the vision provider's route: not its provider either.
    const main = await send(port, '/openai/v1/chat/completions', env.ANTHROPIC_API_KEY!, {
      body: chat('vision-eyes', 'stolen-main'),
    });
    expect(main.status).toBe(401);
    // Nothing of it reached a provider (only the run's own claude, holding, talks to it).
    expect(stray(before)).toEqual([]);

    // What it may do: the vision request with the profile's model, the key added by the proxy; a
    // repeated "model" key reaches the provider as the one value the proxy checked.
    a.episodes([
      {
        name: 'vision-ok',
        match: 'EPISODE:vision-ok',
        requireTools: false,
        turns: [{ text: 'ok' }, { text: 'ok' }],
      },
    ]);
    const ok = await send(port, '/openai/v1/chat/completions', token, {
      body: chat('vision-eyes', 'vision-ok'),
    });
    expect(ok.status, ok.text).toBe(200);
    const dup = await send(port, '/openai/v1/chat/completions', token, {
      body: `{"model":"gpt-5","model":"vision-eyes","max_tokens":16,"messages":[{"role":"user","content":"EPISODE:vision-ok"}]}`,
    });
    expect(dup.status, dup.text).toBe(200);
    const got = a.model.requests.filter((r) => r.episode === 'vision-ok');
    expect(got).toHaveLength(2);
    for (const r of got) {
      expect(r.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
      expect(r.body?.model).toBe('vision-eyes');
    }
    expect(JSON.stringify(got[1]!.body)).not.toContain('gpt-5');

    // No process of the run holds a provider key (claude, its documents MCP server, the worker).
    for (const key of Object.values(KEYS)) {
      const holders = processesMentioning(key).filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(a.h.root);
        } catch {
          return false;
        }
      });
      expect(holders, `processes of the run holding ${key}`).toEqual([]);
    }

    await a.h.client.cancel(runId);
    await a.h.collect(runId);
    // The route ends with the run.
    const after = await send(port, '/openai/v1/chat/completions', token, {
      body: chat('vision-eyes', 'vision-ok'),
    }).catch((e: Error & { cause?: { code?: string } }) => ({ status: 0, text: e.cause?.code ?? e.message }));
    expect(after.status === 0 || after.status === 401, JSON.stringify(after)).toBe(true);
  }, 120_000);

  it('a vision profile whose provider has no key: no route, and the run says what to do before it starts', async () => {
    const { runId, env } = await holdingRun('nokey-hold', {
      profile: 'eyes',
      provider: 'gemini',
      model: 'g',
    });
    expect(env.RUNBOARD_VISION_TOKEN).toBeUndefined(); // no route to be refused on (a 401) later
    await a.h.client.cancel(runId);
    const rec = await a.h.collect(runId);
    const said = rec.events.find((e) => e.type === 'log' && e.data?.kind === 'vision');
    expect(said?.message).toMatch(
      /^no vision route for this run \(vision profile "eyes"\): no API key for provider "gemini"\./,
    );
    expect(said?.message).toContain('runboard key set gemini');
    const started = rec.events.findIndex((e) => e.type === 'started');
    expect(rec.events.indexOf(said!)).toBeLessThan(started); // said before the run's processes start
  }, 120_000);

  it('a run whose flow has no vision profile has no vision route', async () => {
    const { runId, env, port } = await holdingRun('novision-hold', undefined);
    expect(env.RUNBOARD_VISION_TOKEN).toBeUndefined();
    const before = a.model.requests.length;
    // its own token reaches its own provider only
    const r = await send(port, '/openai/v1/chat/completions', env.ANTHROPIC_API_KEY!, {
      body: chat('vision-eyes', 'stolen-novision'),
    });
    expect(r.status).toBe(401);
    expect(stray(before)).toEqual([]);
    await a.h.client.cancel(runId);
    await a.h.collect(runId);
  }, 120_000);
});
