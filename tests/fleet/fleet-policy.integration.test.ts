// A fleet host takes jobs from whoever can write to Redis. As such a writer (a real redis-server, real
// BullMQ), the test queues jobs a board would never send: an id that walks out of the host's card
// folder, and sandboxes wider than the host's own `fleet join` policy. The host must refuse them before
// anything is written or run, saying why; jobs that narrow its policy run, and what a job leaves unset
// gets the host's bound. Redis itself asks for a password (tests/fleet/redis.ts).
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_JOB_VERSION, queueName, redisOptions } from '../../supervisor/src/node/fleet/job.ts';
import { waitUntil, type Harness } from '../helpers/harness.ts';
import { startHost } from './hosts.ts';
import { RedisServer } from './redis.ts';

let redis: RedisServer;
let host: Harness;
let queue: Queue;
const ALLOWED_PORT = 5999;

let redisDir: string;
beforeAll(async () => {
  redisDir = mkdtempSync(path.join(os.tmpdir(), 'rb-fleet-policy-'));
  redis = await RedisServer.start(redisDir);
  host = await startHost(redis.url, 'guard', ['shell'], 2, ['.'], {}, undefined, {
    tcpPorts: [ALLOWED_PORT],
    tmpSize: '64m',
  });
  queue = new Queue(queueName('shell'), { connection: redisOptions(redis.url) });
}, 60_000);

afterAll(async () => {
  await queue?.close();
  await host?.stop().catch(() => undefined);
  await redis?.stop();
  rmSync(redisDir, { recursive: true, force: true });
});

const newRunId = (): string => `20260101-000000-${randomBytes(3).toString('hex')}`;

/** A job as a Redis writer puts it on the flow's queue; its end state and why (failed) or result. */
async function submit(
  sandbox: Record<string, unknown> | undefined,
  opts: { jobId?: string; command?: string; v?: unknown } = {},
): Promise<{ state: string; reason: string; result: { status?: string } | undefined }> {
  const runId = newRunId();
  const jobId = opts.jobId ?? runId;
  await queue.add(
    'run',
    {
      v: 'v' in opts ? opts.v : FLEET_JOB_VERSION,
      runId,
      flow: { name: 'shell', runner: 'command', ...(sandbox ? { sandbox } : {}) },
      workspace: '.',
      command: opts.command ?? 'true',
      card: { title: 'from a Redis writer', text: '---\ntitle: from a Redis writer\n---\nhi\n' },
      submittedAt: new Date().toISOString(),
    },
    { jobId, attempts: 1 },
  );
  let state = '';
  await waitUntil(
    `job ${jobId} to end`,
    async () => {
      state = (await (await queue.getJob(jobId))?.getState()) ?? 'gone';
      return state === 'completed' || state === 'failed';
    },
    60_000,
  );
  const job = (await queue.getJob(jobId))!;
  return {
    state,
    reason: job.failedReason ?? '',
    result: (job.returnvalue as { result?: { status?: string } } | null)?.result,
  };
}

