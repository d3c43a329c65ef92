/**
 * The `claude` runner: the real Claude Code CLI (npm @anthropic-ai/claude-code, a native binary) in
 * print mode with `--output-format stream-json --verbose`, non-essential traffic off, stdin closed,
 * and the model reached only through the supervisor's loopback proxy (ANTHROPIC_BASE_URL + this run's
 * token as its API key). Its permission mode stays the default: tools that need approval are denied in
 * print mode, and such a denial ends the run as needs-input even though the CLI exits 0. Claude Code
 * refuses such a tool call before it acts; once the person allows the ask, the next run continues the
 * same session (`--resume`, the supervisor restores its transcript: agent-session.ts) with a note of
 * what was allowed, rather than starting the task again. Before that, Runboard's PreToolUse hook
 * (agent-hook.ts, given with `--settings`) asks the person for a path outside the run's trees while the
 * run waits at the tool call.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentCliProcess, agentMcpServers, notStarted, packageFile, renderPrompt } from './agent-cli.ts';
import { claudeParser } from './agent-events.ts';
import { hookSettings } from './agent-hook-config.ts';
import type { Runner, RunnerContext, RunnerOutcome } from './runner.ts';

export function findClaude(env: NodeJS.ProcessEnv): string | null {
  if (env.RUNBOARD_CLAUDE_BIN) return env.RUNBOARD_CLAUDE_BIN;
  return packageFile(`@anthropic-ai/claude-code-${process.platform}-${process.arch}`, 'claude');
}

export class ClaudeRunner implements Runner {
  private readonly proc = new AgentCliProcess();

  async run(ctx: RunnerContext): Promise<RunnerOutcome> {
    const { spec } = ctx;
    const bin = findClaude(ctx.env);
    if (!bin)
      return notStarted(
        `the Claude Code CLI is not installed for ${process.platform}-${process.arch} (npm @anthropic-ai/claude-code)`,
      );
    if (!spec.model)
      return notStarted(
        `flow "${spec.flow.name}" has no provider: a claude run needs \`provider: anthropic\``,
      );
    let prompt: string;
    try {
      // continuing a session the person's allow resumed: the agent is told what was allowed
      prompt = spec.resume ? spec.resume.note : renderPrompt(spec);
    } catch (err) {
      return notStarted((err as Error).message);
    }
    const args = [
      '-p',
      '--output-format',
      'stream-json',
      '--verbose',
      '--model',
      spec.model.model ?? 'claude-sonnet-4-5',
    ];
    // Edits in the workspace are the job of a writable flow (the jail confines them to the worktree);
    // anything else that needs approval (e.g. shell commands that write) is denied in print mode, and
    // that denial is evidence the run reports (needs-input), not something the agent may skip over.
    if (spec.flow.readOnly) args.push('--disallowedTools', 'Write,Edit,MultiEdit,NotebookEdit');
    else args.push('--permission-mode', 'acceptEdits');
    // The flow's other writable trees (and those the person allowed on an ask) are claude's too: its
    // own permission check would refuse edits there that the jail allows.
    for (const dir of spec.flow.readOnly ? [] : (spec.flow.sandbox?.writable ?? []))
      args.push('--add-dir', dir);
    const servers = agentMcpServers(ctx);
    if (typeof servers === 'string') return notStarted(servers);
    if (Object.keys(servers).length) {
      const dir = path.join(ctx.env.HOME ?? '/tmp', '.runboard');
      mkdirSync(dir, { recursive: true });
      const file = path.join(dir, 'mcp.json');
      // passEnv: claude starts its MCP servers with its own environment (below), so nothing to write
      const mcpServers = Object.fromEntries(
        Object.entries(servers).map(([name, { passEnv: _, ...mcp }]) => [name, { type: 'stdio', ...mcp }]),
      );
      writeFileSync(file, JSON.stringify({ mcpServers }));
      // The flow granted the desktop; the document tools are confined to the workspace like the run's
      // own edits: their tools need no further approval (print mode would deny them).
      const allowed = Object.keys(servers).map((n) => `mcp__${n}`);
      args.push('--mcp-config', file, '--strict-mcp-config', '--allowedTools', allowed.join(','));
    }
    // Asks before the act: Runboard's permission hook, on the run's ask socket (agent-hook.ts)
    const hooks = hookSettings('claude', ctx);
    if (hooks) args.push('--settings', JSON.stringify(hooks));
    if (spec.resume) args.push('--resume', spec.resume.session);
    args.push('--', prompt);
    const env: NodeJS.ProcessEnv = {
      ...ctx.env,
      ANTHROPIC_BASE_URL: spec.model.baseUrl,
      ANTHROPIC_API_KEY: spec.model.token,
      ...(spec.vision ? { RUNBOARD_VISION_TOKEN: spec.vision.token } : {}),
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      NO_COLOR: '1',
    };
    return this.proc.run(ctx, { cli: 'claude', file: bin, args, env, parser: claudeParser() });
  }

  cancel(): void {
    this.proc.cancel();
  }
}
