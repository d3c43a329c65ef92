/**
 * The model proxy's bounds, with small numbers so each is reached on purpose: connections per run and
 * over all runs (past either: 503 saying why, the connection closed, its descriptor gone), and requests
 * in flight per run (429). Real sockets, the real proxy and the scripted model server upstream; the
 * flood from inside a real run is tests/agents/proxy-routes.
 */
import net from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelProxy, providerRoutes } from '../../supervisor/src/node/model-proxy.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { waitUntil } from '../helpers/harness.ts';

let model: ModelServer;
let proxy: ModelProxy;
const CODEX = { runner: 'codex', apis: ['responses' as const] };

beforeAll(async () => {
  model = await startModelServer({
    episodes: [{ name: 'hold', match: 'EPISODE:hold', requireTools: false, turns: [{ hang: true }] }],
  });
  proxy = new ModelProxy(
    providerRoutes({ RUNBOARD_PROVIDER_OPENAI_URL: model.url }),
    () => 'sk-test',
    pino({ level: 'silent' }),
    { connectionsPerRun: 3, requestsPerRun: 1, connections: 5 },
  );
});
afterAll(async () => {
  await proxy.close();
  await model.close();
});

/** A connection to `port`, open once the proxy has had the chance to answer or close it. */
function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}

/** What the proxy says on a connection (until it closes it, or `until` matches). */
function answer(s: net.Socket, until?: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString();
      if (until?.test(text)) resolve(text);
    });
    s.on('close', () => resolve(text));
  });
}

/** The status line the proxy answers a request with on a new connection (a refused route: 403 when served). */
async function probe(port: number, token: string): Promise<string> {
  const s = await connect(port);
  s.write(`GET /openai/v1/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`);
  const text = await answer(s, /\r\n\r\n\{.*\}$/s);
  s.destroy();
  return text;
}

const request = (token: string, marker: string): string => {
  const body = JSON.stringify({ model: 'm', input: marker });
  return `POST /openai/v1/responses HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
};

describe('the model proxy’s bounds', () => {
  it('a run past its connections is answered 503 with why, and the connection is closed', async () => {
    const g = await proxy.grant('20250101-000000-aaaaaa', 'openai', undefined, CODEX);
    const held = await Promise.all([1, 2, 3].map(() => connect(g.port)));
    const extra = await connect(g.port);
    const text = await answer(extra);
    expect(text).toMatch(/^HTTP\/1\.1 503/);
    expect(text).toMatch(/this run has 3 connections open to its model proxy, the most a run may have/);
    expect(extra.readableEnded || extra.destroyed).toBe(true);
    // one closed: room for one more, which the proxy serves
    held.pop()!.destroy();
    // (the proxy counts the closed one once it has seen it close)
    let again = '';
    await waitUntil('a connection taken again', async () => {
      again = await probe(g.port, g.token);
      return !again.includes(' 503 ');
    });
    expect(again).toMatch(/^HTTP\/1\.1 403/); // served (and refused by route, not by count)
    for (const s of held) s.destroy();
    proxy.revoke(g.token);
  });

  it('the proxy past its connections over all runs refuses the next run’s too', async () => {
    const a = await proxy.grant('20250101-000000-bbbbbb', 'openai', undefined, CODEX);
    const b = await proxy.grant('20250101-000000-cccccc', 'openai', undefined, CODEX);
    const held = [
      ...(await Promise.all([1, 2, 3].map(() => connect(a.port)))),
      await connect(b.port),
      await connect(b.port),
    ];
    const extra = await connect(b.port);
    expect(await answer(extra)).toMatch(
      /the model proxy holds 5 connections over all runs, the most it takes/,
    );
    for (const s of held) s.destroy();
    proxy.revoke(a.token);
    proxy.revoke(b.token);
  });

  it('a run past its requests in flight is answered 429, and nothing more goes upstream', async () => {
    const g = await proxy.grant('20250101-000000-dddddd', 'openai', undefined, CODEX);
    // the connections of the tests before are closed: the proxy has seen them go
    await waitUntil(
      'the proxy to take connections again',
      async () => !(await probe(g.port, g.token)).includes(' 503 '),
    );
    const first = await connect(g.port);
    const waiting = model.nextRequest('hold');
    first.write(request(g.token, 'EPISODE:hold'));
    await waiting; // in flight upstream, never answered
    const before = model.requests.length;
    const second = await connect(g.port);
    second.write(request(g.token, 'EPISODE:second'));
    const text = await answer(second, /\r\n\r\n\{.*\}$/s);
    expect(text).toMatch(/^HTTP\/1\.1 429/);
    expect(text).toMatch(/1 model requests in flight, the most a run may have at once/);
    expect(model.requests.length).toBe(before);
    first.destroy();
    second.destroy();
    proxy.revoke(g.token);
  });
});
