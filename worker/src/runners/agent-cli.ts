/**
 * What the coding-agent runners (codex, claude) share: the prompt, finding the CLI's binary, running it
 * in its own process group with stdin closed, keeping its raw output (stdout.log), turning its JSON
 * lines into Runboard events, and deciding the status from evidence (agent-status.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import { RunEnv, type WorkerSpec } from '@runboard/supervisor/protocol';
import { killRunProcesses } from '../process-tree.ts';
import { attachmentsJson, cardAttachments } from '../tools/documents/attachments.ts';
import { documentScope } from '../tools/documents/scope.ts';
import { distFile } from './load.ts';
import { describe, type AgentEvent, type AgentParser } from './agent-events.ts';
import { decideStatus } from './agent-status.ts';
import type { RunnerContext, RunnerOutcome } from './runner.ts';

/**
 * Where module resolution starts: this file (ESM bundle), or, in the worker's start-up snapshot (a
 * CommonJS bundle, where import.meta is empty), the snapshot's script as it was when it was built.
 */
function moduleBase(): string {
  const url = (import.meta as { url?: string }).url;
  if (url) return url;
  return typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'noop.js');
}

/** Resolves a file of an npm package installed with Runboard (the worker bundle or its sources). */
export function packageFile(pkg: string, file: string): string | null {
  try {
    const require = createRequire(moduleBase());
    return path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file);
  } catch {
    return null;
  }
}

/** The card, as the agent reads it: the whole markdown file (front matter included). */
function cardText(spec: WorkerSpec): string {
  try {
    return readFileSync(spec.card.path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the card ${spec.card.path}: ${(err as Error).message}`);
  }
}

/**
 * The prompt: the flow's prompt folder (`prompt.md`, with {{TASK_MARKDOWN}}, {{CARD_TITLE}},
 * {{WORKSPACE}}, {{READ_ONLY}}, {{ATTACHMENTS}}: the metadata of the files the card references as
 * `@path`) rendered with the card; without a prompt folder, the card itself.
 */
export function renderPrompt(spec: WorkerSpec): string {
  const card = cardText(spec);
  const folder = spec.flow.prompt;
  if (!folder) return card;
  const file = path.join(folder, 'prompt.md');
  let template: string;
  try {
    template = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the flow's prompt ${file}: ${(err as Error).message}`);
  }
  const vars: Record<string, string> = {
    TASK_MARKDOWN: card,
    CARD_TITLE: spec.card.title ?? path.basename(spec.card.path),
    WORKSPACE: spec.workspace,
    READ_ONLY: spec.flow.readOnly ? 'yes: you may read the workspace but not change it' : 'no',
    ATTACHMENTS: attachmentsJson(
      cardAttachments(card, documentScope(spec) ?? { workspace: spec.workspace, allow: [] }),
    ),
  };
  return template.replace(/\{\{([A-Z_]+)\}\}/g, (m, k: string) => vars[k] ?? m);
}

export interface McpServer {
  command: string;
  args: string[];
  /** The variables of the run's environment the server needs (codex starts MCP servers with few). */
  env: Record<string, string>;
  /** Variables passed from the CLI's own environment by name (secrets: never written to a file). */
  passEnv?: string[];
}

const pick = (env: NodeJS.ProcessEnv, keys: readonly string[]): Record<string, string> =>
  Object.fromEntries(keys.filter((k) => env[k]).map((k) => [k, env[k]!]));

/** What `desktop-cli serve` needs from the run's environment to reach the desktop. */
const DESKTOP_ENV = [
  'DISPLAY',
  'DBUS_SESSION_BUS_ADDRESS',
  'XAUTHORITY',
  'XDG_RUNTIME_DIR',
  RunEnv.nativeDir,
  'PATH',
  'HOME',
  'LANG',
];

/**
 * The desktop as an MCP server for the agent (flow `desktop: true`). `desktop-cli serve` comes with
 * the desktop addon (native/); until it is installed the run fails with that reason.
 */
