import { describe, expect, it } from 'vitest';
import { priceOf } from '../protocol/index.ts';
import { RunAccount, UsageTap } from './proxy-usage.ts';

/** The answer fed to a tap in pieces of `n` bytes (events and UTF-8 characters split across chunks). */
function tapped(contentType: string, body: string, n = 7): ReturnType<UsageTap['end']> {
  const tap = new UsageTap(contentType);
  const buf = Buffer.from(body);
  for (let i = 0; i < buf.length; i += n) tap.write(buf.subarray(i, i + n));
  return tap.end();
}
const sse = (...events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');

describe('UsageTap: the usage of each wire format', () => {
  it('OpenAI Responses, whole and streamed', () => {
    const body = { model: 'gpt-4o', usage: { input_tokens: 12, output_tokens: 3 }, output_text: 'é' };
    expect(tapped('application/json', JSON.stringify(body))).toEqual({
      model: 'gpt-4o',
      input: 12,
      output: 3,
    });
    const stream = sse(
      { type: 'response.created', response: { model: 'gpt-4o', usage: null } },
      { type: 'response.output_text.delta', delta: 'héllo usage' },
      {
        type: 'response.completed',
        response: { model: 'gpt-4o', usage: { input_tokens: 40, output_tokens: 9 } },
      },
    );
    expect(tapped('text/event-stream; charset=utf-8', stream)).toEqual({
      model: 'gpt-4o',
      input: 40,
      output: 9,
    });
  });

  it('Chat Completions streamed with include_usage (the last chunk), and [DONE]', () => {
    const stream =
      sse(
        { model: 'glm-4', choices: [{ delta: { content: 'x' } }], usage: null },
        { model: 'glm-4', choices: [], usage: { prompt_tokens: 7, completion_tokens: 2 } },
      ) + 'data: [DONE]\n\n';
    expect(tapped('text/event-stream', stream, 3)).toEqual({ model: 'glm-4', input: 7, output: 2 });
  });

  it('Anthropic Messages: message_start, then message_delta with the total; cache tokens are input', () => {
    const stream = sse(
      {
        type: 'message_start',
        message: {
          model: 'claude-sonnet-4-5',
          usage: {
            input_tokens: 5,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 10,
            output_tokens: 1,
          },
        },
      },
      { type: 'content_block_delta', delta: { text: 'hi' } },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 30 } },
    );
    expect(tapped('text/event-stream', stream)).toEqual({
      model: 'claude-sonnet-4-5',
      input: 115,
      output: 30,
    });
  });

  it('Gemini: each chunk carries the total so far (thoughts count as output); a JSON array too', () => {
    const chunk = (p: number, c: number) => ({
      modelVersion: 'gemini-2.5-flash',
      usageMetadata: { promptTokenCount: p, candidatesTokenCount: c, thoughtsTokenCount: 4 },
    });
    expect(tapped('text/event-stream', sse(chunk(50, 1), chunk(50, 8)))).toEqual({
      model: 'gemini-2.5-flash',
      input: 50,
      output: 12,
    });
    expect(tapped('application/json', JSON.stringify([chunk(9, 1), chunk(9, 2)]))).toMatchObject({
      input: 9,
      output: 6,
    });
  });

  it('an answer with no usage (or not JSON) counts nothing', () => {
    expect(tapped('application/json', '{"data":[]}')).toBeNull();
    expect(tapped('application/octet-stream', '{"usage":{"input_tokens":1}}')).toBeNull();
  });
});

describe('prices', () => {
  it('exact names, dated variants, the config before the defaults; unknown: null', () => {
    expect(priceOf('gpt-4o')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf('gpt-4o-2024-08-06')).toEqual({ input: 2.5, output: 10 });
    expect(priceOf('gpt-4o-mini')).toEqual({ input: 0.15, output: 0.6 });
    expect(priceOf('claude-sonnet-4-5-20250929')).toEqual({ input: 3, output: 15 });
    expect(priceOf('models/gemini-2.5-pro')).toEqual({ input: 1.25, output: 10 });
    expect(priceOf('gpt-4o-realtime-preview')).toBeNull(); // not a dated variant: no price made up
    expect(priceOf('my-local-model')).toBeNull();
    expect(priceOf('gpt-4o', { 'gpt-4o': { input: 1, output: 1 } })).toEqual({ input: 1, output: 1 });
  });
});

describe('RunAccount', () => {
  it('adds answers per model; the cost is unknown once a model has no price', () => {
    const a = new RunAccount({}, {}, 'gpt-4o');
    a.add({ input: 1000, output: 100 });
    expect(a.usage.costUsd).toBeCloseTo(0.0035, 9);
    a.add({ model: 'mystery', input: 10, output: 1 });
    expect(a.usage).toMatchObject({ requests: 2, inputTokens: 1010, outputTokens: 101, costUsd: null });
    expect(a.usage.models.mystery!.costUsd).toBeNull();
  });

  it('says once when a budget is reached; maxCost with an unpriced model is spent at once', () => {
    const calls: (string | null)[] = [];
    const a = new RunAccount({ maxCost: 0.005 }, {}, 'gpt-4o', (_u, spent) => calls.push(spent));
    a.add({ input: 1000, output: 100 });
    expect(a.spent).toBeNull();
    a.add({ input: 1000, output: 100 });
    a.add({ input: 1, output: 1 });
    expect(a.spent).toMatch(/cost budget spent: \$0\.0070 used, the flow allows \$0\.005/);
    expect(calls.filter(Boolean)).toHaveLength(1);
    const b = new RunAccount({ maxCost: 1 }, {}, 'mystery');
    b.add({ input: 1, output: 1 });
    expect(b.spent).toMatch(/model mystery has no price \(add it under prices: in config\.yaml\)/);
  });
});
