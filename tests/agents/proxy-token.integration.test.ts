/**
 * A model-proxy token that leaks out of its run is of no use to another run: each run reaches the
 * proxy on a port of its own, the only one its jail lets it connect to, and its token is valid only
 * there. Run A (a real claude run, waiting on the scripted model) holds its token; run B, a run of its
 * own with a provider (so it may reach the proxy), is handed A's token and A's base URL and tries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/harness.ts';
import { AgentHarness, processEnv } from './agent-harness.ts';

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start();
}, 30_000);
afterAll(async () => {
  await a.stop();
});

/** Inside run B: one request to the model proxy with a given base URL and token; prints the outcome. */
const USE_TOKEN = `
const [base, token] = process.argv.slice(1);
fetch(base + '/v1/messages', {
  method: 'POST',
  headers: { 'x-api-key': token, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
  body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'EPISODE:stolen' }] }),
}).then(
  (r) => console.log('status', r.status),
  (e) => console.log('error', e.cause?.code ?? e.message),
);
`;

/** The environment of the claude process of run A (the test, as the user, may read it). */
const claudeEnv = (root: string): Record<string, string> =>
  processEnv('ANTHROPIC_API_KEY=rbp-', (env) => env.includes(root));

describe('model proxy tokens', () => {
  it("another run cannot use a run's token", async () => {
    a.episodes([{ name: 'hold', match: 'EPISODE:hold', turns: [{ hang: true }] }]);
    const waiting = a.model.nextRequest('hold');
    const { runId: runA } = await a.launch(a.card('Hold', 'EPISODE:hold wait'), a.flow('claude'));
    await waiting; // A's claude is running and talking to the proxy
    let env: Record<string, string> = {};
    await waitUntil('run A’s claude process', () => {
      try {
        env = claudeEnv(a.h.root);
        return true;
      } catch {
        return false;
      }
    });

    const b = await a.h.run(
      [process.execPath, '-e', USE_TOKEN, env.ANTHROPIC_BASE_URL!, env.ANTHROPIC_API_KEY!],
      {
        provider: 'anthropic',
      },
    );
    expect(b.result.status).toBe('succeeded');
    expect(b.stdout).toMatch(/^(error|status 401)/);
    // Nothing reached the provider with A's key.
    expect(a.model.requests.some((r) => JSON.stringify(r).includes('EPISODE:stolen'))).toBe(false);

    await a.h.client.cancel(runA);
  });
});
