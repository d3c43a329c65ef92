/**
 * A run's model debug log in the inspector (a flow's `debug: true`): a real reflect run on a real
 * `runboard serve` (its supervisor and model proxy, the scripted model server upstream, the one double)
 * makes 26 model requests, which the proxy writes to the run's `model-debug.jsonl`. The board's method
 * reads it a page at a time from a byte offset (never the whole file), each entry with its status,
 * tokens, the rendered request and the raw answer, images as their size, neither the key nor the run's
 * token anywhere; headless Chromium pages through it in the run panel. Attacks on the method: a run id
 * with `..`, a malformed one, an unknown run, a run of another project on the same supervisor, an
 * offset inside an entry, a page too large: each refused, saying why.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import {
  CLICK_SEARCH,
  compilerEpisode,
  reflectCard,
  reflectFlow,
  stepAnswer,
  stepEpisode,
  writeRecording,
} from '../fixtures/reflect-recording.ts';
import type { DebugLogPage } from '../../host/src/shared/debug-log-types.ts';
import { png } from '../documents/fixtures.ts';
import { ARTIFACTS, BoardServer, launchBrowser, REPO, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const REC = 'rec-20261127-200000-d1e2f3';
const STEPS = 25;
const CONFIG = `version: 1
scheduler: { maxConcurrency: 2 }
flows:
  ${reflectFlow(', debug: true')}
  shell: { runner: command, cap: 1 }
`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;
let runId: string;

const raw = async (p: string): Promise<{ status: number; body: Record<string, unknown> }> => {
  const res = await fetch(`${server.base}${p}`, { headers: { authorization: `Bearer ${server.token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  browser = await launchBrowser();
  // a screenshot large enough that the supervisor writes it as its size (a real PNG, made by ffmpeg:
  // Chromium's page.screenshot can fail "Unable to capture screenshot", tests/documents/fixtures.ts)
  const shot = await png('gradients=s=64x48');
  model = await startModelServer({
    episodes: [
      compilerEpisode({
        detailed_task_description: 'Search the shop.',
        success_criteria: 'Results are shown.',
        task_params: [],
        subtasks: [{ text: 'Search', expected_outcome: 'Results are listed.' }],
        steps: Array.from({ length: STEPS }, (_, i) => ({ i, subtask: 0, action_value: null })),
      }),
      stepEpisode(stepAnswer('DEBUG-LOG-INTENT click the search field.')),
    ],
  });
  server = await BoardServer.start(
    CONFIG,
    {
      'search.md': reflectCard(REC),
    },
    BoardServer.withModel('openai', model.url),
  );
  writeRecording(
    server.project,
    REC,
    shot,
    Array.from({ length: STEPS }, (_, i) => ({ at: (i + 1) * 500, ...CLICK_SEARCH })),
  );
  await server.api('POST', '/api/cards/search/move', { to: 'queued', index: 0 });
  runId = await waitUntil(
    'the reflect run to end',
    async () => {
      const c = await server.card('search');
      return c && c.column !== 'queued' && c.column !== 'running' && c.runId;
    },
    120_000,
  );
  expect((await server.card('search'))?.column).toBe('done');
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

describe("a run's model debug log", () => {
  it('is read a page at a time from a byte offset: status, tokens, request, answer; images as their size; no secrets', async () => {
    const first = await server.api<DebugLogPage>('GET', `/api/runs/${runId}/debug`);
    expect(first.exists).toBe(true);
    expect(first.entries).toHaveLength(20);
    expect(first.entries.map((e) => e.n)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(first.next).toBeGreaterThan(0);
    expect(first.next).toBeLessThan(first.size);
    const e = first.entries[0]!;
    expect(e).toMatchObject({ provider: 'openai', method: 'POST', path: '/v1/responses', status: 200 });
    expect(e.model).toBe('gpt-5-mini');
    expect(e.tokens?.input).toBeGreaterThan(0);
    expect(e.text).toContain('DEBUG-LOG-INTENT');
    expect(e.request).toContain('You turn one recorded step');
    expect(e.request).toMatch(/\[image: \d+ KB\]/);
    const second = await server.api<DebugLogPage>(
      'GET',
      `/api/runs/${runId}/debug?offset=${first.next}&index=20`,
    );
    expect(second.entries.map((x) => x.n)).toEqual([21, 22, 23, 24, 25, 26]);
    expect(second.next).toBeNull();
    expect(second.entries.at(-1)!.request).toContain('You are a workflow compiler');
    const all = JSON.stringify([first, second]);
    expect(all).not.toContain('base64,iVBOR'); // no image inlined
    expect(all).not.toContain('sk-test-openai'); // the key
    expect(all).not.toMatch(/rbp-[0-9a-f]{16}/); // the run's proxy token
    // a smaller page, as asked
    const one = await server.api<DebugLogPage>('GET', `/api/runs/${runId}/debug?limit=1`);
    expect(one.entries).toHaveLength(1);
    expect(one.next).toBeGreaterThan(0);
  });

  it('refuses a run id with `..`, a malformed or unknown one, another project’s run, an offset inside an entry, a page too large', async () => {
    const dots = await raw(`/api/runs/..%2F..%2Fetc/debug`);
    expect(dots.status).toBe(400);
    expect(String(dots.body.error)).toMatch(/run id/);
    const dotted = await raw(`/api/runs/${runId.slice(0, -2)}..%2F${runId.slice(-1)}/debug`);
    expect(dotted.status).toBe(400);
    const bad = await raw('/api/runs/not-a-run/debug');
    expect(bad.status).toBe(400);
    expect(String(bad.body.error)).toMatch(/not a run id/);
    const unknown = await raw('/api/runs/20200101-000000-abcdef/debug');
    expect(unknown.status).toBe(404);
    expect(String(unknown.body.error)).toContain('no run 20200101-000000-abcdef');
    const inside = await raw(`/api/runs/${runId}/debug?offset=5`);
    expect(inside.status).toBe(400);
    expect(String(inside.body.error)).toContain('is not the start of an entry');
    const huge = await raw(`/api/runs/${runId}/debug?limit=100000`);
    expect(huge.status).toBe(400);
    expect(String(huge.body.error)).toMatch(/limit must be a whole number from 0 to 100/);
    const negative = await raw(`/api/runs/${runId}/debug?offset=-1`);
    expect(negative.status).toBe(400);
    // a run of another project, on the same supervisor (the CLI's): not this board's to show
    const other = path.join(server.root, 'other');
    mkdirSync(path.join(other, 'cards'), { recursive: true });
    mkdirSync(path.join(other, 'ws'));
    writeFileSync(path.join(other, 'config.yaml'), 'version: 1\nflows:\n  shell: { runner: command }\n');
    const card = path.join(other, 'cards', 'theirs.md');
    writeFileSync(
      card,
      '---\ntitle: theirs\nflow: shell\nworkspace: ./ws\ncommand: "true"\n---\n# Task\nx\n',
    );
    createGrant(statePaths({ RUNBOARD_HOME: server.home }), path.join(other, 'ws'));
    const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: server.home };
    delete env.NODE_EXTRA_CA_CERTS;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [path.join(REPO, 'dist', 'runboard.mjs'), 'run', '--json', card],
      { env, cwd: other },
    );
    const theirs = (JSON.parse(stdout.trim().split('\n')[0]!) as { runId: string }).runId;
    const foreign = await raw(`/api/runs/${theirs}/debug`);
    expect(foreign.status).toBe(404);
    expect(String(foreign.body.error)).toBe(`no run ${theirs} of this board's project`);
  });

  it('the run panel lists the requests a page at a time; one opens to its answer and request', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(server.url);
    await page.click('li[data-card-id="search"]');
    const log = page.getByRole('region', { name: 'Model debug log' });
    await log.getByText(/^1–20 · \d+ KiB in model-debug\.jsonl$/).waitFor();
    expect(await log.locator('.debug-entries > li').count()).toBe(20);
    await log.getByRole('button', { name: 'Next' }).click();
    await log.getByText(/^21–26 · /).waitFor();
    expect(await log.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
    await log.getByLabel('Model request 21').click();
    const request = log.getByLabel('Request 21', { exact: true });
    await request.waitFor();
    expect(await request.textContent()).toMatch(/\[image: \d+ KB\]/);
    await log.getByText('DEBUG-LOG-INTENT', { exact: false }).first().waitFor();
    await log.scrollIntoViewIfNeeded();
    await savePicture(page, path.join(ARTIFACTS, 'inspector-debug-log.png'), { fullPage: true });
    expect(await page.content()).not.toContain('base64,iVBOR');
    await log.getByRole('button', { name: 'Previous' }).click();
    await log.getByText(/^1–20 · /).waitFor();
    await page.close();
  });
});
