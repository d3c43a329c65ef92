// What a run can reach over the network, attacked from inside real runs (supervisor → jail → worker →
// command). Landlock's TCP rules cover connect() and bind() of plain TCP only; the jail's seccomp filter
// closes the rest (MPTCP, TCP Fast Open, listen() without bind(), UDP and other socket kinds). Each attack
// is a subcommand of tests/fixtures/net-attacks.py; the listeners are outside the run, in this process.
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { readFileSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jailPath } from '@runboard/native';
import type { FlowSpec } from '@runboard/supervisor/protocol';
import { Harness, REPO, type RunRecord, waitUntil } from '../helpers/harness.ts';

const ATTACKS = path.join(REPO, 'tests', 'fixtures', 'net-attacks.py');
// Debian's python3: a run has its own HOME, so version-manager shims on the test's PATH do not work in it.
const PYTHON = '/usr/bin/python3';
const execFileAsync = promisify(execFile);

function mptcpEnabled(): boolean {
  try {
    return readFileSync('/proc/sys/net/mptcp/enabled', 'utf8').trim() === '1';
  } catch {
    return false;
  }
}
const MPTCP = mptcpEnabled();

/** A TCP listener outside the run that records every connection and every byte it is sent. */
interface Sink {
  port: number;
  connections: number;
  data: string;
  close(): void;
}
async function tcpSink(host: string): Promise<Sink> {
  const server = net.createServer((s) => {
    sink.connections++;
    s.on('data', (d) => (sink.data += d.toString()));
    s.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  const sink: Sink = {
    port: (server.address() as AddressInfo).port,
    connections: 0,
    data: '',
    close: () => server.close(),
  };
  return sink;
}

async function canListen(host: string): Promise<boolean> {
  try {
    (await tcpSink(host)).close();
    return true;
  } catch {
    return false;
  }
}
const IPV6 = await canListen('::1');

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

function attack(
  name: string,
  args: (string | number)[] = [],
  flow: Partial<FlowSpec> = {},
): Promise<RunRecord> {
  return h.run([PYTHON, ATTACKS, name, ...args.map(String)], flow);
}

/** The attack `name` against a listener outside on a port the flow does not allow: refused, nothing arrives. */
async function expectNothingReaches(name: string, host: string): Promise<void> {
  const sink = await tcpSink(host);
  const rec = await attack(name, [host, sink.port]);
  sink.close();
  expect(rec.stdout.trim(), host).toBe('EACCES');
  expect(sink.connections, host).toBe(0);
  expect(sink.data, host).toBe('');
}

describe('TCP beyond Landlock', () => {
  const hosts = ['127.0.0.1', ...(IPV6 ? ['::1'] : [])];

  it.skipIf(!MPTCP)(
    'refuses MPTCP sockets: no connection to a port the flow does not allow (v4, v6)',
    async () => {
      for (const host of hosts) await expectNothingReaches('mptcp-connect', host);
    },
  );

  it.skipIf(!MPTCP)('refuses MPTCP sockets: no listening port (v4, v6)', async () => {
    for (const host of hosts) {
      const rec = await attack('mptcp-bind', [host]);
      expect(rec.stdout.trim(), host).toBe('EACCES');
    }
  });

  it('refuses TCP Fast Open: sendto(MSG_FASTOPEN) delivers nothing to a port the flow does not allow', async () => {
    for (const host of hosts) await expectNothingReaches('tfo-sendto', host);
    expect((await attack('tfo-connect-option')).stdout.trim()).toBe('EACCES');
  });

  it('refuses listen() without bind(): no port is opened to connections from outside', async () => {
    for (const host of hosts) {
      const { runId } = await h.launch([PYTHON, ATTACKS, 'listen-unbound', host, '20']);
      let stdout = '';
      let reached = '';
      const ended = new Promise<void>((resolve, reject) => {
        h.client
          .attach(runId, {
            onEvent: () => {},
            onOutput: (stream, d) => {
              if (stream !== 'stdout') return;
              stdout += d;
              const port = /listening on (\d+)/.exec(stdout)?.[1];
              if (port && !reached) {
                // The attacker's peer outside: connect to the port the run opened.
                reached = 'connecting';
                const c = net.connect(Number(port), host === '::1' ? '::1' : '127.0.0.1', () => {
                  reached = 'connected';
                  c.end('hello-from-outside');
                });
                c.on('error', (e) => (reached = e.message));
              }
            },
            onEnd: () => resolve(),
          })
          .catch(reject);
      });
      await ended;
      expect(stdout.trim(), host).toBe('EACCES');
      expect(reached, host).toBe('');
    }
  });

  it('still connects to a port the flow allows, on v4 and v6', async () => {
    for (const host of hosts) {
      const sink = await tcpSink(host);
      const script = `const s=require('net').connect(${sink.port},'${host}',()=>s.end('allowed-data'));s.on('close',()=>console.log('done')).on('error',e=>console.log(e.code))`;
      const rec = await h.run(['node', '-e', script], { sandbox: { tcpPorts: [sink.port] } });
      expect(rec.stdout, host).toBe('done\n');
      await waitUntil('the data arrives', () => sink.data === 'allowed-data');
      sink.close();
    }
  });
});

describe('UDP and other socket kinds', () => {
  async function udpSink(): Promise<{ port: number; got: string[]; close(): void }> {
    const s = dgram.createSocket('udp4');
    const got: string[] = [];
    s.on('message', (m) => got.push(m.toString()));
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
    return { port: s.address().port, got, close: () => s.close() };
  }

  it('refuses UDP by default: no datagram leaves the run', async () => {
    const sink = await udpSink();
    const rec = await attack('udp-send', ['127.0.0.1', sink.port]);
    // What arrives on loopback is queued before sendto() returns, so the run's end is late enough.
    expect(rec.stdout.trim()).toBe('EACCES');
    expect(sink.got).toEqual([]);
    sink.close();
  });

  it('allows UDP for a flow with sandbox.udp', async () => {
    const sink = await udpSink();
    const rec = await attack('udp-send', ['127.0.0.1', sink.port], { sandbox: { udp: true } });
    expect(rec.stdout.trim()).toBe('ok sent');
    await waitUntil('the datagram arrives', () => sink.got.length > 0);
    expect(sink.got).toEqual(['udp-secret']);
    sink.close();
  });

  it('refuses raw, packet and SCTP sockets', async () => {
    for (const kind of ['raw-socket', 'packet-socket', 'sctp-socket'])
      expect((await attack(kind)).stdout.trim(), kind).toBe('EACCES');
  });
});

describe('foreign syscall ABIs', () => {
  // The filter checks x86_64 syscall numbers; i386's (int 0x80, where socket() is 359 and socketcall()
  // hides its arguments in memory) and x32's would pass it unchecked, so their use kills the process
  // (SIGSYS). A kernel without ia32 emulation answers int 0x80 with SIGSEGV before the filter: the
  // socket is not made either. What matters, on any kernel: no datagram leaves the run.
  const source = `#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char** argv) {
  long r;
  if (argv[1][0] == 'i') __asm__ volatile("int $0x80" : "=a"(r) : "a"(359), "b"(2), "c"(2), "d"(0) : "memory");
  else r = syscall(0x40000000 | SYS_socket, 2, 2, 0);
  printf("socket %ld\\n", r);
  fflush(stdout);
  if (r < 0) return 3;
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET;
  to.sin_port = htons(atoi(argv[2]));
  to.sin_addr.s_addr = htonl(0x7f000001);
  if (sendto((int)r, "abi-leak", 8, 0, (struct sockaddr*)&to, sizeof to) == 8) printf("sent\\n");
  return 0;
}
`;
  it.skipIf(process.arch !== 'x64')(
    'a UDP socket made through i386 or x32 syscalls kills the process: no datagram leaves the run',
    async () => {
      const sink = dgram.createSocket('udp4');
      const got: string[] = [];
      sink.on('message', (m) => got.push(m.toString()));
      await new Promise<void>((r) => sink.bind(0, '127.0.0.1', r));
      const port = sink.address().port;
      writeFileSync(path.join(h.workspace, 'abi.c'), source);
      const rec = await h.run(
        `cc -o abi abi.c && { ./abi i ${port}; echo "i386: $?"; ./abi x ${port}; echo "x32: $?"; }`,
      );
      sink.close();
      // What arrives on loopback is queued before sendto() returns, so the run's end is late enough.
      expect(got).toEqual([]);
      expect(rec.stdout).not.toMatch(/socket \d|sent/);
      const status = (abi: string) =>
        /^(\S+): (\d+)$/m.exec(rec.stdout.split('\n').find((l) => l.startsWith(abi)) ?? '')?.[2];
      // 159 = 128 + SIGSYS (the filter); 139 = 128 + SIGSEGV (a kernel without ia32 emulation)
      expect(['159', '139']).toContain(status('i386'));
      expect(status('x32')).toBe('159');
    },
  );
});

describe('every confinement mode of the jail', () => {
  // The supervisor picks the mode (Landlock, mounts for agents with a sandbox of their own, subreaper
  // where user namespaces are missing); the filter and the listen() broker must hold in each.
  const modes = [['--fs-mounts-if-possible'], ['--no-namespaces']];
  it.each(modes)('refuses MPTCP, TFO, UDP and listen() without bind() with %s', async (mode) => {
    const out: string[] = [];
    for (const args of [
      ['mptcp-connect', '127.0.0.1', '9'],
      ['tfo-sendto', '127.0.0.1', '9'],
      ['udp-send', '127.0.0.1', '9'],
      ['listen-unbound', '127.0.0.1', '1'],
    ]) {
      const r = await execFileAsync(jailPath(), [mode, '--', PYTHON, ATTACKS, ...args], { timeout: 20_000 });
      out.push(r.stdout.trim());
    }
    expect(out).toEqual(['EACCES', 'EACCES', 'EACCES', 'EACCES']);
  });
});

describe('what keeps working', () => {
  it('Unix sockets: a server and a client inside the run talk', async () => {
    const script = `const net=require('net'),p=process.env.TMPDIR+'/s.sock';
      const srv=net.createServer(c=>c.end('pong')).listen(p,()=>{net.connect(p).on('data',d=>{console.log(String(d));srv.close()})});`;
    const rec = await h.run(['node', '-e', script]);
    expect(rec.stderr).toBe('');
    expect(rec.stdout).toBe('pong\n');
  });

  it('Unix sockets: listen() from a thread, on a pathname and an abstract socket', async () => {
    const rec = await h.run(`${PYTHON} ${ATTACKS} unix-listen-thread "$TMPDIR/t.sock"`);
    expect(rec.stderr).toBe('');
    expect(rec.stdout).toBe('ok xx\n');
  });

  it("os.networkInterfaces() (netlink) lists the machine's interfaces", async () => {
    const rec = await h.run([
      'node',
      '-e',
      `console.log(Object.keys(require('os').networkInterfaces()).join(','))`,
    ]);
    expect(rec.stderr).toBe('');
    expect(rec.stdout.trim().split(',')).toContain('lo');
  });

  it('a normal sh, git and node run succeeds', async () => {
    const rec = await h.run(
      'git init -q repo && cd repo && echo hi > f && git add f && git -c user.name=t -c user.email=t@example.com commit -qm one && git log --format=%s && node -e "console.log(6*7)"',
    );
    expect(rec.stderr).toBe('');
    expect(rec.stdout).toBe('one\n42\n');
    expect(rec.result.status).toBe('succeeded');
  });
});
