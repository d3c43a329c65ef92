// The scripted model server, checked with the official SDK clients: if they parse what it sends, the
// agent CLIs and the computer-use runner can rely on it as a stand-in for the providers.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';

let server: ModelServer;
let openai: OpenAI;
let anthropic: Anthropic;

const tool = {
  name: 'write_file',
  description: 'write a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

beforeAll(async () => {
  server = await startModelServer({
    episodes: [
      {
        name: 'edit',
        match: 'EPISODE:edit',
        turns: [
          { text: 'Writing it.', toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt' } }] },
          { text: 'Done: wrote a.txt', usage: { input: 321, output: 12 } },
        ],
      },
      {
        name: 'flaky',
        match: 'EPISODE:flaky',
        indexBy: 'requests',
        requireTools: false,
        turns: [{ status: 429, headers: { 'retry-after': '0' } }, { text: 'after the retry' }],
      },
    ],
  });
  openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'k', maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
});
afterAll(async () => {
  await server.close();
});

describe('OpenAI Responses', () => {
  it('plays an episode turn by turn, JSON and streaming', async () => {
    const first = await openai.responses.create({
      model: 'm',
      input: 'EPISODE:edit please',
      tools: [{ type: 'function', strict: false, ...tool }],
    });
    const call = first.output.find((o) => o.type === 'function_call');
    expect(call).toMatchObject({ name: 'write_file', arguments: '{"path":"a.txt"}' });
    expect(first.output_text).toBe('Writing it.');

    const stream = await openai.responses.create({
      model: 'm',
      stream: true,
      input: [
        { role: 'user', content: 'EPISODE:edit please' },
        { type: 'function_call', call_id: 'c1', name: 'write_file', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c1', output: 'ok' },
      ],
      tools: [{ type: 'function', strict: false, ...tool }],
    });
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const e of stream) {
      if (e.type === 'response.output_text.delta') text += e.delta;
      if (e.type === 'response.completed') completed = e.response;
    }
    expect(text).toBe('Done: wrote a.txt');
    expect(completed?.usage?.input_tokens).toBe(321);
    expect(server.requests.at(-1)).toMatchObject({
      api: 'responses',
      episode: 'edit',
      turn: 1,
      stream: true,
    });
  });

  it('streams function calls that the SDK helper assembles', async () => {
    const stream = openai.responses.stream({
      model: 'm',
      input: 'EPISODE:edit',
      tools: [{ type: 'function', strict: false, ...tool }],
    });
    const final = await stream.finalResponse();
    expect(final.output.map((o) => o.type)).toEqual(['message', 'function_call']);
  });
});

describe('OpenAI Chat Completions', () => {
  it('answers with tool calls, JSON and streaming', async () => {
    const tools = [{ type: 'function' as const, function: tool }];
    const first = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'EPISODE:edit' }],
      tools,
    });
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    const tc = first.choices[0]!.message.tool_calls![0]!;
    expect(tc.type === 'function' && tc.function.name).toBe('write_file');

    const stream = openai.chat.completions.stream({
      model: 'm',
      stream_options: { include_usage: true },
      messages: [
        { role: 'user', content: 'EPISODE:edit' },
        { role: 'assistant', content: null, tool_calls: [tc] },
        { role: 'tool', tool_call_id: tc.id, content: 'ok' },
      ],
      tools,
    });
    const done = await stream.finalChatCompletion();
    expect(done.choices[0]!.message.content).toBe('Done: wrote a.txt');
    expect(done.usage?.prompt_tokens).toBe(321);
  });

  it('returns errors in the API format, then recovers (requests-indexed episode)', async () => {
    const err = await openai.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'EPISODE:flaky' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const ok = await openai.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'EPISODE:flaky' }],
    });
    expect(ok.choices[0]!.message.content).toBe('after the retry');
  });
});

describe('Anthropic Messages', () => {
  const tools = [{ name: tool.name, description: tool.description, input_schema: tool.parameters as never }];
  it('answers with tool_use, JSON and streaming', async () => {
    const first = await anthropic.messages.create({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'EPISODE:edit' }],
      tools,
    });
    expect(first.stop_reason).toBe('tool_use');
    const use = first.content.find((c) => c.type === 'tool_use')!;
    expect(use).toMatchObject({ name: 'write_file', input: { path: 'a.txt' } });

    const stream = anthropic.messages.stream({
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'EPISODE:edit' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: (use as { id: string }).id, content: 'ok' }],
        },
      ],
      tools,
    });
    const final = await stream.finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'Done: wrote a.txt' }]);
    expect(final.usage.input_tokens).toBe(321);

    const streamedTool = await anthropic.messages
      .stream({ model: 'm', max_tokens: 100, messages: [{ role: 'user', content: 'EPISODE:edit' }], tools })
      .finalMessage();
    expect(streamedTool.content[1]).toMatchObject({ type: 'tool_use', input: { path: 'a.txt' } });
  });

  it('gives side requests (no tools) the fallback, and 404s unknown paths', async () => {
    const side = await anthropic.messages.create({
      model: 'm',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'EPISODE:edit' }],
    });
    expect(side.content).toEqual([{ type: 'text', text: 'OK' }]);
    const res = await fetch(`${server.url}/v1/nothing`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
  });
});
