// The core runner end to end: supervisor → jail → worker → command, with real processes and files.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunEvent, RunResult } from '@runboard/supervisor/protocol';
import { Harness } from '../helpers/harness.ts';
import { CardParseCache } from '../../host/src/core/card-parse-cache.ts';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

describe('a command run', () => {
  it('streams output, ends succeeded, and leaves a complete log dir', async () => {
    const rec = await h.run('echo out-line; echo err-line >&2; echo "$PWD"');
    expect(rec.result.status).toBe('succeeded');
    expect(rec.result.exitCode).toBe(0);
    expect(rec.result.termination).toEqual({ reason: 'finished', detail: 'command exited with code 0' });
    expect(rec.stdout).toBe(`out-line\n${h.workspace}\n`);
    expect(rec.stderr).toBe('err-line\n');

    const dir = rec.result.logDir;
    expect(dir).toBe(path.join(h.paths.logsDir, rec.result.runId.slice(0, 8), rec.result.runId));
    expect(readFileSync(path.join(dir, 'stdout.log'), 'utf8')).toBe(rec.stdout);
    expect(readFileSync(path.join(dir, 'stderr.log'), 'utf8')).toBe(rec.stderr);
    const onDisk = RunResult.parse(JSON.parse(readFileSync(path.join(dir, 'result.json'), 'utf8')));
    expect(onDisk.status).toBe('succeeded');
    expect(onDisk.durationMs).toBeGreaterThan(0);
    expect(onDisk.bytesWritten).toBeGreaterThan(0);
    expect(onDisk.bytesRead).toBeGreaterThan(0);
    expect(onDisk.lastHeartbeat === null || typeof onDisk.lastHeartbeat === 'string').toBe(true);
    expect(onDisk.sandbox).toEqual({ landlockAbi: expect.any(Number), enforced: true, fs: 'landlock' });
    expect(onDisk.containment).toBe('pid-namespace');

    const lines = readFileSync(path.join(dir, 'events.jsonl'), 'utf8').trim().split('\n');
    const events = lines.map((l) => RunEvent.parse(JSON.parse(l)));
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type);
    for (const t of ['launched', 'started', 'sandbox', 'ready', 'progress', 'finished', 'ended'])
      expect(types).toContain(t);
    expect(rec.events).toEqual(events); // what the client got is what is on disk
    expect(existsSync(path.join(h.paths.scratchDir, rec.result.runId))).toBe(false); // scratch removed
  });

  it('reports a non-zero exit as failed with the exit code', async () => {
    const rec = await h.run('echo about to fail; exit 3');
    expect(rec.result.status).toBe('failed');
    expect(rec.result.exitCode).toBe(3);
    expect(rec.result.termination?.reason).toBe('finished');
    expect(rec.result.summary).toBe('command exited with code 3');
  });

  it('runs an argv command without a shell and reports a missing program', async () => {
    const ok = await h.run(['printf', '%s|', 'a b', '$HOME']);
    expect(ok.stdout).toBe('a b|$HOME|');
    const missing = await h.run(['no-such-program-xyz']);
    expect(missing.result.status).toBe('failed');
    expect(missing.result.summary).toContain('command not found: no-such-program-xyz');
  });

  it('gives the run a trimmed environment, its own HOME/TMPDIR, and no inherited descriptors', async () => {
    const rec = await h.run('env | sort; echo FDS; ls /proc/self/fd');
    const env = Object.fromEntries(
      rec.stdout
        .split('FDS')[0]!
        .trim()
        .split('\n')
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    expect(env.HOME).toBe(path.join(h.paths.scratchDir, rec.result.runId, 'home'));
    expect(env.TMPDIR).toBe(path.join(h.paths.scratchDir, rec.result.runId, 'tmp'));
    expect(env.RUNBOARD_RUN_TOKEN).toBeUndefined(); // the endpoint token stays with the worker
    expect(env.RUNBOARD_HOME).toBeUndefined();
    expect(env.RUNBOARD_FS_CONFINEMENT).toBe('landlock'); // the jail says what confines the run
    expect(env.NODE_EXTRA_CA_CERTS).toBeUndefined();
    expect(Object.keys(env).sort()).toEqual(
      [
        'HOME',
        'LANG',
        'PATH',
        'PWD',
        'RUNBOARD_FS_CONFINEMENT',
        'RUNBOARD_RUN_ID',
        'RUNBOARD_WORKSPACE',
        'SHLVL',
        'TMPDIR',
        'XDG_CACHE_HOME',
        'XDG_CONFIG_HOME',
        'XDG_DATA_HOME',
        '_',
        'npm_config_cache',
        'npm_config_update_notifier',
      ].filter((k) => k in env),
    );
    expect(Object.keys(env)).not.toContain('USER');
    // stdin, stdout, stderr, and the fd `ls` opened for /proc/self/fd itself: nothing else
    const fds = rec.stdout.split('FDS')[1]!.trim().split('\n').map(Number);
    expect(fds.filter((fd) => fd > 2).length).toBeLessThanOrEqual(1);
  });
});

