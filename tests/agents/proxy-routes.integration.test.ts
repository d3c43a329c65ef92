// The model proxy's routes and connections, attacked from inside real runs. A codex run's own shell
// (exec_command, as the model asks) finds the run's proxy token where any process of the run can (the
// codex process's environment, /proc/<pid>/environ) and its port (codex's config.toml), then asks the
// proxy for what no codex run needs: the key's files, a delete, a fine-tuning job, path tricks that
// resolve to them. Each must be refused (403) before anything reaches the provider (the scripted
// model server records every request it gets). A claude run's token is used the same way on its own
// port for the Anthropic routes. Then a run floods its proxy port with as many connections as its
// descriptors allow (as many as the supervisor's own: they share the limit): the supervisor keeps
// serving its RPC, other runs and their model requests.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { waitUntil } from '../helpers/harness.ts';
import { AgentHarness, KEYS, processEnv } from './agent-harness.ts';

/**
 * The descriptor limit of the supervisor, and so of its runs (the jail inherits it): 4,096, a common
 * hard limit, so that a run can hold as many connections as its limit allows, more than the supervisor
 * has left, within a test's time. (At 20,000, the kernel's choice of a free local port for each new
 * loopback connection slows down past ~14,000 and the flood alone takes minutes.)
 */
const NOFILE = 4096;

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start({
    wrap: (argv) => ['sh', '-c', `ulimit -n ${NOFILE} && exec "$0" "$@"`, ...argv],
  });
}, 30_000);
afterAll(async () => {
  await a?.stop();
});