export function desktopMcpServer(env: NodeJS.ProcessEnv): McpServer | null {
  const explicit = env.RUNBOARD_DESKTOP_CLI;
  const onPath = (env.PATH ?? '')
    .split(':')
    .filter(Boolean)
    .map((dir) => path.join(dir, 'desktop-cli'));
  const found = explicit ? [explicit].find((p) => existsSync(p)) : onPath.find((p) => existsSync(p));
  return found ? { command: found, args: ['serve'], env: pick(env, DESKTOP_ENV) } : null;
}

/** What the document tools' server needs from the run's environment (Chromium prints in $TMPDIR). */
const DOCUMENTS_ENV = [
  'PATH',
  'HOME',
  'TMPDIR',
  'LANG',
  'XDG_CONFIG_HOME',
  'XDG_CACHE_HOME',
  'RUNBOARD_CHROMIUM',
];

/**
 * The document tools (read_document, export_document) as an MCP server for this run: dist/documents-mcp.cjs,
 * beside the runner bundles' folder, started by the agent CLI inside the run's jail with the run's
 * workspace (and the card's project, for its pdf_style.css). A read-only flow gets read_document only.
 * Null when the flow turned them off (`documents: false`) or the bundle is missing.
 */
export function documentsMcpServer(spec: WorkerSpec, env: NodeJS.ProcessEnv): McpServer | null {
  const scope = documentScope(spec);
  if (!scope) return null;
  const file = distFile('documents-mcp.cjs');
  if (!file) return null;
  const args = [file, '--workspace', scope.workspace];
  if (scope.project) args.push('--project', scope.project);
  if (scope.readOnly) args.push('--read-only');
  for (const dir of scope.allow ?? []) args.push('--allow', dir);
  if (scope.flowName) args.push('--flow', scope.flowName);
  if (scope.vision) args.push('--vision', JSON.stringify(scope.vision));
  return {
    command: process.execPath,
    args,
    env: pick(env, DOCUMENTS_ENV),
    // analyze_media asks the vision model through the run's vision route, with its token
    ...(scope.vision ? { passEnv: ['RUNBOARD_VISION_TOKEN'] } : {}),
  };
}

/**
 * The MCP servers of a coding-agent run, by name: the desktop when the flow asks for it, the document
 * tools unless the flow turned them off. A string: the run cannot start, and why.
 */
export function agentMcpServers(ctx: RunnerContext): Record<string, McpServer> | string {
  const { spec } = ctx;
  const servers: Record<string, McpServer> = {};
  if (spec.flow.desktop) {
    const mcp = desktopMcpServer(ctx.env);
    if (!mcp)
      return 'flow asks for the desktop (desktop: true) but `desktop-cli` is not installed (set RUNBOARD_DESKTOP_CLI)';
    servers.desktop = mcp;
  }
  const docs = documentsMcpServer(spec, ctx.env);
  if (docs) servers.documents = docs;
  else if (spec.flow.documents !== false)
    ctx.log('warn', 'the document tools are not built (dist/documents-mcp.cjs): the run goes without them');
  return servers;
}

export interface CliInvocation {
  cli: string;
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  parser: AgentParser;
  /** Events from evidence other than the stream, read once the CLI has exited (before the verdict). */
  afterExit?: (events: readonly AgentEvent[]) => AgentEvent[];
}

const KIND_LEVEL: Partial<Record<AgentEvent['kind'], 'warn' | 'error'>> = {
  'permission-denied': 'warn',
  warning: 'warn',
  error: 'error',
};

export class AgentCliProcess {
  private child: ChildProcess | undefined;
  private cancelled = false;

