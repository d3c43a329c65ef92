/**
 * The `codex` runner: the real `codex exec --json` (npm @openai/codex) in the run's workspace, with
 * stdin closed, and the model reached only through the supervisor's loopback proxy: codex's config (in
 * the run's own HOME) names a model provider whose base URL is the proxy and whose key is this run's
 * token. codex-cli 0.169 speaks the OpenAI Responses API (wire_api = "responses").
 *
 * Sandbox (docs/agents.md, "codex's own sandbox"): codex's Linux sandbox is bubblewrap, which needs
 * mounts, and a Landlock filesystem domain (the default run jail) forbids every mount. So by default
 * codex runs with `danger-full-access` and the jail is the sandbox. A flow with
 * `sandbox.agentSandbox` (true, or 'auto' where user namespaces work) has the jail confine the
 * filesystem by mounts instead (same policy,
 * fresh /proc, Landlock kept for network and scopes), and codex then runs its own sandbox inside:
 * `workspace-write` (the workspace, $TMPDIR and the flow's extra writable trees), `read-only` for
 * read-only flows.
 *
 * Asks before the act: Runboard's PreToolUse hook (agent-hook.ts) in the run's `hooks.json`, trusted
 * for this invocation (`--dangerously-bypass-hook-trust`: codex runs only hooks a person trusted by
 * hash; this file is Runboard's own, and project hooks stay off for an untrusted project).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RunEnv } from '@runboard/supervisor/protocol';
import { AgentCliProcess, agentMcpServers, notStarted, packageFile, renderPrompt } from './agent-cli.ts';
import { codexParser, codexRolloutDenials, type AgentEvent } from './agent-events.ts';
import { hookSettings } from './agent-hook-config.ts';
import type { Runner, RunnerContext, RunnerOutcome } from './runner.ts';

const TRIPLES: Record<string, string> = {
  'linux-x64': 'x86_64-unknown-linux-musl',
  'linux-arm64': 'aarch64-unknown-linux-musl',
  'darwin-x64': 'x86_64-apple-darwin',
  'darwin-arm64': 'aarch64-apple-darwin',
};

/** The native codex binary of this platform, and the folder of its helper tools (rg). */
export function findCodex(
  env: NodeJS.ProcessEnv,
): { bin: string; pathDir: string | null; root: string | null } | null {
  if (env.RUNBOARD_CODEX_BIN) return { bin: env.RUNBOARD_CODEX_BIN, pathDir: null, root: null };
  const plat = `${process.platform}-${process.arch}`;
  const triple = TRIPLES[plat];
  const vendor = triple ? packageFile(`@openai/codex-${plat}`, path.join('vendor', triple)) : null;
  if (!vendor) return null;
  return {
    bin: path.join(vendor, 'bin', 'codex'),
    pathDir: path.join(vendor, 'codex-path'),
    root: packageFile('@openai/codex', ''),
  };
}

/** The lines of session `thread`'s rollout, or null when there is none. */
function rolloutLines(codexHome: string, thread: string): string[] | null {
  let files: string[];
  try {
    files = readdirSync(path.join(codexHome, 'sessions'), { recursive: true, encoding: 'utf8' });
  } catch {
    return null;
  }
  const file = files.find((f) => f.endsWith(`-${thread}.jsonl`));
  return file ? readFileSync(path.join(codexHome, 'sessions', file), 'utf8').split('\n') : null;
}

/**
 * Denied commands the JSON stream left out, from the session's rollout (see codexRolloutDenials);
 * `skip`: the rollout's lines from before this run (a resumed session's earlier runs).
 */
function rolloutDenials(codexHome: string, events: readonly AgentEvent[], skip: number): AgentEvent[] {
  const thread = events.find((e) => e.kind === 'session')?.id;
  if (!thread) return [];
  const lines = rolloutLines(codexHome, thread);
  if (!lines) throw new Error(`no rollout of session ${thread} in ${path.join(codexHome, 'sessions')}`);
  return codexRolloutDenials(lines.slice(skip).join('\n'), events);
}

const toml = (s: string): string => JSON.stringify(s); // a TOML basic string is a JSON string

