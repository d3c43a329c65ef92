/**
 * A remote run outlives the supervisor the board talks to: killed mid-run, a new one on the same state
 * root takes the run over from its marker and the job in Redis, and mirrors on from where the files
 * stopped: every line once, in order, with the end status the host saw. And the board's side of the
 * view: a client that goes away (a board restart) and attaches again from where it was loses no line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLogDir } from '@runboard/supervisor/paths';
import type { RunEvent, RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { sleep, waitUntil, type Harness } from '../helpers/harness.ts';
import { startGateway, startHost } from './hosts.ts';
import type { RedisServer } from './redis.ts';

let redis: RedisServer;
let board: Harness;
let gatewayEnv: NodeJS.ProcessEnv;
let host: Harness;

beforeAll(async () => {
  ({ board, redis, env: gatewayEnv } = await startGateway());
  host = await startHost(redis.url, 'keeper', ['shell'], 2);
}, 120_000);

afterAll(async () => {
  await host?.stop().catch(() => undefined);
  await board?.stop();
  await redis?.stop();
});

const N = 60;
/** Numbered lines on stdout and stderr, interleaved, over about three seconds. */
const lines = (tag: string, end = 'true'): string =>
  `for i in $(seq 1 ${N}); do echo "${tag} out $i"; echo "${tag} err $i" >&2; sleep 0.05; done; ${end}`;
const expected = (tag: string, stream: 'out' | 'err'): string =>
  Array.from({ length: N }, (_, i) => `${tag} ${stream} ${i + 1}\n`).join('');

async function killBoardSupervisor(): Promise<void> {
  board.client.close();
  const exited = new Promise((r) => board.supervisor.once('exit', r));
  board.supervisor.kill('SIGKILL');
  await exited;
}

function mirroredOut(logDir: string): string {
  try {
    return readFileSync(path.join(logDir, 'stdout.log'), 'utf8');
  } catch {
    return '';
  }
}

/** The run's records on the board's side, checked whole: each line once, events numbered without gaps. */
function checkRecords(logDir: string, tag: string): RunEvent[] {
  expect(readFileSync(path.join(logDir, 'stdout.log'), 'utf8')).toBe(expected(tag, 'out'));
  expect(readFileSync(path.join(logDir, 'stderr.log'), 'utf8')).toBe(expected(tag, 'err'));
  const events = readFileSync(path.join(logDir, 'events.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RunEvent);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
  // The host's own events, each once: its run started once, and ended once.
  expect(events.filter((e) => /keeper runs it/.test(e.message ?? ''))).toHaveLength(1);
  expect(events.filter((e) => e.type === 'started')).toHaveLength(1);
  expect(events.filter((e) => e.type === 'ended')).toHaveLength(2); // the host's, then this side's
  return events;
}

describe('a remote run and a restart on the board side', () => {
  it("goes on when the board's supervisor is killed mid-run: a new one mirrors every line once, in order", async () => {
    const { runId, logDir } = await board.launch(lines('a'));
    await waitUntil('some lines mirrored', () => mirroredOut(logDir).includes('a out 5\n'), 20_000);
    await killBoardSupervisor();
    await sleep(700); // the run goes on on its host meanwhile
    await board.startSupervisor(undefined, gatewayEnv);
    const rec = await board.collect(runId);
    expect(rec.result.status, JSON.stringify(rec.result.termination)).toBe('succeeded');
    expect(rec.result.metrics.host).toBe('keeper');
    // What an attached client got, and the files, have each line once.
    expect(rec.stdout).toBe(expected('a', 'out'));
    expect(rec.stderr).toBe(expected('a', 'err'));
    const events = checkRecords(logDir, 'a');
    expect(events.some((e) => /took the run over/.test(e.message ?? ''))).toBe(true);
    // Interleaved as the host recorded it.
    const hostRun = String(rec.result.metrics.hostRunId);
    expect(readFileSync(path.join(logDir, 'output.order'), 'utf8')).toBe(
      readFileSync(path.join(runLogDir(host.paths, hostRun), 'output.order'), 'utf8'),
    );
  });

  it('a run that ended on its host while no supervisor mirrored it ends with the status the host saw', async () => {
    const { runId, logDir } = await board.launch(lines('b', 'exit 3'));
    let hostRun = '';
    await waitUntil(
      'the host runs it',
      async () => {
        hostRun = String((await board.client.getRun(runId)).run.metrics.hostRunId ?? '');
        return hostRun !== 'undefined' && hostRun !== '';
      },
      20_000,
    );
    await killBoardSupervisor();
    const hostResult = (): RunResult | undefined => {
      try {
        return JSON.parse(
          readFileSync(path.join(runLogDir(host.paths, hostRun), 'result.json'), 'utf8'),
        ) as RunResult;
      } catch {
        return undefined;
      }
    };
    await waitUntil('the run ended on its host', () => hostResult()?.status === 'failed', 20_000);
    await sleep(300);
    await board.startSupervisor(undefined, gatewayEnv);
    const rec = await board.collect(runId);
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe(hostResult()!.termination!.reason);
    expect(rec.result.termination?.detail).toMatch(/3/);
    checkRecords(logDir, 'b');
  });

  it('a client that goes away mid-run (a board restart) and attaches again from where it was loses no line', async () => {
    const { runId, logDir } = await board.launch(lines('c'));
    let first = '';
    await new Promise<void>((resolve, reject) => {
      board.client
        .attach(runId, {
          onOutput: (s, d) => {
            if (s !== 'stdout') return;
            first += d;
            if (first.includes('c out 10\n')) resolve();
          },
        })
        .catch(reject);
    });
    const from = board.client.offsets(runId)!;
    board.client.close(); // the board process ends
    await sleep(500);
    // The board comes back (a new client) and its supervisor restarts too, before it attaches again.
    await killBoardSupervisor();
    await board.startSupervisor(undefined, gatewayEnv);
    const again = await SupervisorClient.connect(board.paths);
    try {
      const rest = await new Promise<string>((resolve, reject) => {
        let out = '';
        again
          .attach(
            runId,
            { onOutput: (s, d) => s === 'stdout' && (out += d), onEnd: () => resolve(out) },
            from,
          )
          .catch(reject);
      });
      // The first client's bytes up to its offset, then the rest: all lines, in order, once.
      const seen = Buffer.from(first).subarray(0, from.stdout).toString() + rest;
      expect(seen).toBe(expected('c', 'out'));
    } finally {
      again.close();
    }
    checkRecords(logDir, 'c');
  });
});
