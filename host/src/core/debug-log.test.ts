// A run's model debug log as the inspector reads it (debug-log.ts): the answer's text and tokens in each
// wire format, and pages from a byte offset, an unfinished last line left for later.
import { appendFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { entryView, readDebugPage } from './debug-log.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-debuglog-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const line = (response: unknown, request: unknown = { model: 'm' }): string =>
  JSON.stringify({
    ts: '2026-11-27T12:00:00.000Z',
    ms: 12,
    provider: 'p',
    method: 'POST',
    path: '/x',
    status: 200,
    request,
    response,
  });

describe('an entry', () => {
  it("Anthropic's event stream: text deltas put together, usage from message_start and message_delta", () => {
    const sse = [
      'event: message_start',
      'data: {"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":30,"output_tokens":1}}}',
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}',
      'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}',
      'data: {"type":"message_delta","usage":{"output_tokens":7}}',
      '',
    ].join('\n');
    const e = entryView(line(sse, { messages: [{ content: '[image: 4096 base64 chars]' }] }), 3);
    expect(e).toMatchObject({
      n: 3,
      status: 200,
      text: 'Hello',
      tokens: { input: 30, output: 7 },
      model: 'claude-x',
    });
    expect(e.request).toContain('[image: 3 KB]');
  });

  it('Chat Completions, Responses and Gemini answers, tool calls said', () => {
    const chat = entryView(
      line({
        choices: [
          { message: { content: 'ok', tool_calls: [{ function: { name: 'click', arguments: '{"x":1}' } }] } },
        ],
        usage: { prompt_tokens: 5, completion_tokens: 2 },
      }),
      1,
    );
    expect(chat.text).toBe('ok\n→ click {"x":1}');
    expect(chat.tokens).toEqual({ input: 5, output: 2 });
    const responses = entryView(
      line({
        output: [{ type: 'message', content: [{ type: 'output_text', text: 'done' }] }],
        usage: { input_tokens: 9, output_tokens: 1 },
      }),
      1,
    );
    expect(responses.text).toBe('done');
    const gemini = entryView(
      line({
        candidates: [{ content: { parts: [{ text: 'seen' }] } }],
        usageMetadata: { promptTokenCount: 4, candidatesTokenCount: 2 },
      }),
      1,
    );
    expect(gemini).toMatchObject({ text: 'seen', tokens: { input: 4, output: 2 } });
    const failed = entryView(line({ error: { message: 'rate limited' } }), 1);
    expect(failed.tokens).toBeNull();
    expect(failed.response).toContain('rate limited');
  });
});

describe('a page', () => {
  it('from a byte offset, the next offset at the end of the page; an unfinished last line is left', async () => {
    const file = path.join(dir, 'model-debug.jsonl');
    writeFileSync(file, '');
    for (let i = 0; i < 5; i++)
      appendFileSync(file, line({ choices: [{ message: { content: `a${i}` } }] }) + '\n');
    appendFileSync(file, '{"ts":"unfinished'); // the supervisor is writing it
    const p1 = await readDebugPage(file, dir, { offset: 0, index: 0, limit: 2 });
    expect(p1.entries.map((e) => e.text)).toEqual(['a0', 'a1']);
    const p2 = await readDebugPage(file, dir, { offset: p1.next!, index: 2, limit: 20 });
    expect(p2.entries.map((e) => [e.n, e.text])).toEqual([
      [3, 'a2'],
      [4, 'a3'],
      [5, 'a4'],
    ]);
    expect(p2.next).toBe(p2.size - '{"ts":"unfinished'.length);
    await expect(readDebugPage(file, dir, { offset: 3, index: 0, limit: 2 })).rejects.toThrow(
      'offset 3 is not the start of an entry',
    );
  });

  it('no log: said so; a link in its place is not followed', async () => {
    expect(
      (await readDebugPage(path.join(dir, 'none.jsonl'), dir, { offset: 0, index: 0, limit: 2 })).exists,
    ).toBe(false);
    const secret = path.join(dir, 'secret.txt');
    writeFileSync(secret, line('person-secret') + '\n');
    const link = path.join(dir, 'link.jsonl');
    symlinkSync(secret, link);
    await expect(readDebugPage(link, dir, { offset: 0, index: 0, limit: 2 })).rejects.toThrow(
      /cannot be read/,
    );
  });
});