describe('the sandbox', () => {
  it('denies a write outside the workspace (read-only file system) and records a sandbox denial', async () => {
    const outside = path.join(h.root, 'outside.txt');
    const rec = await h.run(`echo inside > inside.txt && echo outside > ${outside}`);
    expect(existsSync(path.join(h.workspace, 'inside.txt'))).toBe(true);
    expect(existsSync(outside)).toBe(false);
    // The run's mount namespace is read-only outside its writable trees (Landlock's EACCES lies beneath).
    expect(rec.stderr).toMatch(/Read-only file system/);
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('sandbox-denial');
    const denial = rec.events.find((e) => e.type === 'denial');
    expect(denial?.data?.path).toBe(outside);
  });

  it("hides Runboard's own state from runs: keys, grants and other runs' logs cannot be read, the board's card cache cannot be written", async () => {
    const first = await h.run('echo my output');
    const key = path.join(h.paths.keysDir, 'grant.key');
    const otherLog = path.join(first.result.logDir, 'stdout.log');
    // the board's cache of card parses: an entry there would make a card read as its file does not say
    const cache = CardParseCache.fileFor(h.paths.root, h.workspace);
    const rec = await h.run(
      `cat ${key}; cat ${otherLog}; ls ${h.paths.keysDir} && echo listed; mkdir -p ${path.dirname(cache)} && echo '{"format":1,"entries":{}}' > ${cache} && echo cache-written; cat /etc/hostname > /dev/null && echo system-readable`,
    );
    // The state root is covered in the run's mount namespace: not even the names are there.
    expect(rec.stderr).toContain(`${key}: No such file or directory`);
    expect(rec.stderr).toContain(`${otherLog}: No such file or directory`);
    expect(rec.stdout).toBe('system-readable\n');
    expect(existsSync(cache)).toBe(false);
  });

  it('lets real tools work inside: a C compiler and npm', async () => {
    writeFileSync(
      path.join(h.workspace, 'hello.c'),
      '#include <stdio.h>\nint main(void){puts("compiled ok");return 0;}\n',
    );
    const rec = await h.run(
      'cc hello.c -o hello && ./hello && npm init -y >/dev/null && node -e "console.log(require(\'./package.json\').name)"',
    );
    expect(rec.stderr).toBe('');
    expect(rec.result.status).toBe('succeeded');
    expect(rec.stdout).toBe(`compiled ok\n${path.basename(h.workspace)}\n`);
  });

  it('refuses TCP connections to ports the flow does not allow', async () => {
    const server = net.createServer((s) => s.end('hello from server\n'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const script = `require('net').connect(${port},'127.0.0.1').on('data',d=>process.stdout.write(d)).on('error',e=>{console.log(e.code);})`;
    const denied = await h.run(['node', '-e', script]);
    expect(denied.stdout.trim()).toBe('EACCES');
    const allowed = await h.run(['node', '-e', script], { sandbox: { tcpPorts: [port] } });
    expect(allowed.stdout).toBe('hello from server\n');
    server.close();
  });

  it('a run cannot reach the supervisor socket (it could launch runs with broader grants)', async () => {
    const script = `require('net').connect(${JSON.stringify(h.paths.socket)}).on('error', (e) => console.log(e.code))`;
    const rec = await h.run(['node', '-e', script]);
    // The runtime dir is covered in the run's mount namespace: the socket is not there to connect to.
    // (The supervisor's peer check, for runs without namespaces: jail-attacks.integration.test.ts.)
    expect(rec.stdout).toBe('ENOENT\n');
    expect((await h.client.status()).pid).toBe(h.supervisor.pid); // the host's own client still works
  });
});
