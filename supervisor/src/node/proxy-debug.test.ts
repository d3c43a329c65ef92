import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BodyTap, DebugLog, redact } from './proxy-debug.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-debug-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the debug log', () => {
  it('redacts the key, the token and sensitive parameter values, also JSON-escaped', () => {
    const line = JSON.stringify({ a: 'sk-live-1', b: 'pass"word\\1', c: 'x rbp-abc y' });
    const out = redact(line, ['sk-live-1', 'pass"word\\1', 'rbp-abc', 'ab']);
    expect(out).toBe('{"a":"[redacted]","b":"[redacted]","c":"x [redacted] y"}');
  });

  it('writes one JSON line per exchange, images shortened, the run’s secrets redacted', async () => {
    const file = path.join(dir, 'model-debug.jsonl');
    const log = new DebugLog(file, () => ['hunter2-param']);
    const request = new BodyTap();
    const img = 'A'.repeat(5000);
    request.write(
      Buffer.from(JSON.stringify({ input: 'type hunter2-param', image_url: `data:image/png;base64,${img}` })),
    );
    const response = new BodyTap();
    response.write(Buffer.from('data: {"delta":"sk-key-123"}\n\n'));
    log.write(
      {
        provider: 'openai',
        method: 'POST',
        path: '/v1/responses',
        status: 200,
        at: Date.now(),
        request,
        response,
      },
      ['sk-key-123', 'rbp-token'],
    );
    await log.close();
    const text = readFileSync(file, 'utf8');
    const entry = JSON.parse(text) as { request: { input: string; image_url: string }; response: string };
    expect(entry.request.input).toBe('type [redacted]');
    expect(entry.request.image_url).toMatch(/^\[image: \d+ base64 chars\]$/);
    expect(entry.response).toBe('data: {"delta":"[redacted]"}\n\n');
    expect(text).not.toMatch(/hunter2|sk-key/);
  });
});