describe('fleet jobs from a Redis writer (attacks)', () => {
  it('Redis refuses a client without the password', async () => {
    // RESP by hand: a client that sends no AUTH
    const reply = await new Promise<string>((resolve, reject) => {
      const c = net.connect(redis.port, '127.0.0.1', () => c.write('PING\r\n'));
      c.once('data', (d) => {
        resolve(d.toString());
        c.destroy();
      });
      c.once('error', reject);
    });
    expect(reply).toMatch(/^-NOAUTH/);
  });

  it('a job id that walks out of the card folder is refused: nothing is written or deleted there', async () => {
    // The host writes a job's card to <cards>/<id>.md and deletes it after the run.
    const victim = path.join(host.root, 'victim.md');
    writeFileSync(victim, 'precious\n');
    for (const jobId of ['../victim', `${newRunId()}/../../victim`]) {
      const r = await submit(undefined, { jobId });
      expect(r.state, r.reason).toBe('failed');
      expect(r.reason).toMatch(/guard refused the job: its id .* is not the run id it carries/);
    }
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    // an id that is a run id, but not the one the job carries
    const r = await submit(undefined, { jobId: newRunId() });
    expect(r.state).toBe('failed');
    expect(r.reason).toMatch(/not the run id it carries/);
  });

  it.each([
    ['a TCP port the host does not allow', { tcpPorts: [22] }, /TCP port 22.*--tcp-port 22/],
    ['UDP', { udp: true }, /UDP sockets.*--udp/],
    ['abstract unix sockets', { allowAbstractUnix: true }, /abstract unix sockets.*--abstract-unix/],
    ['a larger /tmp', { tmpSize: '100%' }, /a \/tmp of 100% \(at most 64m here\).*--tmp-size/],
    ['more processes', { maxProcesses: 100_000 }, /100000 processes.*--max-processes/],
    ['to run unsandboxed', { allowUnsandboxed: true }, /unsandboxed.*--allow-unsandboxed/],
  ])('a job asking for %s is refused before it runs', async (_, sandbox, why) => {
    const marker = path.join(host.workspace, `ran-${randomBytes(3).toString('hex')}`);
    const r = await submit(sandbox, { command: `touch ${marker}` });
    expect(r.state, JSON.stringify(r.result)).toBe('failed');
    expect(r.reason).toMatch(why);
    expect(existsSync(marker)).toBe(false);
  });

  it('a job of another fleet version (a member of a mixed fleet) is refused, saying which to upgrade; nothing runs', async () => {
    // as an older board's supervisor submits it: version 1, whose members judged leases by BullMQ's
    // stalled check (decision 103); and one from a newer release than this host
    const older = path.join(host.workspace, `older-${randomBytes(3).toString('hex')}`);
    const r = await submit(undefined, { command: `touch ${older}`, v: 1 });
    expect(r.state).toBe('failed');
    expect(r.reason).toBe(
      "guard refused the job: it is a fleet job of version 1 and guard runs version 2; every supervisor of a fleet must run the same Runboard release (an older one judges jobs' leases otherwise and can fail healthy runs): upgrade the board's supervisor that submitted it",
    );
    const newer = path.join(host.workspace, `newer-${randomBytes(3).toString('hex')}`);
    const n = await submit(undefined, { command: `touch ${newer}`, v: FLEET_JOB_VERSION + 1 });
    expect(n.reason).toMatch(/fleet job of version 3 and guard runs version 2; .*: upgrade guard$/);
    for (const f of [older, newer]) expect(existsSync(f)).toBe(false);
  });

  it('a job asking to write outside what the host allows is refused', async () => {
    const marker = path.join(host.root, 'written-by-job');
    const r = await submit({ writable: [host.root] }, { command: `touch ${marker}` });
    expect(r.state).toBe('failed');
    expect(r.reason).toMatch(/to write .*--writable/);
    expect(existsSync(marker)).toBe(false);
  });

  it("a job that narrows the host's policy runs; what it leaves unset gets the host's bound", async () => {
    const narrow = await submit(
      { tcpPorts: [ALLOWED_PORT], tmpSize: '16m' },
      { command: 'df -k /tmp | tail -1 > tmp16.txt' },
    );
    expect(narrow.state, narrow.reason).toBe('completed');
    expect(narrow.result?.status).toBe('succeeded');
    const unset = await submit(undefined, { command: 'df -k /tmp | tail -1 > tmp-unset.txt' });
    expect(unset.state, unset.reason).toBe('completed');
    const kb = (f: string): number =>
      Number(readFileSync(path.join(host.workspace, f), 'utf8').trim().split(/\s+/)[1]);
    expect(kb('tmp16.txt')).toBe(16 * 1024);
    expect(kb('tmp-unset.txt')).toBe(64 * 1024); // the host's --tmp-size, not a local run's 25%
  });
});
