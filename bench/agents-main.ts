/**
 * The overhead Runboard adds around a coding-agent run, with the scripted model server
 * answering instantly. For each CLI (codex, claude), N runs of a one-command episode:
 *
 *   direct   the CLI spawned by this script, straight at the scripted server
 *   runboard the same CLI as a Runboard run: launch → supervisor → jail → worker → CLI → proxy → server
 *
 * Measured: start = launch (or spawn) → the CLI's first model request reaching the scripted server;
 * end = the CLI's final event → the run finished (Runboard: the host receives run/didEnd; direct: the
 * CLI exited). Runboard's overhead is the difference of medians. Run: node bench/agents.mjs [N]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { findClaude } from '../worker/src/runners/claude.ts';
import { findCodex } from '../worker/src/runners/codex.ts';
import { AgentHarness } from '../tests/agents/agent-harness.ts';
import type { Episode } from '../tests/fixtures/model-server/server.ts';

const N = Number(process.argv[2] ?? 5);
const now = (): number => performance.timeOrigin + performance.now();
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

type Cli = 'codex' | 'claude';
const episode = (cli: Cli, tag: string): Episode => ({
  name: tag,
  match: `EPISODE:${tag}`,
  turns: [
    {
      toolCalls: [
        cli === 'codex'
          ? { name: 'exec_command', arguments: { cmd: 'echo bench >> app.txt' } }
          : { name: 'Write', arguments: { file_path: 'bench.txt', content: 'bench\n' } },
      ],
    },
    { text: 'RUNBOARD_RESULT: {"status":"SUCCESS","summary":"bench"}' },
  ],
});

/** The CLI run directly (no Runboard), in a throwaway copy of the repo: first request and exit times. */
async function direct(a: AgentHarness, cli: Cli, tag: string): Promise<{ start: number; end: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-bench-'));
  const ws = path.join(dir, 'ws');
  const home = path.join(dir, 'home');
  mkdirSync(home, { recursive: true });
  const run = (cmd: string, args: string[]) =>
    new Promise<void>((r) => spawn(cmd, args, { stdio: 'ignore' }).once('exit', () => r()));
  await run('git', ['clone', '-q', a.workspace, ws]);
  const prompt = `EPISODE:${tag}`;
  let file: string;
  let args: string[];
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, TMPDIR: dir, NO_COLOR: '1' };
  if (cli === 'codex') {
    const c = findCodex(process.env)!;
    mkdirSync(path.join(home, '.codex'));
    writeFileSync(
      path.join(home, '.codex', 'config.toml'),
      [
        'model = "gpt-5-codex"',
        'model_provider = "rb"',
        'approval_policy = "never"',
        '[model_providers.rb]',
        'name = "rb"',
        `base_url = "${a.model.url}/v1"`,
        'env_key = "RB_TOKEN"',
        'wire_api = "responses"',
      ].join('\n'),
    );
    Object.assign(env, {
      CODEX_HOME: path.join(home, '.codex'),
      RB_TOKEN: 'x',
      PATH: `${c.pathDir}:${env.PATH}`,
    });
    file = c.bin;
    args = ['exec', '--json', '--skip-git-repo-check', '-s', 'danger-full-access', '-C', ws, prompt];
  } else {
    file = findClaude(process.env)!;
    Object.assign(env, {
      ANTHROPIC_BASE_URL: a.model.url,
      ANTHROPIC_API_KEY: 'x',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    });
    args = [
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-mode',
      'acceptEdits',
      '--',
      prompt,
    ];
  }
  const t0 = now();
  const child = spawn(file, args, { cwd: ws, env, stdio: ['ignore', 'pipe', 'ignore'] });
  let finalAt = 0;
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    if (l.includes('"type":"turn.completed"') || l.includes('"type":"result"')) finalAt = now();
  });
  await new Promise((r) => child.once('exit', r));
  const exitAt = now();
  const first = a.model.requests.find((r) => r.episode === tag)!;
  return { start: first.at - t0, end: exitAt - finalAt };
}