/** `p`, or a failure naming `what` when it has not settled after `ms` (a supervisor out of descriptors never answers). */
function within<T>(what: string, p: Promise<T>, ms = 60_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer: ${what}`)), ms))),
  ]);
}

const done = (summary: string): string =>
  `Done.\nRUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

/** Python for inside the run: the run's token and proxy port, and one raw HTTP request (path sent as written). */
const PY_COMMON = String.raw`
import glob, json, os, re, socket, sys, time
token = None
for p in glob.glob('/proc/[0-9]*/environ'):
    try:
        env = open(p, 'rb').read().split(b'\0')
    except OSError:
        continue
    for kv in env:
        if kv.startswith(b'RUNBOARD_MODEL_TOKEN='):
            token = kv.split(b'=', 1)[1].decode()
home = os.environ.get('CODEX_HOME') or os.path.join(os.environ['HOME'], '.codex')
base = re.search(r'base_url = "([^"]+)"', open(os.path.join(home, 'config.toml')).read()).group(1)
port = int(re.match(r'http://127\.0\.0\.1:(\d+)', base).group(1))

def send(method, path, body=b'', s=None):
    try:
        s = s or socket.create_connection(('127.0.0.1', port), timeout=20)
        s.settimeout(20)
        head = (f'{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nauthorization: Bearer {token}\r\n'
                f'content-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n')
        s.sendall(head.encode() + body)
        data = b''
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
        s.close()
    except OSError as e:
        return {'status': 0, 'body': 'error ' + str(e)}
    status = int(data.split(b' ', 2)[1]) if data.startswith(b'HTTP/') else 0
    return {'status': status, 'body': data.split(b'\r\n\r\n', 1)[-1].decode('utf8', 'replace')[:400]}
`;

const ROUTES_PY = String.raw`
attempts = [
    ['GET', '/openai/v1/files', b''],
    ['DELETE', '/openai/v1/files/file-abc123', b''],
    ['POST', '/openai/v1/fine_tuning/jobs', b'{"training_file":"file-abc123","model":"gpt-4o-mini"}'],
    ['GET', '/openai/v1/./files', b''],
    ['GET', '/openai/v1/%2e/files', b''],
    ['GET', '/openai/v1/%2E%2E/v1/files', b''],
    ['GET', '/openai/v1/responses/../files', b''],
    ['GET', '/openai//v1/files', b''],
    ['GET', '/openai/v1%2ffiles', b''],
    ['POST', '/openai/v2/responses', b'{"model":"gpt-5-codex","input":"EPISODE:stray"}'],
    ['POST', '/openai/v1/responses/', b'{"model":"gpt-5-codex","input":"EPISODE:stray"}'],
    ['GET', '/openai/v1/responses', b''],
]
out = {'token': bool(token), 'refused': [], 'allowed': None}
for m, p, b in attempts:
    r = send(m, p, b)
    out['refused'].append([m, p, r['status'], r['body']])
# the route a codex run does use still works with the same token
out['allowed'] = send('POST', '/openai/v1/responses',
                      b'{"model":"gpt-5-codex","input":"EPISODE:routes-ok say ok"}')
open('routes.json', 'w').write(json.dumps(out))
print('tried', len(attempts))
`;

const FLOOD_PY = String.raw`
import resource, select
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
target = min(20000, soft - 64)  # all the run's descriptors but a few
log = open('flood-progress.txt', 'w', buffering=1)
log.write(f'soft {soft} target {target}\n')
held = {}
def top_up(most):
    n = 0
    while len(held) < target and n < most:
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=10)
        except OSError as e:
            return str(e)
        held[s.fileno()] = s
        n += 1
    return None
def sweep():
    # connections the other side closed: closed here too, to be opened again
    p = select.poll()
    for fd in held:
        p.register(fd, select.POLLIN | select.POLLHUP)
    for fd, _ in p.poll(0):
        held.pop(fd).close()
rounds = []
for n in (500, target):
    stopped = top_up(n)
    rounds.append({'opened': len(held), 'stopped': stopped})
    log.write(f'round {rounds[-1]}\n')
    if n != target:
        for s in held.values():
            s.close()
        held.clear()
# past the bound: what a connection the supervisor does not take any more hears
extra = send('GET', '/openai/v1/responses')
# written whole, then named: the test reads it as soon as the name is there
open('flooded.json.tmp', 'w').write(json.dumps({'rounds': rounds, 'extra': extra, 'soft': soft}))
os.replace('flooded.json.tmp', 'flooded.json')
# and hold: every connection the supervisor closes is opened again, until the test is done
while not os.path.exists('release-flood'):
    sweep()
    top_up(200)
    time.sleep(0.1)
print('flooded', rounds)
`;

describe('the model proxy from inside a run (attacks)', () => {
  it("refuses what the run's runner does not use (files, deletes, fine-tuning, path tricks) before anything goes upstream", async () => {
    writeFileSync(path.join(a.workspace, 'routes.py'), PY_COMMON + ROUTES_PY);
    rmSync(path.join(a.workspace, 'routes.json'), { force: true });
    a.episodes([
      {
        name: 'routes',
        match: 'EPISODE:routes-attack',
        turns: [
          {
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: 'python3 routes.py', yield_time_ms: 60000 } },
            ],
          },
          { text: done('tried the routes') },
        ],
      },
      { name: 'routes-ok', match: 'EPISODE:routes-ok', requireTools: false, turns: [{ text: 'ok' }] },
    ]);
    const rec = await a.run(a.card('Routes', 'EPISODE:routes-attack'), a.flow('codex', { worktree: false }));
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    const out = JSON.parse(readFileSync(path.join(a.workspace, 'routes.json'), 'utf8')) as {
      token: boolean;
      refused: [string, string, number, string][];
      allowed: { status: number; body: string };
    };
    expect(out.token).toBe(true);
    for (const [m, p, status, body] of out.refused) {
      expect(status, `${m} ${p}: ${body}`).toBe(403);
      expect(body).toContain('runboard proxy');
    }
    expect(out.allowed.status, out.allowed.body).toBe(200);
    // Upstream saw the run's own Responses requests and nothing else, always with the key.
    const seen = a.model.requests.filter((r) => r.headers.authorization === `Bearer ${KEYS.openai}`);
    const strays = seen.filter((r) => r.method !== 'POST' || r.path !== '/v1/responses');
    expect(strays.map((r) => `${r.method} ${r.path}`)).toEqual([]);
    expect(seen.some((r) => JSON.stringify(r.body).includes('EPISODE:stray'))).toBe(false);
  }, 180_000);

  it("refuses the Anthropic files and batch routes with a claude run's token on its port", async () => {
    a.episodes([{ name: 'hold-c', match: 'EPISODE:hold-c', turns: [{ hang: true }] }]);
    const waiting = a.model.nextRequest('hold-c');
    const { runId } = await a.launch(
      a.card('Hold', 'EPISODE:hold-c wait'),
      a.flow('claude', { worktree: false }),
    );
    await waiting;
    let env: Record<string, string> = {};
    await waitUntil('the run’s claude process', () => {
      try {
        env = processEnv('ANTHROPIC_API_KEY=rbp-', (e) => e.includes(`RUNBOARD_RUN_ID=${runId}\0`));
        return true;
      } catch {
        return false;
      }
    });
    const base = env.ANTHROPIC_BASE_URL!;
    const before = a.model.requests.length;
    const tries: [string, string, string?][] = [
      ['GET', '/v1/files'],
      ['GET', '/v1/files/file_011abc/content'],
      ['DELETE', '/v1/files/file_011abc'],
      ['POST', '/v1/messages/batches', '{"requests":[]}'],
      ['POST', '/v1/fine_tuning/jobs', '{}'],
      ['POST', '/v1/./messages', '{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}'],
      ['POST', '/v1beta/messages', '{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}'],
      ['GET', '/v1/models'],
    ];
    const port = Number(new URL(base).port);
    for (const [method, p, body] of tries) {
      // sent raw, as written (fetch would resolve `/./` itself)
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port,
            method,
            path: `/anthropic${p}`,
            headers: {
              'x-api-key': env.ANTHROPIC_API_KEY!,
              'anthropic-version': '2023-06-01',
              'content-type': 'application/json',
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
      expect(status, `${method} ${p}`).toBe(403);
    }
    expect(a.model.requests.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([]);
    await a.h.client.cancel(runId);
  }, 120_000);

  it('a run that floods its proxy port with connections: the supervisor keeps serving its RPC, other runs and their model requests', async () => {
    writeFileSync(path.join(a.workspace, 'flood.py'), PY_COMMON + FLOOD_PY);
    for (const f of ['flooded.json', 'release-flood']) rmSync(path.join(a.workspace, f), { force: true });
    a.episodes([
      {
        name: 'flood',
        match: 'EPISODE:flood',
        turns: [
          {
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: 'python3 flood.py', yield_time_ms: 300000 } },
            ],
          },
          // codex may stop waiting for the command before the flood is done: the run waits here, holding
          { hang: true },
        ],
      },
      {
        name: 'after',
        match: 'EPISODE:after-flood',
        turns: [{ text: done('answered during the flood') }],
      },
    ]);
    const { runId } = await a.launch(a.card('Flood', 'EPISODE:flood'), a.flow('codex', { worktree: false }));
    const flooder = a.h.collect(runId);
    const flooded = path.join(a.workspace, 'flooded.json');
    await waitUntil('the run to hold its connections', () => existsSync(flooded), 150_000).catch(
      (err: Error) => {
        const progress = path.join(a.workspace, 'flood-progress.txt');
        throw new Error(
          `${err.message}: ${existsSync(progress) ? readFileSync(progress, 'utf8') : 'no progress file'}`,
        );
      },
    );
    try {
      const f = JSON.parse(readFileSync(flooded, 'utf8')) as {
        rounds: { opened: number; stopped: string | null }[];
        extra: { status: number; body: string };
        soft: number;
      };
      expect(f.soft).toBe(NOFILE);
      expect(f.rounds.map((r) => r.opened)).toEqual([500, NOFILE - 64]);
      // (it goes on: whatever the supervisor closes is opened again while the checks below run)
      // The supervisor's own descriptors: the run's flood holds no more than its bound of them.
      const fds = readdirSync(`/proc/${a.h.supervisor.pid}/fd`).length;
      expect(fds, `the supervisor has ${fds} descriptors open of ${NOFILE}`).toBeLessThan(NOFILE / 4);
      // The supervisor's RPC: a new client connects and is answered.
      const fresh = await within('a new RPC client', SupervisorClient.connect(a.h.paths));
      try {
        const listed = await within('run/list', fresh.list());
        expect(listed.runs.some((r) => r.runId === runId)).toBe(true);
      } finally {
        fresh.close();
      }
      // Another run starts, runs and ends.
      const other = await within('a command run', a.h.run(['sh', '-c', 'echo alive']));
      expect(other.result.status, other.result.summary).toBe('succeeded');
      expect(other.stdout).toBe('alive\n');
      // Another run's model requests go through its own listener.
      const agent = await within(
        'a codex run',
        a.run(a.card('After', 'EPISODE:after-flood'), a.flow('codex', { worktree: false })),
        120_000,
      );
      expect(agent.result.status, agent.result.summary + agent.stderr).toBe('succeeded');
      expect(agent.result.summary).toBe('answered during the flood');
      // The run got its descriptors' worth of connections, and one past its bound was told why.
      expect(f.extra.status, f.extra.body).toBe(503);
      expect(f.extra.body).toMatch(/connections/);
    } finally {
      writeFileSync(path.join(a.workspace, 'release-flood'), '');
      await a.h.client.cancel(runId);
    }
    const rec = await flooder;
    expect(rec.result.status, rec.result.summary).toBe('cancelled');
  }, 400_000);
});