export class CodexRunner implements Runner {
  private readonly proc = new AgentCliProcess();

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const codex = findCodex(ctx.env);
    if (!codex)
      return notStarted(
        `the codex CLI is not installed for ${process.platform}-${process.arch} (npm @openai/codex)`,
      );
    if (!spec.model)
      return notStarted(
        `flow "${spec.flow.name}" has no provider: a codex run needs \`provider: openai\` (or another Responses-API provider)`,
      );
    let prompt: string;
    try {
      // continuing a session the person's allow resumed: the agent is told what was allowed
      prompt = spec.resume ? spec.resume.note : renderPrompt(spec);
    } catch (err) {
      return notStarted((err as Error).message);
    }
    const home = ctx.env.HOME ?? path.join(ctx.env.TMPDIR ?? '/tmp', 'home');
    const codexHome = path.join(home, '.codex');
    mkdirSync(codexHome, { recursive: true, mode: 0o700 });
    // See the header: codex's own sandbox only where the jail made room for it (it says so in
    // RUNBOARD_FS_CONFINEMENT; with agentSandbox 'auto' it does so only where user namespaces work).
    const sandbox =
      !spec.flow.sandbox?.agentSandbox || ctx.env[RunEnv.fsConfinement] !== 'mounts'
        ? 'danger-full-access'
        : spec.flow.readOnly
          ? 'read-only'
          : 'workspace-write';
    const lines = [
      "# Written by Runboard for this run only (the run's own HOME).",
      `model = ${toml(spec.model.model ?? 'gpt-5-codex')}`,
      'model_provider = "runboard"',
      'approval_policy = "never"',
      `sandbox_mode = ${toml(sandbox)}`,
      'check_for_update_on_startup = false',
      '',
      '[model_providers.runboard]',
      'name = "Runboard model proxy"',
      `base_url = ${toml(spec.model.baseUrl)}`,
      'env_key = "RUNBOARD_MODEL_TOKEN"',
      'wire_api = "responses"',
      'request_max_retries = 2',
      'stream_max_retries = 2',
      '',
      '[analytics]',
      'enabled = false',
    ];
    if (sandbox === 'workspace-write') {
      lines.push(
        '',
        '[sandbox_workspace_write]',
        // The run's /tmp is a private one of the jail's; $TMPDIR, the run's own, is the writable temp dir.
        'exclude_slash_tmp = true',
        'network_access = false',
        `writable_roots = [${(spec.flow.sandbox?.writable ?? []).map(toml).join(', ')}]`,
      );
    }
    const servers = agentMcpServers(ctx);
    if (typeof servers === 'string') return notStarted(servers);
    for (const [name, mcp] of Object.entries(servers))
      lines.push(
        '',
        `[mcp_servers.${name}]`,
        `command = ${toml(mcp.command)}`,
        `args = [${mcp.args.map(toml).join(', ')}]`,
        // The flow's `desktop: true` is the person's approval; the document tools are confined to the
        // workspace like the run's own edits. With approval_policy "never" codex would otherwise refuse
        // every call ("MCP tool call requires approval").
        'default_tools_approval_mode = "approve"',
        // codex waits 10 s for an MCP server by default; a start inside the jail (and codex's own
        // sandbox) can take longer on a loaded machine. Without `required` codex sends its first request
        // before a slow server is up and the model never sees its tools (seen with a 4 s start).
        'startup_timeout_sec = 60',
        'required = true',
        // codex starts MCP servers with a minimal environment: the display, bus and temp dir come from the run.
        `env = { ${Object.entries(mcp.env)
          .map(([k, v]) => `${k} = ${toml(v)}`)
          .join(', ')} }`,
        // from codex's own environment, so a secret is not written into the config file
        ...(mcp.passEnv ? [`env_vars = [${mcp.passEnv.map(toml).join(', ')}]`] : []),
      );
    writeFileSync(path.join(codexHome, 'config.toml'), lines.join('\n') + '\n', { mode: 0o600 });
    const hooks = hookSettings('codex', ctx);
    // (a resumed session's CODEX_HOME may hold an earlier run's: this run's, or none)
    if (hooks) writeFileSync(path.join(codexHome, 'hooks.json'), JSON.stringify(hooks), { mode: 0o600 });
    else rmSync(path.join(codexHome, 'hooks.json'), { force: true });
    const env: NodeJS.ProcessEnv = {
      ...ctx.env,
      CODEX_HOME: codexHome,
      RUNBOARD_MODEL_TOKEN: spec.model.token,
      ...(spec.vision ? { RUNBOARD_VISION_TOKEN: spec.vision.token } : {}),
      CODEX_MANAGED_BY_NPM: '1',
      ...(codex.root ? { CODEX_MANAGED_PACKAGE_ROOT: codex.root } : {}),
      PATH: [codex.pathDir, ctx.env.PATH].filter(Boolean).join(':'),
      NO_COLOR: '1',
    };
    const args = [
      'exec',
      '--json',
      '--skip-git-repo-check',
      '--color',
      'never',
      '-s',
      sandbox,
      ...(hooks ? ['--dangerously-bypass-hook-trust'] : []),
      '-C',
      spec.workspace,
      ...(spec.resume ? ['resume', spec.resume.session] : []),
      prompt,
    ];
    // a resumed session's rollout holds the earlier runs' refusals: only this run's count
    const skip = spec.resume
      ? Math.max(0, (rolloutLines(codexHome, spec.resume.session)?.length ?? 1) - 1)
      : 0;
    return this.proc.run(ctx, {
      cli: 'codex',
      file: codex.bin,
      args,
      env,
      parser: codexParser(),
      afterExit: (events) => rolloutDenials(codexHome, events, skip),
    });
  }

  cancel(): void {
    this.proc.cancel();
  }
}
