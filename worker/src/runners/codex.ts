/**
 * The `codex` runner: the real `codex exec --json` (npm @openai/codex) in the run's workspace, with
 * stdin closed, and the model reached only through the supervisor's loopback proxy: codex's config (in
 * the run's own HOME) names a model provider whose base URL is the proxy and whose key is this run's
 * token. codex-cli 0.169 speaks the OpenAI Responses API (wire_api = "responses").
 *
 * Codex's own sandbox cannot run inside Runboard's: on Linux it is bubblewrap, which needs to write
 * /proc/self/uid_map and to change mount propagation, and a Landlock domain (the run jail) forbids
 * both (bwrap: "setting up uid map: Permission denied", then "Failed to make / slave"); its legacy
 * Landlock mode refuses to run without bwrap. So codex runs with `danger-full-access` and the jail is
 * the sandbox: writes only to the worktree (not even that for read-only flows) and the run's scratch
 * dir, TCP only to the model proxy. docs/agents.md has the details.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentCliProcess, desktopMcpServer, notStarted, packageFile, renderPrompt } from './agent-cli.ts';
import { codexParser } from './agent-events.ts';
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
      prompt = renderPrompt(spec);
    } catch (err) {
      return notStarted((err as Error).message);
    }
    const home = ctx.env.HOME ?? path.join(ctx.env.TMPDIR ?? '/tmp', 'home');
    const codexHome = path.join(home, '.codex');
    mkdirSync(codexHome, { recursive: true, mode: 0o700 });
    // See the header: the run jail confines codex; codex's bubblewrap sandbox cannot nest in it.
    const sandbox = 'danger-full-access';
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
    if (spec.flow.desktop) {
      const mcp = desktopMcpServer(ctx.env);
      if (!mcp)
        return notStarted(
          'flow asks for the desktop (desktop: true) but `desktop-cli` is not installed (set RUNBOARD_DESKTOP_CLI)',
        );
      lines.push(
        '',
        '[mcp_servers.desktop]',
        `command = ${toml(mcp.command)}`,
        `args = [${mcp.args.map(toml).join(', ')}]`,
      );
    }
    writeFileSync(path.join(codexHome, 'config.toml'), lines.join('\n') + '\n', { mode: 0o600 });
    const env: NodeJS.ProcessEnv = {
      ...ctx.env,
      CODEX_HOME: codexHome,
      RUNBOARD_MODEL_TOKEN: spec.model.token,
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
      '-C',
      spec.workspace,
      prompt,
    ];
    return this.proc.run(ctx, { cli: 'codex', file: codex.bin, args, env, parser: codexParser() });
  }

  cancel(): void {
    this.proc.cancel();
  }
}
