// Bad input gets a clear error and harms nothing: malformed frames, unknown methods, invalid params,
// oversize messages, clients that vanish mid-request, bad grants, a full disk, no Landlock.
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonRpcCodes, type RunResult } from '@runboard/supervisor/protocol';
import { Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

/**
 * A supervisor whose log dir lives on a 1 MiB tmpfs, mounted in a private mount namespace of its own;
 * `prepare` runs there first (e.g. to fill the disk).
 */
function supervisorWithSmallLogDisk(prepare = 'true'): Promise<Harness> {
  return Harness.start({
    wrap: (argv) => [
      'unshare',
      '-Urm',
      '--',
      'sh',
      '-c',
      `mkdir -p "$RUNBOARD_HOME/logs" && mount -t tmpfs -o size=1m tmpfs "$RUNBOARD_HOME/logs" && ${prepare} && exec "$@"`,
      'sh',
      ...argv,
    ],
  });
}

/** A raw connection: send bytes, read JSON-RPC frames back. */
class Raw {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  closed = false;
  private constructor(readonly sock: net.Socket) {
    sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (const w of this.waiters.splice(0)) w();
    });
    sock.on('close', () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static open(p: string): Promise<Raw> {
    return new Promise((resolve, reject) => {
      const s = net.connect(p, () => resolve(new Raw(s)));
      s.on('error', reject);
    });
  }
  send(body: string | Buffer, length?: number): void {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    this.sock.write(Buffer.concat([Buffer.from(`Content-Length: ${length ?? b.length}\r\n\r\n`), b]));
  }
  request(id: number, method: string, params: unknown): void {
    this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  }
  async next(
    timeoutMs = 5000,
  ): Promise<{ id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const len = Number(/Content-Length: (\d+)/i.exec(this.buf.subarray(0, end).toString())![1]);
        if (this.buf.length >= end + 4 + len) {
          const body = this.buf.subarray(end + 4, end + 4 + len).toString();
          this.buf = this.buf.subarray(end + 4 + len);
          return JSON.parse(body);
        }
      }
      if (this.closed) throw new Error('connection closed');
      if (Date.now() > deadline) throw new Error('no response');
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
  }
}

async function stillServing(): Promise<void> {
  const s = await h.client.status();
  expect(s.pid).toBe(h.supervisor.pid);
}

describe('malformed protocol input', () => {
  it('invalid JSON gets a parse error and the connection keeps working', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    const err = await raw.next();
    expect(err).toMatchObject({ id: null, error: { code: JsonRpcCodes.ParseError } });
    expect(err.error!.message).toMatch(/invalid JSON/);
    raw.request(2, 'supervisor/status', {});
    expect((await raw.next()).result).toMatchObject({ pid: h.supervisor.pid });
    raw.sock.destroy();
  });

  it('JSON that is not JSON-RPC gets InvalidRequest', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.send('[1,2,3]');
    expect(await raw.next()).toMatchObject({ id: null, error: { code: JsonRpcCodes.InvalidRequest } });
    raw.send('{"id": 7, "method": "supervisor/status"}');
    expect(await raw.next()).toMatchObject({ id: 7, error: { code: JsonRpcCodes.InvalidRequest } });
    raw.sock.destroy();
  });

  it('a broken frame header gets a parse error, then the connection is closed', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.sock.write('Content-Length: lots\r\n\r\n{}');
    const err = await raw.next();
    expect(err.error).toMatchObject({ code: JsonRpcCodes.ParseError });
    expect(err.error!.message).toMatch(/Content-Length/);
    await new Promise((r) => raw.sock.once('close', r));
    await stillServing();
  });

  it('an unknown method gets MethodNotFound', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.request(1, 'run/explode', {});
    expect(await raw.next()).toMatchObject({ id: 1, error: { code: JsonRpcCodes.MethodNotFound } });
    raw.sock.destroy();
  });

  it('invalid params get InvalidParams naming the field', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.request(1, 'run/cancel', { runId: 'not-a-run' });
    const r = await raw.next();
    expect(r).toMatchObject({ id: 1, error: { code: JsonRpcCodes.InvalidParams } });
    expect(r.error!.message).toMatch(/runId: not a run id/);
    raw.request(2, 'run/launch', { card: { path: 'relative.md' }, flow: { name: 'x', runner: 'rocket' } });
    const r2 = await raw.next();
    expect(r2.error!.code).toBe(JsonRpcCodes.InvalidParams);
    expect(r2.error!.message).toMatch(/card\.path: must be an absolute path/);
    expect(r2.error!.message).toMatch(/flow\.runner/);
    raw.sock.destroy();
  });

  it('an oversize message is refused and skipped without buffering it; the connection goes on', async () => {
    const raw = await Raw.open(h.paths.socket);
    const size = 20 * 1024 * 1024;
    raw.sock.write(`Content-Length: ${size}\r\n\r\n`);
    const err = await raw.next();
    expect(err).toMatchObject({ id: null, error: { code: 1030 } });
    expect(err.error!.message).toMatch(/exceeds the limit/);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let i = 0; i < 20; i++) raw.sock.write(chunk);
    raw.request(9, 'supervisor/status', {});
    expect(await raw.next(10_000)).toMatchObject({ id: 9, result: { pid: h.supervisor.pid } });
    raw.sock.destroy();
  });

  it('a client that disconnects mid-request does not disturb the supervisor or the run it launched', async () => {
    const raw = await Raw.open(h.paths.socket);
    raw.request(1, 'run/launch', {
      card: { path: path.join(h.root, 'c.md') },
      flow: { name: 'shell', runner: 'command' },
      workspace: h.workspace,
      grant: h.grant,
      command: 'echo launched-by-a-ghost',
    });
    raw.sock.destroy();
    await stillServing();
    const ghost = async (): Promise<RunResult | undefined> =>
      (await h.client.list({ limit: 5 })).runs.find((r) => r.card.path === path.join(h.root, 'c.md'));
    let seen: RunResult | undefined;
    await waitUntil('the launched run to end', async () => {
      seen = await ghost(); // one look per check: the run may appear and end between two looks
      return seen !== undefined && seen.status !== 'running';
    });
    expect(seen?.status).toBe('succeeded');
  });
});

