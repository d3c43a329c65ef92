/**
 * The other two wire formats, each through its official SDK and the supervisor's proxy: Anthropic
 * Messages with its computer-use tool, and Chat Completions against an OpenAI-compatible server named
 * by base URL (a "local" provider). Both fill the GTK form; the app's state is read back.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, CuHarness, cuEvents, find, final, imagePoint, KEYS } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start();
});
afterEach(async () => {
  await t.closeForms();
});
afterAll(async () => {
  await t?.stop();
});

const computer = (input: Record<string, unknown>) => ({
  toolCalls: [{ name: 'computer', arguments: input }],
});

describe('providers', () => {
  it('Anthropic Messages: the computer-use tool drives the form (coordinates on the downscaled image)', async () => {
    const title = 'CU Anthropic';
    await t.startForm(title);
    const name = await find(title, (e) => e.role === 'text' && e.name === 'Name');
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    const n = imagePoint(name.bounds, 0.5);
    const s = imagePoint(submit.bounds, 0.5);
    t.episodes([
      {
        name: 'anthropic',
        match: 'CU-ANTHROPIC',
        turns: [
          computer({ action: 'screenshot' }),
          computer({ action: 'left_click', coordinate: [n.x, n.y] }),
          computer({ action: 'type', text: 'Grace Hopper' }),
          { toolCalls: [{ name: 'desktop_read', arguments: { title } }] },
          computer({ action: 'left_click', coordinate: [s.x, s.y] }),
          final({ status: 'SUCCESS', summary: 'submitted', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('anthropic', 'CU-ANTHROPIC fill in Grace Hopper and submit'),
      t.flow({ provider: 'anthropic', model: 'claude-sonnet-4-5' }),
    );
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    expect((await find(title, (e) => e.name === 'Name' && e.role === 'text')).value).toBe('Grace Hopper');
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');
    expect(cuEvents(rec, 'cu-step').map((x) => x.action)).toEqual([
      'screenshot',
      'left_click',
      'type',
      'desktop_read',
      'left_click',
    ]);
    const reqs = t.model.requests.filter((r) => r.episode === 'anthropic');
    expect(reqs).toHaveLength(6);
    for (const r of reqs) {
      expect(r.api).toBe('messages');
      expect(r.headers['x-api-key']).toBe(KEYS.anthropic);
      expect(String(r.headers['anthropic-beta'])).toContain('computer-use-2025-01-24');
      const tools = r.body!.tools as { type?: string; name: string; display_width_px?: number }[];
      expect(tools.find((x) => x.name === 'computer')).toMatchObject({
        type: 'computer_20250124',
        display_width_px: 640,
        display_height_px: 400,
      });
      expect(JSON.stringify(r.body).match(/"type":"image"/g)).toHaveLength(1);
    }
    expect(rec.result.metrics).toMatchObject({
      api: 'messages',
      model: 'claude-sonnet-4-5',
      inputTokens: 600,
    });
    expect(rec.result.metrics.estimatedCostUsd).toBeCloseTo((600 * 3 + 60 * 15) / 1e6, 9);
  });

  it('Chat Completions by base URL (an OpenAI-compatible local server): fills the form', async () => {
    const title = 'CU Chat';
    await t.startForm(title);
    const email = await find(title, (e) => e.role === 'text' && e.name === 'Email');
    const submit = await find(title, (e) => e.role === 'push button' && e.name === 'Submit');
    t.episodes([
      {
        name: 'chat',
        match: 'CU-CHAT',
        turns: [
          act({ action: 'left_click', ...imagePoint(email.bounds, 0.5) }),
          act({ action: 'type', text: 'local@example.com' }),
          act({ action: 'key', keys: 'tab' }),
          act({ action: 'left_click', ...imagePoint(submit.bounds, 0.5) }),
          final({ status: 'SUCCESS', summary: 'ok', error: '', questions: [] }),
        ],
      },
    ]);
    const rec = await t.run(
      t.card('chat', 'CU-CHAT fill in the email and submit'),
      t.flow({ provider: 'local', model: 'qwen2.5-vl' }),
    );
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    expect((await find(title, (e) => e.name === 'Email' && e.role === 'text')).value).toBe(
      'local@example.com',
    );
    await find(title, (e) => e.role === 'label' && e.name === 'clicked Submit 1');
    const reqs = t.model.requests.filter((r) => r.episode === 'chat');
    expect(reqs).toHaveLength(5);
    for (const r of reqs) {
      expect(r.api).toBe('chat');
      expect(r.path).toBe('/v1/chat/completions');
      expect(r.headers.authorization).toBe(`Bearer ${KEYS.local}`);
      expect(JSON.stringify(r.body).match(/"type":"image_url"/g)).toHaveLength(1);
    }
    expect(rec.result.metrics).toMatchObject({ api: 'chat', steps: 5, toolCalls: 4 });
  });
});