  async run(ctx: RunnerContext, inv: CliInvocation): Promise<RunnerOutcome> {
    const started = performance.now();
    const events: AgentEvent[] = [];
    let stderrTail = '';
    let firstEventMs: number | null = null;
    const tokens = { input: 0, output: 0, cached: 0 };
    let costUsd: number | null = null;
    let commands = 0;
    const filesChanged = new Set<string>();
    const take = (e: AgentEvent): void => {
      events.push(e);
      if (e.kind === 'usage') {
        tokens.input += e.input;
        tokens.output += e.output;
        tokens.cached += e.cached;
        if (e.costUsd !== undefined) costUsd = (costUsd ?? 0) + e.costUsd;
      }
      if (e.kind === 'command' && e.status === 'started') {
        commands++;
        ctx.progress(undefined, `$ ${e.command.slice(0, 200)}`);
      }
      if (e.kind === 'files-changed' && e.ok) for (const f of e.files) filesChanged.add(f.path);
      ctx.log(KIND_LEVEL[e.kind] ?? 'info', describe(e), { agent: e });
    };
    ctx.progress(0, `starting ${inv.cli}`);
    const exit = await new Promise<{ code: number | null; signal: string | null; spawnError?: string }>(
      (resolve) => {
        const child = spawn(inv.file, inv.args, {
          cwd: ctx.spec.workspace,
          env: inv.env,
          // stdin closed: `codex exec` otherwise waits for more prompt on it.
          stdio: ['ignore', 'pipe', 'pipe'],
          // Its own process group, so that cancel reaches the whole tree where there is no PID namespace.
          detached: true,
        });
        this.child = child;
        child.once('error', (err: NodeJS.ErrnoException) =>
          resolve({
            code: null,
            signal: null,
            spawnError: `cannot start ${inv.cli} (${inv.file}): ${err.code ?? err.message}`,
          }),
        );
        // Raw output, byte for byte, into the run's stdout.log / stderr.log; parsed lines into events.
        child.stdout.on('data', (d: Buffer) => process.stdout.write(d));
        child.stderr.on('data', (d: Buffer) => {
          process.stderr.write(d);
          stderrTail = (stderrTail + d.toString('utf8')).slice(-4000);
        });
        const rl = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
        rl.on('line', (line) => {
          for (const e of inv.parser.line(line)) {
            firstEventMs ??= Math.round(performance.now() - started);
            take(e);
          }
        });
        child.once('close', (code, signal) => resolve({ code, signal }));
      },
    );
    if (exit.spawnError) return { status: 'failed', exitCode: null, summary: exit.spawnError, metrics: {} };
    if (inv.afterExit) {
      try {
        for (const e of inv.afterExit(events)) {
          if (e.kind === 'command') commands++; // never streamed as started
          take(e);
        }
      } catch (err) {
        take({
          kind: 'warning',
          message: `could not read ${inv.cli}'s session record: ${(err as Error).message}`,
        });
      }
    }
    const verdict = decideStatus({
      cli: inv.cli,
      exitCode: exit.code,
      signal: exit.signal,
      cancelled: this.cancelled,
      events,
      stderrTail,
    });
    if (verdict.questions.length)
      ctx.log('info', `questions: ${verdict.questions.join(' | ')}`, { questions: verdict.questions });
    ctx.progress(1, verdict.summary.slice(0, 4000));
    return {
      status: verdict.status,
      exitCode: exit.code,
      summary: verdict.summary,
      ...(verdict.questions.length ? { questions: verdict.questions } : {}),
      metrics: {
        agentCli: inv.cli,
        agentMs: Math.round(performance.now() - started),
        agentFirstEventMs: firstEventMs,
        verdict: verdict.reason,
        tokensIn: tokens.input,
        tokensOut: tokens.output,
        tokensCached: tokens.cached,
        costUsd,
        commands,
        filesChanged: filesChanged.size,
        agentEvents: events.length,
      },
    };
  }

  cancel(): void {
    this.cancelled = true;
    killRunProcesses(this.child?.pid, 'SIGTERM');
  }
}

/** A failed outcome before the CLI ever started (missing binary, prompt, model access). */
export function notStarted(summary: string): RunnerOutcome {
  return { status: 'failed', exitCode: null, summary, metrics: {} };
}
