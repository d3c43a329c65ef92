/**
 * The model proxy counts the usage of every answer, with the real SDKs against the scripted model
 * server (the one test double): OpenAI Responses streamed, Chat Completions streamed with
 * include_usage, Anthropic Messages streamed, Gemini whole; and once a run's budget is spent the next
 * request is refused with an error the SDK surfaces, before anything goes upstream.
 */
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelProxy, providerRoutes } from '../../supervisor/src/node/model-proxy.ts';
import { RunAccount } from '../../supervisor/src/node/proxy-usage.ts';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { waitUntil } from '../helpers/harness.ts';

let model: ModelServer;
let proxy: ModelProxy;
let n = 0;
const runId = (): string => `20250101-000000-${String(++n).padStart(6, 'a')}`;

beforeAll(async () => {
  model = await startModelServer({ fallback: { text: 'OK', usage: { input: 300, output: 20 } } });
  proxy = new ModelProxy(
    providerRoutes({
      RUNBOARD_PROVIDER_OPENAI_URL: model.url,
      RUNBOARD_PROVIDER_ANTHROPIC_URL: model.url,
      RUNBOARD_PROVIDER_GEMINI_URL: model.url,
    }),
    () => 'sk-test',
    pino({ level: 'silent' }),
  );
});
afterAll(async () => {
  await proxy.close();
  await model.close();
});

describe('usage counted by the proxy, with the real SDKs', () => {
  it('OpenAI Responses and Chat Completions, streamed', async () => {
    const account = new RunAccount({}, {}, 'gpt-4o');
    const g = await proxy.grant(
      runId(),
      'openai',
      undefined,
      { runner: 'computer-use', apis: ['responses', 'chat'] },
      { account },
    );
    const client = new OpenAI({ apiKey: g.token, baseURL: g.baseUrl, maxRetries: 0 });
    const stream = await client.responses.create({ model: 'gpt-4o', input: 'hi', stream: true });
    for await (const _ of stream) void _;
    const chat = await client.chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const _ of chat) void _;
    await waitUntil('both answers counted', () => account.usage.requests === 2);
    expect(account.usage).toMatchObject({ inputTokens: 600, outputTokens: 40 });
    expect(account.usage.costUsd).toBeCloseTo((600 * 2.5 + 40 * 10) / 1e6, 9);
    proxy.revoke(g.token);
  });

  it('Anthropic Messages streamed; Gemini whole', async () => {
    const account = new RunAccount({}, {}, 'claude-sonnet-4-5');
    const a = await proxy.grant(
      runId(),
      'anthropic',
      undefined,
      { runner: 'claude', apis: ['messages'] },
      { account },
    );
    const claude = new Anthropic({ apiKey: a.token, baseURL: a.baseUrl, maxRetries: 0 });
    await claude.messages
      .stream({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage();
    await waitUntil('the Anthropic answer counted', () => account.usage.requests === 1);
    expect(account.usage).toMatchObject({ inputTokens: 300, outputTokens: 20 });
    proxy.revoke(a.token);

    const gemini = new RunAccount({}, {}, 'gemini-2.5-flash');
    const g = await proxy.grant(
      runId(),
      'gemini',
      undefined,
      { runner: 'extract', apis: ['gemini'] },
      { account: gemini },
    );
    const ai = new GoogleGenAI({ apiKey: g.token, httpOptions: { baseUrl: g.baseUrl } });
    await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    await waitUntil('the Gemini answer counted', () => gemini.usage.requests === 1);
    expect(gemini.usage.inputTokens).toBeGreaterThan(0);
    expect(gemini.usage.costUsd).not.toBeNull();
    proxy.revoke(g.token);
  });

  it('a spent budget: the next request is refused, the SDK says why, nothing goes upstream', async () => {
    const account = new RunAccount({ maxTokens: 300 }, {}, 'gpt-4o');
    const g = await proxy.grant(
      runId(),
      'openai',
      undefined,
      { runner: 'codex', apis: ['responses'] },
      { account },
    );
    const client = new OpenAI({ apiKey: g.token, baseURL: g.baseUrl, maxRetries: 0 });
    await client.responses.create({ model: 'gpt-4o', input: 'one' });
    await waitUntil('the answer counted', () => account.spent !== null);
    const before = model.requests.length;
    await expect(client.responses.create({ model: 'gpt-4o', input: 'two' })).rejects.toThrow(
      /token budget spent: 320 tokens used, the flow allows 300 \(maxTokens\): the run ends/,
    );
    expect(model.requests.length).toBe(before);
    proxy.revoke(g.token);
  });
});
