/**
 * The board's HTTP API refuses bad requests with a clear 4xx that says what was wrong: never a 500,
 * never an empty reply, never a prototype key written into config.yaml. Against a real `runboard serve`
 * and its supervisor.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';

const CONFIG = `version: 1
scheduler:
  maxConcurrency: 2
flows:
  shell: { runner: command, cap: 2 }
`;
const card = (title: string, flow: string): string =>
  `---\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\ncommand: "echo ${title}"\n---\n# Task\n`;

let server: BoardServer;
beforeAll(async () => {
  server = await BoardServer.start(CONFIG, {
    'ok.md': card('fine', 'shell'),
    'proto.md': card('prototype flow', 'constructor'),
    'proto2.md': card('prototype flow 2', '__proto__'),
  });
});
afterAll(async () => {
  await server?.stop();
});

/** A raw request: status and the parsed JSON body (or the text when it is not JSON). */
async function raw(method: string, p: string, body?: unknown): Promise<{ status: number; error: string }> {
  const res = await fetch(server.base + p, {
    method,
    headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  let error = text;
  try {
    error = String((JSON.parse(text) as { error?: unknown }).error ?? '');
  } catch {
    // not JSON: the text itself
  }
  return { status: res.status, error };
}

const config = (): string => readFileSync(path.join(server.project, 'config.yaml'), 'utf8');
const settings = (name: string) => ({ maxConcurrency: 2, flows: [{ name, cap: 1 }], columnLimits: {} });

describe('the HTTP API refuses bad requests clearly', () => {
  it.each(['__proto__', 'constructor', 'toString', 'nope'])(
    'settings for a flow named %s: 4xx naming the flow, config.yaml unchanged',
    async (name) => {
      const before = config();
      const r = await raw('PUT', '/api/settings', settings(name));
      expect(r.status, r.error).toBeGreaterThanOrEqual(400);
      expect(r.status, r.error).toBeLessThan(500);
      expect(r.error).toContain(`no flow ${name} in config.yaml`);
      expect(config()).toBe(before);
    },
  );

  it('a valid settings change is still written', async () => {
    const r = await raw('PUT', '/api/settings', settings('shell'));
    expect(r.status, r.error).toBe(200);
    expect(config()).toMatch(/shell: \{ runner: command, cap: 1 \}/);
  });

  it('malformed %-encoding in the path: 400 saying so', async () => {
    for (const p of ['/api/cards/%E0%A4%A', '/api/runs/%zz/files', '/api/cards/a%']) {
      const r = await raw('GET', p);
      expect(r.status, `${p}: ${r.error}`).toBe(400);
      expect(r.error).toMatch(/%-encoding/);
    }
  });

  it('export of an unknown or malformed run id: 404 with a reason, not an empty reply', async () => {
    const unknown = await raw('GET', '/api/runs/20200101-000000-abcdef/export');
    expect(unknown.status).toBe(404);
    expect(unknown.error).toContain('no run 20200101-000000-abcdef');
    const bad = await raw('GET', '/api/runs/..%2F..%2Fetc/export');
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.error).toMatch(/run id/);
  });

  it('a real run: export is a .tar.gz of its dir; its diff is asked of the supervisor (run/get)', async () => {
    await server.api('POST', '/api/cards/ok/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('ok done', async () => {
      const c = await server.card('ok');
      return c?.column === 'done' && c.runId;
    });
    const res = await fetch(`${server.base}/api/runs/${runId}/export`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    const tgz = Buffer.from(await res.arrayBuffer());
    expect(tgz.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    const noWorktree = await raw('GET', `/api/runs/${runId}/diff`);
    expect(noWorktree.status).toBe(404);
    expect(noWorktree.error).toBe(`run ${runId} has no worktree`);
    const keep = await raw('POST', `/api/runs/${runId}/keep`);
    expect(keep.status).toBe(409);
    expect(keep.error).toBe(`run ${runId} has no worktree or workspace copy`);
    const unknown = await raw('GET', '/api/runs/20200101-000000-abcdef/diff');
    expect(unknown.status).toBe(404);
    expect(unknown.error).toBe('no run 20200101-000000-abcdef');
    for (const action of ['diff', 'keep', 'files']) {
      const r = await raw(action === 'keep' ? 'POST' : 'GET', `/api/runs/not-a-run/${action}`);
      expect(r.status, `${action}: ${r.error}`).toBe(400);
      expect(r.error).toMatch(/not a run id/);
    }
  });

  it('bad parameters name the field that was wrong', async () => {
    const move = await raw('POST', '/api/cards/ok/move', { to: 'sideways', index: 0 });
    expect(move.status).toBe(400);
    expect(move.error).toMatch(/to/);
    const neg = await raw('POST', '/api/cards/ok/move', { to: 'queued', index: -1 });
    expect(neg.status).toBe(400);
    expect(neg.error).toMatch(/index/);
    const notJson = await raw('POST', '/api/cards/ok/move', '{"to":');
    expect(notJson.status).toBe(400);
    expect(notJson.error).toMatch(/JSON/);
    const settle = await raw('POST', '/api/runs/20200101-000000-abcdef/explode', {});
    expect(settle.status).toBe(400);
    expect(settle.error).toMatch(/how/);
  });

  it('prototype names as card ids are just unknown cards', async () => {
    for (const id of ['constructor', '__proto__', 'toString']) {
      const r = await raw('GET', `/api/cards/${id}`);
      expect(r.status, r.error).toBe(404);
      expect(r.error).toContain(`no card ${id}`);
    }
  });

  it('a card whose flow is a prototype name waits with a clear reason and never launches', async () => {
    await server.api('POST', '/api/cards/proto/move', { to: 'queued', index: 0 });
    await server.api('POST', '/api/cards/proto2/move', { to: 'queued', index: 1 });
    for (const [id, flow] of [
      ['proto', 'constructor'],
      ['proto2', '__proto__'],
    ] as const) {
      const c = await waitUntil(`${id} waiting`, async () => {
        const c = await server.card(id);
        return c?.waiting ? c : undefined;
      });
      expect(c.waiting).toMatch(new RegExp(`^flow "${flow}" is not in config\\.yaml`));
      expect(c.column).toBe('queued');
      expect(c.runId).toBeUndefined();
      expect((await server.api<{ runs: unknown[] }>('GET', `/api/cards/${id}`)).runs).toEqual([]);
    }
  });
});