async function viaRunboard(a: AgentHarness, cli: Cli, tag: string, worktree: boolean, agentSandbox = false) {
  const card = a.card(tag, `EPISODE:${tag}`);
  const t0 = now();
  const { runId } = await a.launch(
    card,
    a.flow(cli, { worktree, ...(agentSandbox ? { sandbox: { agentSandbox: true } } : {}) }),
  );
  let endAt = 0;
  const rec = await new Promise<{
    events: { ts: string; type?: string; data?: Record<string, unknown> }[];
    status: string;
  }>((resolve, reject) => {
    const events: { ts: string; type?: string; data?: Record<string, unknown> }[] = [];
    a.h.client
      .attach(runId, {
        onEvent: (e) => events.push(e),
        onEnd: (r) => {
          endAt = now();
          resolve({ events, status: r.status });
        },
      })
      .catch(reject);
  });
  if (rec.status !== 'succeeded') throw new Error(`bench run ${runId} ended ${rec.status}`);
  const first = a.model.requests.find((r) => r.episode === tag)!;
  const final = rec.events.find((e) => (e.data?.agent as { kind?: string } | undefined)?.kind === 'final')!;
  if (worktree) await a.discard(runId);
  const ts = (pred: (e: { type?: string; data?: Record<string, unknown> }) => boolean): number =>
    Date.parse((rec.events as { ts: string; type?: string }[]).find(pred)?.ts ?? '');
  return {
    start: first.at - t0,
    end: endAt - Date.parse(final.ts),
    // Runboard's own start: launch → worker ready (supervisor, jail, worker up; worktree made if asked).
    ready: ts((e) => e.type === 'ready') - t0,
  };
}

async function main(): Promise<void> {
  const a = await AgentHarness.start();
  const rows: string[] = [];
  try {
    for (const cli of ['codex', 'claude'] as const) {
      const d = { start: [] as number[], end: [] as number[] };
      const r = { start: [] as number[], end: [] as number[], ready: [] as number[] };
      const w = { start: [] as number[], end: [] as number[], ready: [] as number[] };
      const sb = { start: [] as number[], end: [] as number[], ready: [] as number[] };
      for (let i = 0; i < N; i++) {
        const tags = [`${cli}-d${i}`, `${cli}-r${i}`, `${cli}-w${i}`, `${cli}-s${i}`];
        a.episodes(tags.map((t) => episode(cli, t)));
        const x = await direct(a, cli, tags[0]!);
        d.start.push(x.start);
        d.end.push(x.end);
        const y = await viaRunboard(a, cli, tags[1]!, false);
        r.start.push(y.start);
        r.end.push(y.end);
        r.ready.push(y.ready);
        const z = await viaRunboard(a, cli, tags[2]!, true);
        w.start.push(z.start);
        w.end.push(z.end);
        w.ready.push(z.ready);
        if (cli === 'codex') {
          // codex's own bubblewrap sandbox inside the jail (sandbox.agentSandbox: the jail confines by mounts)
          const v = await viaRunboard(a, cli, tags[3]!, false, true);
          sb.start.push(v.start);
          sb.end.push(v.end);
          sb.ready.push(v.ready);
        }
      }
      const f = (n: number): string => `${n.toFixed(0)} ms`;
      rows.push(
        `| ${cli} | direct (no Runboard) | ${f(median(d.start))} | ${f(median(d.end))} | – | – | – |`,
        `| ${cli} | Runboard, in place | ${f(median(r.start))} | ${f(median(r.end))} | ${f(median(r.start) - median(d.start))} | ${f(median(r.end) - median(d.end))} | ${f(median(r.ready))} |`,
        `| ${cli} | Runboard, worktree | ${f(median(w.start))} | ${f(median(w.end))} | ${f(median(w.start) - median(d.start))} | ${f(median(w.end) - median(d.end))} | ${f(median(w.ready))} |`,
      );
      if (sb.start.length)
        rows.push(
          `| ${cli} | Runboard, in place, agent sandbox | ${f(median(sb.start))} | ${f(median(sb.end))} | ${f(median(sb.start) - median(d.start))} | ${f(median(sb.end) - median(d.end))} | ${f(median(sb.ready))} |`,
        );
    }
  } finally {
    await a.stop();
  }
  console.log(`N = ${N} runs each, medians; ${os.cpus().length} CPUs, load ${os.loadavg()[0]!.toFixed(2)}`);
  console.log(
    '| CLI | how | launch → first model request | final event → run finished | start overhead | end overhead | launch → worker ready |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
