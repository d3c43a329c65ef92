/**
 * Coding-agent runs for tests: a real supervisor (tests/helpers/harness.ts) whose model proxy forwards
 * to the scripted model server, provider keys stored the way users store them, and a granted git
 * repository with one commit as the workspace.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  call,
  DiscardWorktree,
  KeepWorktree,
  type FlowSpec,
  type PermissionAsk,
  type RunResult,
} from '@runboard/supervisor/protocol';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { startModelServer, type Episode, type ModelServer } from '../fixtures/model-server/server.ts';
import { Harness, processesMentioning, REPO, waitUntil, type RunRecord } from '../helpers/harness.ts';

export const KEYS = { openai: 'sk-test-openai-0123456789', anthropic: 'sk-ant-test-0123456789' };

/** The line an agent ends with to report success (the worker's RUNBOARD_RESULT protocol). */
export const succeeded = (summary: string): string =>
  `RUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@t',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@t',
    },
  }).trim();
}

export class AgentHarness {
  private cards = 0;
  private constructor(
    readonly h: Harness,
    readonly model: ModelServer,
  ) {}

  static async start(
    opts: { keys?: boolean; env?: NodeJS.ProcessEnv; wrap?: (argv: string[]) => string[] } = {},
  ): Promise<AgentHarness> {
    const model = await startModelServer();
    const h = await Harness.start({
      env: {
        RUNBOARD_PROVIDER_OPENAI_URL: model.url,
        RUNBOARD_PROVIDER_ANTHROPIC_URL: model.url,
        ...opts.env,
      },
      ...(opts.wrap ? { wrap: opts.wrap } : {}),
    });
    if (opts.keys !== false) {
      writeProviderKey(h.paths, 'openai', KEYS.openai);
      writeProviderKey(h.paths, 'anthropic', KEYS.anthropic);
    }
    const ws = h.workspace;
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'README.md'), '# demo\n');
    writeFileSync(path.join(ws, 'app.txt'), 'one\ntwo\n');
    git(ws, 'add', '-A');
    git(ws, 'commit', '-qm', 'initial');
    return new AgentHarness(h, model);
  }

  get workspace(): string {
    return this.h.workspace;
  }

  /** A folder beside the workspace, outside every grant (its realpath): what an agent is made to ask for. */
  outside(name: string): string {
    mkdirSync(path.join(this.h.root, name));
    return realpathSync(path.join(this.h.root, name));
  }

  episodes(e: Episode[]): void {
    this.model.setEpisodes(e);
  }

  /** A card file outside the repository (so the user's checkout holds only what the test put there). */
  card(title: string, body: string): string {
    const file = path.join(this.h.root, `card-${++this.cards}.md`);
    writeFileSync(file, `---\ntitle: ${title}\nflow: implement\n---\n# Task\n${body}\n`);
    return file;
  }

  flow(runner: 'codex' | 'claude', over: Partial<FlowSpec> = {}): FlowSpec {
    return {
      name: 'implement',
      runner,
      provider: runner === 'codex' ? 'openai' : 'anthropic',
      model: runner === 'codex' ? 'gpt-5-codex' : 'claude-sonnet-4-5',
      worktree: true,
      heartbeatTimeoutMs: 30_000,
      timeoutMs: 120_000,
      prompt: path.join(REPO, 'prompts', 'implement'),
      ...over,
    };
  }

  launch(cardFile: string, flow: FlowSpec, title = 'agent card', allow?: { runId: string; ask: string }[]) {
    return this.h.client.launch({
      card: { path: cardFile, title },
      flow,
      workspace: this.workspace,
      grant: this.h.grant,
      ...(allow ? { allow } : {}),
    });
  }

  /** The run's first ask, once it waits at a tool call (the supervisor's record, via run/get). */
  async waitingAsk(runId: string): Promise<PermissionAsk> {
    let ask: PermissionAsk | undefined;
    await waitUntil(
      `run ${runId} to wait at its tool call`,
      async () => {
        const { run } = await this.h.client.getRun(runId);
        if (run.status !== 'running') throw new Error(`run ${runId} ended ${run.status}: ${run.summary}`);
        ask = run.asks?.[0];
        return !!ask;
      },
      90_000,
    );
    return ask!;
  }

  async run(cardFile: string, flow: FlowSpec): Promise<RunRecord> {
    const { runId } = await this.launch(cardFile, flow);
    return this.h.collect(runId);
  }

  // SupervisorClient has no methods for these yet (host/src/core is not this issue's): call them directly.
  keep(runId: string): Promise<{ run: RunResult }> {
    return call(this.h.client.conn, KeepWorktree, { runId });
  }

  discard(runId: string): Promise<{ run: RunResult }> {
    return call(this.h.client.conn, DiscardWorktree, { runId });
  }

  async stop(): Promise<void> {
    await this.h.stop();
    await this.model.close();
  }
}

/** Agent events (worker log events carrying `agent`) of a run. */
export function agentEvents(rec: RunRecord): { kind: string; [k: string]: unknown }[] {
  return rec.events
    .filter((e) => e.type === 'log' && e.data && 'agent' in e.data)
    .map((e) => (e.data as { agent: { kind: string } }).agent);
}

/**
 * The environment of a process whose environment or command line has `needle` and whose environment
 * `pick` accepts (e.g. a run's agent CLI: the test, as the user, may read it, and so may the run).
 */
export function processEnv(needle: string, pick: (environ: string) => boolean): Record<string, string> {
  for (const pid of processesMentioning(needle)) {
    let env: string;
    try {
      env = readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue;
    }
    if (!pick(env)) continue;
    return Object.fromEntries(
      env
        .split('\0')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  }
  throw new Error(`no process with ${needle}`);
}
