/**
 * The board on a fleet: a project whose config says scheduler.backend: redis, served by `runboard
 * serve` as usual, with its runs taken by three host supervisors. The board's caps (global and per
 * flow) hold across the hosts together, and every run's record ends up on its card.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogDir } from '@runboard/supervisor/paths';
import { BoardServer, shellCard, waitUntil } from '../e2e/helpers/board.ts';
import { sleep } from '../helpers/harness.ts';
import type { Harness } from '../helpers/harness.ts';
import { maxOverlap, startHost } from './hosts.ts';
import { RedisServer } from './redis.ts';

const CARDS = 200;
const GLOBAL_CAP = 3;
let redis: RedisServer;
let server: BoardServer;
const hosts: Harness[] = [];

let redisDir: string | undefined;
beforeAll(async () => {
  redisDir = mkdtempSync(path.join(os.tmpdir(), 'rb-redis-'));
  redis = await RedisServer.start(redisDir);
  hosts.push(
    await startHost(redis.url, 'h1', ['build', 'test'], 2, ['workspace']),
    await startHost(redis.url, 'h2', ['build', 'test'], 2, ['workspace']),
    await startHost(redis.url, 'h3', ['test'], 2, ['workspace']),
  );
  const config =
    `version: 2\nscheduler:\n  maxConcurrency: ${GLOBAL_CAP}\n  backend: redis\n  backoff: { base: 500ms, retries: 1 }\n` +
    `redis: { url: ${redis.url} }\n` +
    'flows:\n  build: { runner: command, cap: 1 }\n  test: { runner: command, cap: 3 }\n  fragile: { runner: command, cap: 1 }\n';
  // Each run notes when it began and ended in its host's workspace (ns since the epoch, one clock).
  const cards: Record<string, string> = {};
  for (let i = 0; i < CARDS; i++) {
    const flow = i % 4 === 0 ? 'build' : 'test';
    cards[`c${i}.md`] = shellCard(
      `Card ${i}`,
      `s=$(date +%s%N); echo "card ${i}"; sleep 0.05; echo "${flow} $s $(date +%s%N)" >> spans.log`,
      'status: queued\n',
    ).replace('flow: shell', `flow: ${flow}`);
  }
  server = await BoardServer.start(config, cards, { env: { RUNBOARD_FLEET_LEASE_MS: '5000' } });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  for (const h of hosts) await h.stop().catch(() => undefined);
  await redis?.stop();
  if (redisDir) rmSync(redisDir, { recursive: true, force: true });
});

describe('a board whose runs go to a fleet', () => {
  it('runs every queued card on the hosts, within the global and per-flow caps, each recorded on its card', async () => {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const board = await server.board(); // one read of the whole board per look, twice a second
      const done = board.cards.filter((c) => /^c\d+$/.test(c.id) && c.column === 'done').length;
      if (done === CARDS) break;
      if (Date.now() > deadline) throw new Error(`only ${done} of ${CARDS} cards done`);
      await sleep(500);
    }
    const spans: { flow: string; span: [number, number] }[] = [];
    for (const h of hosts) {
      const log = path.join(h.workspace, 'spans.log');
      const text = readdirSync(h.workspace).includes('spans.log') ? readFileSync(log, 'utf8') : '';
      for (const line of text.trim().split('\n').filter(Boolean)) {
        const [flow, a, b] = line.split(' ');
        spans.push({ flow: flow!, span: [Number(BigInt(a!) / 1000n), Number(BigInt(b!) / 1000n)] });
      }
    }
    expect(spans.length).toBe(CARDS); // each card ran once, nowhere twice
    expect(maxOverlap(spans.map((s) => s.span))).toBeLessThanOrEqual(GLOBAL_CAP);
    expect(maxOverlap(spans.filter((s) => s.flow === 'build').map((s) => s.span))).toBeLessThanOrEqual(1);
    // h3 offers only `test`: no build ran there.
    const h3 = readdirSync(hosts[2]!.workspace).includes('spans.log')
      ? readFileSync(path.join(hosts[2]!.workspace, 'spans.log'), 'utf8')
      : '';
    expect(h3).not.toMatch(/^build /m);
    for (let i = 0; i < CARDS; i++) {
      const detail = await server.api<{ runs: { runId: string; status: string; logDir: string }[] }>(
        'GET',
        `/api/cards/c${i}`,
      );
      expect(detail.runs).toHaveLength(1);
      expect(detail.runs[0]!.status).toBe('succeeded');
      expect(readFileSync(path.join(detail.runs[0]!.logDir, 'stdout.log'), 'utf8')).toBe(`card ${i}\n`);
    }
  }, 260_000);

  it("a remote run's screenshots and live frame are on the board's API while it runs, the screenshots after", async () => {
    server.writeCard(
      'shots.md',
      shellCard('Shots', 'while [ ! -e shots.stop ]; do sleep 0.05; done').replace(
        'flow: shell',
        'flow: test',
      ),
    );
    await waitUntil('the card is on the board', async () => (await server.card('shots')) !== undefined);
    await server.api('POST', '/api/cards/shots/move', { to: 'queued', index: 0 });
    type Runs = { runs: { runId: string; status: string; metrics: Record<string, unknown> }[] };
    let run: Runs['runs'][number] | undefined;
    await waitUntil(
      'a host runs it',
      async () => {
        run = (await server.api<Runs>('GET', '/api/cards/shots')).runs[0];
        return typeof run?.metrics.hostRunId === 'string';
      },
      30_000,
    );
    // The run's artifacts on its host, as a computer-use run writes them there.
    const host = hosts.find((h) => existsSync(runLogDir(h.paths, String(run!.metrics.hostRunId))))!;
    const art = path.join(runLogDir(host.paths, String(run!.metrics.hostRunId)), 'artifacts');
    mkdirSync(art, { recursive: true });
    writeFileSync(path.join(art, 'step-001.png'), 'png bytes');
    writeFileSync(path.join(art, 'live.jpg'), 'live bytes');
    const id = run!.runId;
    await waitUntil(
      'the screenshot listed',
      async () =>
        (await server.api<{ screenshots: string[] }>('GET', `/api/runs/${id}/files`)).screenshots.includes(
          'artifacts/step-001.png',
        ),
      20_000,
    );
    const get = (p: string): Promise<Response> =>
      fetch(server.base + p, { headers: { authorization: `Bearer ${server.token}` } });
    expect(await (await get(`/api/runs/${id}/file?name=artifacts/step-001.png`)).text()).toBe('png bytes');
    await waitUntil('the live frame served', async () => (await get(`/api/runs/${id}/live`)).ok, 20_000);
    expect(await (await get(`/api/runs/${id}/live`)).text()).toBe('live bytes');
    rmSync(path.join(art, 'live.jpg'));
    writeFileSync(path.join(host.workspace, 'shots.stop'), '');
    await waitUntil('done', async () => (await server.card('shots'))?.column === 'done', 30_000);
    expect((await server.api<{ screenshots: string[] }>('GET', `/api/runs/${id}/files`)).screenshots).toEqual(
      ['artifacts/step-001.png'],
    );
    expect((await get(`/api/runs/${id}/live`)).status).toBe(404);
  });

  it('a card no host of the fleet can run is refused up front, with the reason on the card and no run', async () => {
    // No host offers `fragile` yet (h4 joins in the next test): the board had queued a job that
    // waited for good, or that a host refused after the fact (issue 34).
    server.writeCard('nohost.md', shellCard('No host', 'echo never').replace('flow: shell', 'flow: fragile'));
    await waitUntil('the card is on the board', async () => (await server.card('nohost')) !== undefined);
    await server.api('POST', '/api/cards/nohost/move', { to: 'queued', index: 0 });
    const card = await waitUntil('refused', async () => {
      const c = await server.card('nohost');
      return c?.column === 'failed' ? c : undefined;
    });
    expect(card.lastError).toMatch(
      /^refused: the fleet cannot run this card: no host of the fleet offers flow "fragile" \(h1 offers "build", "test"; h2 offers "build", "test"; h3 offers "test"\): start one with `runboard fleet join … --flows fragile --workspace workspace=DIR`/,
    );
    expect((await server.api<{ runs: unknown[] }>('GET', '/api/cards/nohost')).runs).toEqual([]);
  });

  it("a run whose host dies ends failed, and the card's retry runs it again on another host", async () => {
    // The first run waits long; a second run (the retry) finds the marker the first left and ends at once.
    const victim = await startHost(redis.url, 'h4', ['fragile'], 1, ['workspace']);
    server.writeCard(
      'fragile.md',
      shellCard(
        'Fragile',
        'if [ -e first.mark ]; then echo retried; else touch first.mark; sleep 62; fi',
      ).replace('flow: shell', 'flow: fragile'),
    );
    await waitUntil('the card is on the board', async () => (await server.card('fragile')) !== undefined);
    await server.api('POST', '/api/cards/fragile/move', { to: 'queued', index: 0 });
    await waitUntil('running on h4', () => readdirSync(victim.workspace).includes('first.mark'), 30_000);
    victim.supervisor.kill('SIGKILL');
    // Another host for the flow, working in the same folder (granted there too).
    hosts.push(await startHost(redis.url, 'h5', ['fragile'], 1, ['workspace'], {}, victim.workspace));
    await waitUntil(
      'done after a retry',
      async () => (await server.card('fragile'))?.column === 'done',
      90_000,
    );
    const detail = await server.api<{
      runs: { status: string; termination: { reason: string } | null; metrics: Record<string, unknown> }[];
    }>('GET', '/api/cards/fragile');
    const byStatus = detail.runs.map((r) => [r.status, r.metrics.host]);
    expect(byStatus).toContainEqual(['failed', 'h4']);
    expect(byStatus).toContainEqual(['succeeded', 'h5']);
    expect(detail.runs.find((r) => r.status === 'failed')!.termination!.reason).toBe('heartbeat-timeout');
    hosts.push(victim); // its folder goes in afterAll, after h5's, which works in it
  }, 120_000);
});