describe('workspace grants', () => {
  const logDirCount = (): number => {
    let n = 0;
    try {
      for (const d of readdirSync(h.paths.logsDir)) n += readdirSync(path.join(h.paths.logsDir, d)).length;
    } catch {
      // none yet
    }
    return n;
  };

  async function refused(
    extra: { workspace?: string; grant?: unknown; paths?: string[] },
    code: number,
    reason: string,
    message: RegExp,
  ): Promise<void> {
    const before = logDirCount();
    const err = await h.launch('echo should-not-run > ran.txt', {}, extra).then(
      () => null,
      (e: unknown) => e as { code: number; message: string; data?: { reason: string } },
    );
    expect(err).not.toBeNull();
    expect(err!.code).toBe(code);
    expect(err!.data?.reason).toBe(reason);
    expect(err!.message).toMatch(message);
    expect(logDirCount()).toBe(before); // nothing was spawned, not even a log dir
  }

  it('refuses a forged grant (signed with another key)', async () => {
    const g = { ...h.grant, id: 'ab'.repeat(16) };
    const payload = JSON.stringify([g.v, g.id, g.path, g.dev, g.ino, g.createdAt]);
    g.sig = createHmac('sha256', Buffer.alloc(32, 7)).update(payload).digest('hex');
    await refused({ grant: g }, 1001, 'forged', /grant refused \(forged\)/);
  });

  it('refuses a tampered grant (a real grant pointed at another folder)', async () => {
    const other = path.join(h.root, 'other');
    mkdirSync(other, { recursive: true });
    await refused(
      { grant: { ...h.grant, path: other }, workspace: other },
      1002,
      'tampered',
      /changed after it was signed/,
    );
  });

  it('refuses a stale grant (folder replaced since it was granted)', async () => {
    const h2 = await Harness.start();
    try {
      renameSync(h2.workspace, h2.workspace + '.old');
      mkdirSync(h2.workspace);
      const err = await h2.launch('true').catch((e: { code: number; message: string }) => e);
      expect(err).toMatchObject({ code: 1003 });
      expect((err as { message: string }).message).toMatch(/stale.*replaced since it was granted/);
      rmSync(h2.workspace + '.old', { recursive: true });
    } finally {
      await h2.stop();
    }
  });

  it('refuses a workspace that escapes the grant with ..', async () => {
    await refused({ workspace: path.join(h.workspace, '..') }, 1004, 'outside', /outside the granted folder/);
  });

  it('refuses a workspace that escapes the grant through a symlink', async () => {
    const link = path.join(h.workspace, 'escape');
    if (!existsSync(link)) symlinkSync(h.root, link);
    await refused({ workspace: link }, 1004, 'outside', /resolves to .* outside the granted folder/);
  });

  it('refuses any other path of the run that escapes the grant', async () => {
    mkdirSync(path.join(h.workspace, 'inputs'), { recursive: true });
    await refused(
      { paths: [path.join(h.workspace, 'inputs'), '/etc/passwd'] },
      1004,
      'outside',
      /path \/etc\/passwd resolves to \/etc\/passwd, outside/,
    );
  });

  it('refuses something that is not a grant', async () => {
    const err = await h
      .launch('true', {}, { grant: { path: h.workspace } })
      .catch((e: { code: number; message: string }) => e);
    expect(err).toMatchObject({ code: JsonRpcCodes.InvalidParams });
    expect((err as { message: string }).message).toMatch(/grant/);
  });

  it('accepts a subfolder of the granted folder', async () => {
    mkdirSync(path.join(h.workspace, 'sub'), { recursive: true });
    const { runId } = await h.launch('pwd', {}, { workspace: path.join(h.workspace, 'sub') });
    const rec = await h.collect(runId);
    expect(rec.stdout).toBe(path.join(h.workspace, 'sub') + '\n');
  });
});

