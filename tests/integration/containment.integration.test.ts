/**
 * Attacks on containment, performed as a run (or a user's mistake) would. Grants that cover Runboard's
 * own state, writable trees outside every grant, a run racing the supervisor socket's peer check.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import type { Grant } from '@runboard/supervisor/protocol';
import { Harness } from '../helpers/harness.ts';

/**
 * From inside a run: connect to the supervisor socket from a child that exits at once after handing the
 * connection to its parent, which then asks for the supervisor's status. Prints how many were answered.
 */
const RACE = `
import json, os, socket, sys
path, tries = sys.argv[1], int(sys.argv[2])
accepted = 0
for i in range(tries):
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(path)
            socket.send_fds(b, [b"x"], [s.fileno()])
        except socket.timeout:
            b.send(b"t")
        except OSError:  # a namespaced run: the runtime dir is covered, the socket is not there
            b.send(b"-")
        os._exit(0)
    os.waitpid(pid, 0)
    # every step is bounded: a stall says where it was instead of running into the test's timeout
    a.settimeout(10)
    try:
        msg, fds, _, _ = socket.recv_fds(a, 1, 1)
    except socket.timeout:
        sys.exit("try %d: the child sent nothing in 10 s" % i)
    if msg == b"t":
        sys.exit("try %d: connect() to the supervisor socket took over 10 s" % i)
    if not fds:
        continue
    s = socket.socket(fileno=fds[0])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "supervisor/status", "params": {}}).encode()
    try:
        s.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
    except OSError:
        pass
    s.settimeout(10)
    data = b""
    try:
        while b'"result"' not in data and b'"error"' not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        sys.exit("try %d: the supervisor neither answered nor closed in 10 s (got %r)" % (i, data[:200]))
    except OSError:
        pass
    if b'"result"' in data:
        accepted += 1
    for x in (s, a, b):
        x.close()
print("accepted", accepted, "of", tries)
`;

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
}, 30_000);
afterAll(async () => {
  await h?.stop();
});

/** A grant signed with the real key, as one issued before the state-root check existed would be. */
function legacyGrant(folder: string): Grant {
  const key = readFileSync(path.join(h.paths.keysDir, 'grant.key'));
  const st = statSync(folder, { bigint: true });
  const g = {
    v: 1 as const,
    id: 'cd'.repeat(16),
    path: folder,
    dev: st.dev.toString(),
    ino: st.ino.toString(),
    createdAt: new Date().toISOString(),
  };
  const payload = JSON.stringify([g.v, g.id, g.path, g.dev, g.ino, g.createdAt]);
  return { ...g, sig: createHmac('sha256', key).update(payload).digest('hex') };
}

type RpcError = { code: number; message: string; data?: { reason?: string } };
const failure = (p: Promise<unknown>): Promise<RpcError | null> =>
  p.then(
    () => null,
    (e: unknown) => e as RpcError,
  );

