/**
 * The scheduler against a real supervisor, through `runboard serve`'s API (no browser): re-attach after
 * a host restart (not re-run), backoff after failures, column limits.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BoardServer, shellCard, shellConfig, waitUntil } from '../e2e/helpers/board.ts';

const config = shellConfig;
const card = shellCard;

let server: BoardServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('scheduler with a real supervisor', () => {
  it('a host restart re-attaches a run still going instead of running it again', async () => {
    server = await BoardServer.start(config(), {
      // It goes on until the test says so (a file in its workspace), however long the restart takes:
      // a fixed 3 s run ended during a slow restart on a loaded machine (the loaded pass, docs/soak.md).
      'long.md': card('Long', 'echo started; while [ ! -e go ]; do sleep 0.05; done; echo released'),
      'waiting.md': card('Waiting', 'echo later', 'status: queued\n'),
    });
    await server.api('POST', '/api/cards/long/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('running', async () => {
      const c = await server!.card('long');
      return c?.column === 'running' && c.runId;
    });
    // stop the host (serve) only; the supervisor and the run go on
    const exited = new Promise((r) => server!.proc.once('exit', r));
    server.proc.kill('SIGTERM');
    await exited;
    expect(readFileSync(server.cardFile('long.md'), 'utf8')).toMatch(/status: running/);
    await server.startServe();
    const after = await server.card('long');
    expect(after?.column).toBe('running');
    expect(after?.runId).toBe(runId);
    writeFileSync(path.join(server.workspace, 'go'), '');
    await waitUntil('done', async () => (await server!.card('long'))?.column === 'done', 20_000);
    const runs = (await server.api<{ runs: { runId: string }[] }>('GET', '/api/cards/long')).runs;
    expect(runs.map((r) => r.runId)).toEqual([runId]);
    // the queued card was queued again and ran
    await waitUntil('queued card ran', async () => (await server!.card('waiting'))?.column === 'done');
  });

  it('a run that ended while the host was away settles its card from the record, not by running again', async () => {
    server = await BoardServer.start(config(), {
      'short.md': card('Short', 'sleep 1; echo finished; exit 4'),
    });
    await server.api('POST', '/api/cards/short/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('running', async () => {
      const c = await server!.card('short');
      return c?.column === 'running' && c.runId;
    });
    const exited = new Promise((r) => server!.proc.once('exit', r));
    server.proc.kill('SIGTERM');
    await exited;
    // The run ends (exit 4) while no host is there; the card file still says running.
    await waitUntil('the run ended', async () => {
      const runs = await server!.supervisorRuns();
      return runs.find((r) => r.runId === runId && r.status !== 'running');
    });
    expect(readFileSync(server.cardFile('short.md'), 'utf8')).toMatch(/status: running/);
    await server.startServe();
    const after = await waitUntil('settled', async () => {
      const c = await server!.card('short');
      return c?.column !== 'running' && c?.column !== 'queued' ? c : undefined;
    });
    expect(after.column).toBe('failed');
    const runs = (await server.api<{ runs: { runId: string }[] }>('GET', '/api/cards/short')).runs;
    expect(runs.map((r) => r.runId)).toEqual([runId]); // not run again
  });

  it('consecutive failures back off (visible next try), then the card goes to Failed', async () => {
    server = await BoardServer.start(config('  backoff: { base: 700ms, retries: 2 }\n'), {
      'fail.md': card('Fails', 'echo nope; exit 3'),
    });
    await server.api('POST', '/api/cards/fail/move', { to: 'queued', index: 0 });
    const waiting = await waitUntil('a backoff', async () => {
      const c = await server!.card('fail');
      return c?.column === 'queued' && c.failures === 1 && c.nextTryAt ? c : undefined;
    });
    expect(Date.parse(waiting.nextTryAt!)).toBeGreaterThan(Date.now() - 1000);
    const failed = await waitUntil('Failed', async () => {
      const c = await server!.card('fail');
      return c?.column === 'failed' ? c : undefined;
    });
    expect(failed.failures).toBe(3);
    expect(failed.lastError).toMatch(/failed/);
  });

  it('a full column limit holds new runs', async () => {
    server = await BoardServer.start(config('  columnLimits: { needs-input: 1 }\n'), {
      'stuck.md': card('Stuck', 'true', 'status: needs-input\n'),
      'next.md': card('Next', 'echo hi'),
    });
    await server.api('POST', '/api/cards/next/move', { to: 'queued', index: 0 });
    const c = await waitUntil('a reason', async () => (await server!.card('next'))?.waiting);
    expect(c).toMatch(/needs-input/);
    await server.api('POST', '/api/cards/stuck/move', { to: 'done', index: 0 });
    await waitUntil('next ran', async () => (await server!.card('next'))?.column === 'done');
  });
});