describe('the environment', () => {
  it('without Landlock a run refuses to start unless the flow allows unsandboxed runs', async () => {
    const h2 = await Harness.start({ env: { RUNBOARD_LANDLOCK: 'off' } });
    try {
      const refusedRun = await h2.run('echo should-not-run');
      expect(refusedRun.result.status).toBe('failed');
      expect(refusedRun.result.termination?.reason).toBe('sandbox-failed');
      expect(refusedRun.result.termination?.detail).toMatch(/cannot sandbox runs.*allowUnsandboxed: true/);
      expect(refusedRun.stdout).toBe('');
      const allowed = await h2.run(`echo unconfined > ${path.join(h2.root, 'outside.txt')} && echo ran`, {
        sandbox: { allowUnsandboxed: true },
      });
      expect(allowed.result.status).toBe('succeeded');
      expect(allowed.result.sandbox).toEqual({ landlockAbi: 0, enforced: false, fs: 'none' });
      expect(allowed.events.some((e) => e.type === 'sandbox' && /unsandboxed/.test(e.message ?? ''))).toBe(
        true,
      );
    } finally {
      await h2.stop();
    }
  });

  it('without the worker start-up snapshot, workers start from the plain bundle', async () => {
    const h2 = await Harness.start({ env: { RUNBOARD_WORKER_SNAPSHOT: 'off' } });
    try {
      const rec = await h2.run('echo from the bundle');
      expect(rec.result.status).toBe('succeeded');
      expect(rec.stdout).toBe('from the bundle\n');
    } finally {
      await h2.stop();
    }
  });

  it('without user namespaces the subreaper fallback still leaves no process behind', async () => {
    const h2 = await Harness.start({ env: { RUNBOARD_NAMESPACES: 'off' } });
    try {
      const marker = `rb-subreaper-${process.pid}-${Date.now()}`;
      const rec = await h2.run(`(setsid sh -c 'trap "" TERM; exec -a ${marker} sleep 300' &); echo ok`);
      expect(rec.result.containment).toBe('subreaper');
      expect(rec.result.status).toBe('succeeded');
      expect(processesMentioning(marker)).toEqual([]);
    } finally {
      await h2.stop();
    }
  });

  it('a full disk for the logs fails the run with the reason, keeps result.json readable, and serving goes on', async () => {
    const h2 = await supervisorWithSmallLogDisk();
    try {
      const rec = await h2.run([
        'node',
        '-e',
        "for (let i = 0; i < 40000; i++) console.log('filling the disk, line ' + i)",
      ]);
      expect(rec.result.status).toBe('failed');
      expect(rec.result.termination?.reason).toBe('log-write-failed');
      expect(rec.result.termination?.detail).toMatch(/ENOSPC.*disk holding the run logs is full/);
      // What was written before the disk filled stays readable, through the supervisor's own view.
      const viaProc = (p: string): string => `/proc/${h2.supervisor.pid}/root${p}`;
      const result = JSON.parse(readFileSync(viaProc(path.join(rec.result.logDir, 'result.json')), 'utf8'));
      expect(result.status).toBe('failed');
      expect(result.termination.reason).toBe('log-write-failed');
      expect(rec.stdout.startsWith('filling the disk, line 0\n')).toBe(true);
      const status = await h2.client.status();
      expect(status.activeRuns).toBe(0);
      // A launch on the still-full disk is refused with the reason (or fails cleanly), never a crash.
      const next = await h2.launch('echo hi').then(
        async ({ runId }) => (await h2.collect(runId)).result.termination?.reason,
        (e: { code: number; message: string }) => `${e.code}: ${e.message}`,
      );
      expect(String(next)).toMatch(/log-write-failed|1060: .*ENOSPC|finished/);
      expect((await h2.client.status()).pid).toBe(status.pid);
    } finally {
      await h2.stop();
    }
  });

  it('a launch refused for a full disk leaves no record of a run that never started', async () => {
    // 8 KiB free on the log disk: the start of a run's result.json fits, the whole of it does not.
    const h2 = await supervisorWithSmallLogDisk('head -c 1040384 /dev/zero > "$RUNBOARD_HOME/logs/.filler"');
    try {
      const err = await h2.launch('echo hi').then(
        () => null,
        (e: { code: number; message: string }) => e,
      );
      expect(err?.code).toBe(1060);
      expect(err?.message).toMatch(/ENOSPC.*the disk is full; free space and launch again/);
      // Nothing claims to be running: not `runs`, not a result.json in the refused run's folder.
      const { runs } = await h2.client.list({});
      expect(runs.filter((r) => r.status === 'running')).toEqual([]);
      const logDir = /log dir (\S+):/.exec(err!.message)![1]!;
      expect(existsSync(`/proc/${h2.supervisor.pid}/root${logDir}`)).toBe(false);
      expect((await h2.client.status()).activeRuns).toBe(0);
    } finally {
      await h2.stop();
    }
  });
});
