/**
 * What a connect() costs a run in the subreaper fallback, where the jail makes every connect(), every
 * sendto() with an address and every sendmsg() itself (decision 128), against the mount mode (a user
 * namespace: the run's calls go straight to the kernel). Inside a real run, a Python loop times:
 *   - connect+close of a Unix stream socket to a server of the run's own in its workspace;
 *   - sendmsg() of 64 bytes on a connected Unix socket, blocking (answered on a thread of the jail's) and
 *     non-blocking (answered in the jail's loop; GDBus, Chromium and libuv send so);
 *   - send() of 64 bytes (no address: not brokered), for scale.
 * Both supervisors run at once; each round runs one run in each mode, the order alternating; the figures
 * are the medians over rounds of each run's mean per call, and the fallback's ratio to the mount mode.
 * Usage: node bench/run.mjs bench/connect.ts [--rounds N] [--calls N]
 */
import { parseArgs } from 'node:util';
import { benchSupervisor, loadAverage as load, pct, type BenchSupervisor } from './setup.ts';

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '7' }, calls: { type: 'string', default: '2000' } },
});
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);

const LOOP = `
import os, socket, sys, threading, time
n = int(sys.argv[1])
path = os.path.join(os.getcwd(), "bench-%d.sock" % os.getpid())
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(128)
def serve():
    while True:
        c, _ = server.accept()
        c.close()
threading.Thread(target=serve, daemon=True).start()
t = time.perf_counter()
for i in range(n):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect(path)
    c.close()
connect = (time.perf_counter() - t) / n * 1e6
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
def drain():
    while b.recv(65536):
        pass
threading.Thread(target=drain, daemon=True).start()
data = b"x" * 64
t = time.perf_counter()
for i in range(n):
    a.sendmsg([data])
sendmsg = (time.perf_counter() - t) / n * 1e6
a.setblocking(False)
t = time.perf_counter()
for i in range(n):
    while True:
        try:
            a.sendmsg([data])
            break
        except BlockingIOError:
            time.sleep(0)
nonblocking = (time.perf_counter() - t) / n * 1e6
a.setblocking(True)
t = time.perf_counter()
for i in range(n):
    a.send(data)
send = (time.perf_counter() - t) / n * 1e6
os.unlink(path)
print("%.2f %.2f %.2f %.2f" % (connect, sendmsg, nonblocking, send))
`;

type Figures = [connect: number, sendmsg: number, nonblocking: number, send: number];

async function once(b: BenchSupervisor): Promise<Figures> {
  const { client, card, grant, ws } = b;
  const flow = { name: 'bench-connect', runner: 'command' as const };
  const command = ['/usr/bin/python3', '-c', LOOP, String(CALLS)];
  const { runId } = await client.launch({ card, flow, workspace: ws, grant, command });
  let out = '';
  const result = await new Promise<{ status: string }>((resolve) => {
    void client.attach(runId, { onEvent: () => undefined, onOutput: (_s, d) => (out += d), onEnd: resolve });
  });
  if (result.status !== 'succeeded') throw new Error(`run ${runId}: ${result.status}: ${out}`);
  return out.trim().split(/\s+/).map(Number) as Figures;
}

async function main(): Promise<void> {
  const loadBefore = load();
  const mounts = await benchSupervisor('rb-bench-connect-ns-');
  process.env.RUNBOARD_NAMESPACES = 'off';
  const fallback = await benchSupervisor('rb-bench-connect-sub-');
  delete process.env.RUNBOARD_NAMESPACES;
  const got: Record<'mounts' | 'fallback', Figures[]> = { mounts: [], fallback: [] };
  try {
    await once(mounts); // warm both (page cache, Python's start)
    await once(fallback);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? (['fallback', 'mounts'] as const) : (['mounts', 'fallback'] as const);
      for (const mode of order) got[mode].push(await once(mode === 'mounts' ? mounts : fallback));
    }
  } finally {
    await mounts.close();
    await fallback.close();
  }
  const med = (mode: 'mounts' | 'fallback', i: number): number =>
    pct(
      got[mode].map((f) => f[i]!),
      50,
    );
  console.log(
    `connect cost in a run, ${ROUNDS} rounds of ${CALLS} calls each, load ${loadBefore} → ${load()}`,
  );
  for (const [i, what] of [
    'connect+close (Unix, workspace)',
    'sendmsg 64 B, blocking socket',
    'sendmsg 64 B, non-blocking',
    'send 64 B',
  ].entries()) {
    const m = med('mounts', i);
    const f = med('fallback', i);
    console.log(
      `  ${what.padEnd(32)} mount mode ${m.toFixed(1)} µs, subreaper fallback ${f.toFixed(1)} µs: ${(f / m).toFixed(2)}x`,
    );
  }
}

await main();