describe('a grant that covers the state root', () => {
  it('is refused when the user grants it: /, a parent of the state root, the state root, a folder inside it', () => {
    for (const folder of ['/', h.root, h.paths.root, h.paths.keysDir]) {
      expect(() => createGrant(h.paths, folder), folder).toThrow(/Runboard's (state root|runtime dir)/);
    }
  });

  it('is refused at launch, before a run in it could read the keys', async () => {
    const keyFile = path.join(h.paths.keysDir, 'grant.key');
    const err = await failure(
      h.launch(
        `cat ${keyFile} > ${path.join(h.workspace, 'stolen')}`,
        {},
        {
          grant: legacyGrant(h.root),
          workspace: h.root,
        },
      ),
    );
    expect(err).toMatchObject({ code: 1006, data: { reason: 'state-root' } });
    expect(err!.message).toMatch(/contains Runboard's state root/);
    expect(existsSync(path.join(h.workspace, 'stolen'))).toBe(false);
  });
});

describe("the flow's sandbox.writable", () => {
  it('is refused when no grant covers it, and nothing is written there', async () => {
    const outside = path.join(h.root, 'outside');
    mkdirSync(outside, { recursive: true });
    const err = await failure(
      h.launch(`echo pwned > ${path.join(outside, 'x')}`, { sandbox: { writable: [outside] } }),
    );
    expect(err).toMatchObject({ code: 1004, data: { reason: 'outside' } });
    expect(err!.message).toMatch(/sandbox\.writable path .* is covered by no grant/);
    expect(existsSync(path.join(outside, 'x'))).toBe(false);
  });

  it('is accepted inside the workspace grant or inside another grant the user made', async () => {
    const cache = path.join(h.root, 'shared-cache');
    mkdirSync(cache, { recursive: true });
    createGrant(h.paths, cache);
    const inWs = path.join(h.workspace, 'out');
    mkdirSync(inWs, { recursive: true });
    const { runId } = await h.launch(`echo a > ${cache}/a && echo b > ${inWs}/b`, {
      sandbox: { writable: [cache, inWs] },
    });
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('succeeded');
    expect(readFileSync(path.join(cache, 'a'), 'utf8')).toBe('a\n');
  });
});

describe('the supervisor socket', () => {
  for (const mode of ['its own user namespace', 'no namespaces (subreaper)'] as const) {
    it(`refuses a run (${mode}) that connects from a child which exits and hands the socket on`, async () => {
      const hh =
        mode === 'its own user namespace' ? h : await Harness.start({ env: { RUNBOARD_NAMESPACES: 'off' } });
      try {
        const rec = await hh.run(['/usr/bin/python3', '-c', RACE, hh.paths.socket, '20']);
        expect(rec.stderr).toBe('');
        expect(rec.stdout).toBe('accepted 0 of 20\n');
        // The host's own connection still works.
        await expect(hh.client.status()).resolves.toMatchObject({ pid: hh.supervisor.pid });
      } finally {
        if (hh !== h) await hh.stop();
      }
    });
  }
});

/**
 * A plain command runs under the jail's init (no worker): that init reports how the command ended, so
 * the run attacks it: the init's fds (the report pipe to the jail), ptrace, and signals that would
 * end it as a success.
 */
const FORGE = `
import ctypes, json, os, signal
forged = json.dumps({"code": 0, "signal": 0, "execErrno": 0, "ms": 1}).encode()
line = json.dumps({"event": "exit", "code": 0, "signal": 0, "command": json.loads(forged)}).encode() + b"\\n"
for name in ["/proc/1/fd/%d" % n for n in range(64)] + ["/proc/1/mem"]:
    try:
        fd = os.open(name, os.O_WRONLY)
        os.write(fd, line + forged)
        print("opened", name)
    except OSError as e:
        if e.errno != 2:
            print("refused", name, e.strerror)
for fd in range(3, 64):  # whatever this process has beyond stdio
    try:
        os.write(fd, line + forged)
        print("wrote to fd", fd)
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, 1, None, None)  # PTRACE_ATTACH to the init
print("ptrace:", "attached" if r == 0 else os.strerror(ctypes.get_errno()))
for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGUSR1):
    try:
        os.kill(1, sig)
    except OSError as e:
        print("kill", sig.name, e.strerror)
print("still here")
`;

describe("a plain command's init", () => {
  it('cannot be made to report a failed command as a success: no fd, no ptrace, no signal reaches it', async () => {
    const rec = await h.run(['/bin/sh', '-c', `python3 -c '${FORGE.replace(/'/g, `'"'"'`)}'; exit 3`]);
    expect(rec.stdout).toContain('refused /proc/1/mem Permission denied');
    expect(rec.stdout).toMatch(/refused \/proc\/1\/fd\/3 Permission denied/); // the init's report pipe
    expect(rec.stdout).not.toContain('opened');
    expect(rec.stdout).not.toContain('wrote to fd');
    expect(rec.stdout).toMatch(/ptrace: Operation not permitted/);
    expect(rec.stdout).toContain('still here');
    expect(rec.result.status).toBe('failed');
    expect(rec.result.exitCode).toBe(3);
    expect(rec.result.termination).toEqual({ reason: 'finished', detail: 'command exited with code 3' });
  });
});
