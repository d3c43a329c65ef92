/**
 * The fleet as a whole (issue 34): a real redis-server, the supervisor the board talks to and hosts
 * with state roots of their own. What a dead host left is read without waking it; a card the fleet
 * cannot run is refused at launch, with the reason, before any job is queued.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogDir } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { DIST, processesMentioning, waitUntil, type Harness } from '../helpers/harness.ts';
import { startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
const hosts: Harness[] = [];

beforeAll(async () => {
  ({ board, redis } = await startGateway());
}, 120_000);

afterAll(async () => {
  for (const h of hosts) await h.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

/** `runboard` as a person runs it on that machine (its own state root). */
async function rb(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, RUNBOARD_HOME: home };
  delete env.NODE_EXTRA_CA_CERTS;
  try {
    const r = await promisify(execFile)(process.execPath, [path.join(DIST, 'runboard.mjs'), ...args], {
      env,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the fleet whole', () => {
  it("`runboard runs` on a dead host's state reads its runs without starting a supervisor there", async () => {
    const host = await startHost(redis.url, 'doomed', ['doomed'], 1);
    hosts.push(host);
    const { runId } = await board.launch('echo "on the doomed host"; sleep 60', { name: 'doomed' });
    let hostRun = '';
    await waitUntil(
      'the host runs it',
      async () => {
        hostRun = String((await board.client.getRun(runId)).run.metrics.hostRunId ?? '');
        return /^\d{8}-/.test(hostRun);
      },
      20_000,
    );
    host.supervisor.kill('SIGKILL');
    await new Promise((r) => (host.supervisor.exitCode !== null ? r(0) : host.supervisor.once('exit', r)));
    await waitUntil('nothing of the host left', () => processesMentioning(host.root).length === 0, 10_000);
    const marker = path.join(host.paths.supervisorDir, 'active', hostRun);
    expect(existsSync(marker)).toBe(true);

    const text = await rb(path.join(host.root, 'home'), ['runs']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stderr).toMatch(/no supervisor is running for .*: its runs as their files record them/);
    expect(text.stderr).toMatch(
      /1 marked running \(\*\) were going when their supervisor \(pid \d+\) stopped/,
    );
    expect(text.stdout.split('\n')[1]).toMatch(new RegExp(`^${hostRun}\\s+running\\*\\s+doomed`));
    const json = await rb(path.join(host.root, 'home'), ['runs', '--json', '--active']);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ runId: hostRun, status: 'running' });

    // Nothing was started and nothing rewritten: the host's record is as its supervisor left it.
    expect(processesMentioning(host.root)).toEqual([]);
    expect(existsSync(marker)).toBe(true);
    const rec = JSON.parse(
      readFileSync(path.join(runLogDir(host.paths, hostRun), 'result.json'), 'utf8'),
    ) as RunResult;
    expect(rec.status).toBe('running');
    // The board's side ends the run as its host stopped renewing the lease.
    const end = await board.collect(runId);
    expect(end.result.termination?.reason).toBe('heartbeat-timeout');
  });
});
