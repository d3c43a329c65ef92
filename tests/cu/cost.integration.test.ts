/**
 * Tokens, cost and budgets from inside real computer-use runs (private displays, the scripted model
 * server upstream): the supervisor's model proxy counts every answer's usage into the run's record
 * (result.json `usage`), prices a known model, and ends a run whose answers reach the flow's maxTokens
 * (termination `budget`), refusing its next request.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { act, CuHarness, final, KEYS } from './cu-harness.ts';

let t: CuHarness;
beforeAll(async () => {
  t = await CuHarness.start({ desktop: false });
});
afterAll(async () => {
  await t?.stop();
});

const USAGE = { input: 1000, output: 100 };
const wait = { ...act({ action: 'wait', seconds: 0.05 }), usage: USAGE };
const done = { ...final({ status: 'SUCCESS', summary: 'done', error: '', questions: [] }), usage: USAGE };
const flow = (over: Parameters<CuHarness['flow']>[0] = {}) =>
  t.flow({ sandbox: {}, ...over }, { privateDisplay: true, displaySize: '800x600x24', liveFrameMs: 0 });

describe('tokens and cost of a run', () => {
  it('counts every answer and prices a known model', async () => {
    t.episodes([{ name: 'cost', match: 'CU-COST-KNOWN', turns: [wait, wait, done] }]);
    const rec = await t.run(t.card('cost', 'CU-COST-KNOWN wait twice'), flow({ model: 'gpt-4o' }));
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    expect(rec.result.usage).toMatchObject({ requests: 3, inputTokens: 3000, outputTokens: 300 });
    // gpt-4o: $2.50 / $10 per million tokens (protocol/prices.ts)
    expect(rec.result.usage!.costUsd).toBeCloseTo((3 * (1000 * 2.5 + 100 * 10)) / 1e6, 9);
    expect(Object.keys(rec.result.usage!.models)).toEqual(['gpt-4o']);
  });

  it('a model with no price: tokens counted, cost unknown (null)', async () => {
    t.episodes([{ name: 'unpriced', match: 'CU-COST-UNPRICED', turns: [done] }]);
    const rec = await t.run(
      t.card('unpriced', 'CU-COST-UNPRICED finish'),
      flow({ model: 'scripted-model-9000' }),
    );
    expect(rec.result.status).toBe('succeeded');
    expect(rec.result.usage).toMatchObject({
      requests: 1,
      inputTokens: 1000,
      outputTokens: 100,
      costUsd: null,
    });
  });

  it('maxTokens ends the run once its answers reach it, saying so, and refuses the next request', async () => {
    t.episodes([{ name: 'budget', match: 'CU-COST-BUDGET', turns: [wait, wait, wait, wait, done] }]);
    const rec = await t.run(
      t.card('budget', 'CU-COST-BUDGET wait four times'),
      flow({ model: 'gpt-4o', budget: { maxTokens: 2000 } }),
    );
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('budget');
    expect(rec.result.termination?.detail).toMatch(
      /token budget spent: 2200 tokens used, the flow allows 2000/,
    );
    // two answers counted; nothing past the budget reached the model
    expect(rec.result.usage).toMatchObject({ requests: 2, inputTokens: 2000, outputTokens: 200 });
    expect(t.model.requests.filter((r) => r.episode === 'budget')).toHaveLength(2);
  });

  it('debug: true records every request and answer as JSONL in the log folder, key and token redacted', async () => {
    // a "model" that echoes the provider key back: the worst a log could then hold
    const leak = final({ status: 'SUCCESS', summary: `the key is ${KEYS.openai}`, error: '', questions: [] });
    t.episodes([{ name: 'debug', match: 'CU-DEBUG-LOG', turns: [wait, { ...leak, usage: USAGE }] }]);
    const rec = await t.run(
      t.card('debug', 'CU-DEBUG-LOG wait once'),
      flow({ model: 'gpt-4o', debug: true }),
    );
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    const file = path.join(rec.result.logDir, 'model-debug.jsonl');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    const lines = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ provider: 'openai', method: 'POST', status: 200 });
    expect(JSON.stringify(lines[0]!.request)).toContain('CU-DEBUG-LOG wait once'); // the rendered prompt
    expect(JSON.stringify(lines[0]!.response)).toContain('desktop_action'); // the raw answer
    expect(text).toContain('[image: '); // screenshots shortened to their size
    expect(text).not.toContain(KEYS.openai);
    expect(text).toContain('the key is [redacted]');
    expect(text).not.toMatch(/rbp-[0-9a-f]{48}/); // the run's proxy token
  });
});
