/**
 * Coding-agent CLIs' JSON event streams → one Runboard vocabulary, so the inspector shows what
 * the agent did (messages, tool calls, commands, files changed, token usage) whichever CLI ran.
 * Pure parsing: one line in, zero or more events out. Unknown lines are not errors (CLIs add fields and
 * event types between versions); they stay in the raw stdout.log.
 */
import { outsideRefusal } from '../tools/documents/paths.ts';

export type AgentEvent =
  | { kind: 'session'; id: string; detail?: string }
  | { kind: 'message'; text: string }
  | { kind: 'reasoning'; text: string }
  | { kind: 'tool-call'; id?: string; tool: string; input: unknown }
  | { kind: 'tool-result'; id?: string; ok: boolean; output: string }
  | {
      kind: 'command';
      id?: string;
      command: string;
      status: 'started' | 'completed' | 'failed' | 'declined';
      exitCode: number | null;
      output: string;
    }
  | { kind: 'files-changed'; files: { path: string; change: string }[]; ok: boolean }
  | { kind: 'usage'; input: number; output: number; cached: number; costUsd?: number }
  | { kind: 'permission-denied'; tool: string; detail: string; id?: string }
  | { kind: 'warning'; message: string }
  | { kind: 'error'; message: string }
  /** The CLI's own closing claim: `ok` is what it says, not what Runboard concludes. */
  | { kind: 'final'; ok: boolean; result: string | null; detail?: string };

export interface AgentParser {
  /** One stdout line of the CLI. */
  line(text: string): AgentEvent[];
}

type Json = Record<string, unknown>;
const str = (v: unknown): string =>
  typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function parseLine(text: string): Json | null {
  const t = text.trim();
  if (!t.startsWith('{')) return null;
  try {
    const v = JSON.parse(t) as unknown;
    return v && typeof v === 'object' ? (v as Json) : null;
  } catch {
    return null;
  }
}

/** Output that says the OS or a sandbox refused a write: evidence of a permission denial. */
const DENIED = /permission denied|read-only file system|operation not permitted|EACCES|EROFS|EPERM/i;
/**
 * A folder outside the run's reads is absent for it ("Directory nonexistent"): passed on as a possible
 * refusal, which the supervisor keeps only for a folder the allow-list hides (denials.ts).
 */
const MAYBE_HIDDEN = /directory nonexistent|no such file or directory/i;
const refusal = (l: string): boolean => DENIED.test(l) || MAYBE_HIDDEN.test(l);
/** codex refusing a tool call it may not approve on its own (approval policy "never"). */
const MCP_REFUSED = /requires approval|not approved|was (declined|rejected)/i;

/** The text of an MCP tool result as codex prints it (`{content: [{type: 'text', text}], …}`). */
function mcpText(result: unknown): string {
  const content = (result as Json | null)?.content;
  return Array.isArray(content) ? (content as Json[]).map((c) => str(c.text)).join('\n') : str(result);
}

/**
 * `codex exec --json` (codex-cli 0.169): thread.started, turn.started, item.started/updated/completed
 * (agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search, todo_list,
 * error), turn.completed (usage), turn.failed, error.
 */
export function codexParser(): AgentParser {
  return {
    line(text) {
      const e = parseLine(text);
      if (!e) return [];
      const out: AgentEvent[] = [];
      switch (e.type) {
        case 'thread.started':
          out.push({ kind: 'session', id: str(e.thread_id) });
          break;
        case 'item.started':
        case 'item.completed': {
          const item = (e.item ?? {}) as Json;
          const done = e.type === 'item.completed';
          const id = str(item.id);
          switch (item.type) {
            case 'agent_message':
              if (done) out.push({ kind: 'message', text: str(item.text) });
              break;
            case 'reasoning':
              if (done) out.push({ kind: 'reasoning', text: str(item.text) });
              break;
            case 'command_execution': {
              const status = str(item.status);
              const exitCode = typeof item.exit_code === 'number' ? item.exit_code : null;
              const output = str(item.aggregated_output);
              out.push({
                kind: 'command',
                id,
                command: str(item.command),
                status: !done
                  ? 'started'
                  : status === 'declined'
                    ? 'declined'
                    : exitCode === 0
                      ? 'completed'
                      : 'failed',
                exitCode,
                output,
              });
              if (done && status === 'declined')
                out.push({ kind: 'permission-denied', tool: 'command', detail: str(item.command), id });
              else if (done && exitCode !== 0 && refusal(output))
                out.push({
                  kind: 'permission-denied',
                  tool: 'command',
                  detail: `${str(item.command)}: ${output.trim().split('\n').find(refusal) ?? ''}`,
                  id,
                });
              break;
            }
            case 'file_change': {
              if (!done) break;
              const changes = Array.isArray(item.changes) ? (item.changes as Json[]) : [];
              const ok = str(item.status) !== 'failed';
              const files = changes.map((c) => ({ path: str(c.path), change: str(c.kind) }));
              out.push({ kind: 'files-changed', files, ok });
              if (!ok)
                out.push({
                  kind: 'permission-denied',
                  tool: 'apply_patch',
                  detail: `patch not applied to ${files.map((f) => f.path).join(', ')}`,
                  id,
                });
              break;
            }
            case 'mcp_tool_call':
              if (!done)
                out.push({
                  kind: 'tool-call',
                  id,
                  tool: `${str(item.server)}.${str(item.tool)}`,
                  input: item.arguments,
                });
              else {
                const failed = str(item.status) === 'failed';
                const error = str((item.error as Json | null)?.message ?? item.error);
                out.push({
                  kind: 'tool-result',
                  id,
                  ok: !failed,
                  output: error || mcpText(item.result),
                });
                // codex refuses an MCP call it may not approve ("requires approval, but approval policy is
                // never") and the model may still claim success: evidence of a denial.
                const outside =
                  str(item.server) === 'documents' ? outsideRefusal(error || mcpText(item.result)) : null;
                if (outside)
                  out.push({
                    kind: 'permission-denied',
                    tool: `documents.${str(item.tool)}`,
                    detail: outside,
                    id,
                  });
                else if (failed && (MCP_REFUSED.test(error) || DENIED.test(error)))
                  out.push({
                    kind: 'permission-denied',
                    tool: `${str(item.server)}.${str(item.tool)}`,
                    detail: error,
                    id,
                  });
              }
              break;
            case 'web_search':
              if (!done) out.push({ kind: 'tool-call', id, tool: 'web_search', input: item.query });
              break;
            case 'error':
              // Non-fatal notices (e.g. unknown model metadata); a fatal error comes as turn.failed.
              out.push({ kind: 'warning', message: str(item.message) });
              break;
          }
          break;
        }
        case 'turn.completed': {
          const u = (e.usage ?? {}) as Json;
          out.push({
            kind: 'usage',
            input: num(u.input_tokens),
            output: num(u.output_tokens),
            cached: num(u.cached_input_tokens),
          });
          out.push({ kind: 'final', ok: true, result: null });
          break;
        }
        case 'turn.failed':
          out.push({
            kind: 'final',
            ok: false,
            result: null,
            detail: str((e.error as Json | undefined)?.message),
          });
          break;
        case 'error':
          out.push({ kind: 'error', message: str(e.message) });
          break;
      }
      return out;
    },
  };
}

/** Shell tools of codex whose calls are commands (unified exec, and the classic shell tools). */
const CODEX_SHELL_TOOLS = new Set(['exec_command', 'shell', 'shell_command', 'local_shell']);

/**
 * Commands that codex's `--json` stream leaves out. codex-cli 0.169 emits no command_execution item for
 * a command that its own sandbox refused (seen with workspace-write: the model gets "Process exited
 * with code 1 … Read-only file system", the stream shows nothing), so a run would look clean. The
 * session rollout (`$CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl`) has every call and its output:
 * each failed shell call with a denial in its output that no streamed command already reported becomes
 * a `command` (failed) and a `permission-denied` event.
 */
export function codexRolloutDenials(rollout: string, streamed: readonly AgentEvent[]): AgentEvent[] {
  const reported = streamed
    .filter(
      (e): e is Extract<AgentEvent, { kind: 'command' }> => e.kind === 'command' && e.status !== 'started',
    )
    .map((e) => e.output);
  const calls = new Map<string, string>();
  const out: AgentEvent[] = [];
  for (const text of rollout.split('\n')) {
    const p = (parseLine(text)?.payload ?? null) as Json | null;
    if (!p) continue;
    if (p.type === 'function_call' && CODEX_SHELL_TOOLS.has(str(p.name))) {
      let cmd = str(p.arguments);
      try {
        const a = JSON.parse(cmd) as Json;
        cmd = Array.isArray(a.command)
          ? (a.command as unknown[]).map(str).join(' ')
          : str(a.cmd ?? a.command) || cmd;
      } catch {
        // arguments that are not JSON: shown as they are
      }
      calls.set(str(p.call_id), cmd);
    } else if (p.type === 'function_call_output' && calls.has(str(p.call_id))) {
      let output = typeof p.output === 'string' ? p.output : JSON.stringify(p.output ?? '');
      let exitCode: number | null = null;
      const m = /Process exited with code (-?\d+)/.exec(output);
      if (m) {
        exitCode = Number(m[1]);
        output = output.slice(output.indexOf('\nOutput:\n') >= 0 ? output.indexOf('\nOutput:\n') + 9 : 0);
      } else {
        try {
          const o = JSON.parse(output) as Json; // the classic shell tool: {output, metadata: {exit_code}}
          exitCode =
            typeof (o.metadata as Json | undefined)?.exit_code === 'number'
              ? num((o.metadata as Json).exit_code)
              : null;
          output = str(o.output);
        } catch {
          // not a shell result we know: nothing to conclude
        }
      }
      const line = output.split('\n').find(refusal);
      if (exitCode === null || exitCode === 0 || !line) continue;
      if (reported.some((r) => r.includes(line.trim()))) continue;
      const id = str(p.call_id);
      const command = calls.get(id)!;
      out.push({ kind: 'command', id, command, status: 'failed', exitCode, output });
      out.push({ kind: 'permission-denied', tool: 'command', detail: `${command}: ${line.trim()}`, id });
    }
  }
  return out;
}

const WRITE_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);

/**
 * `claude -p --output-format stream-json --verbose` (Claude Code 2.1): system/init, assistant messages
 * (text, thinking, tool_use), user messages (tool_result), system/permission_denied, and one closing
 * `result` (subtype, is_error, result, usage, permission_denials).
 */
/** A tool result that is Runboard's hook's denial, as Claude Code words it ("PreToolUse:Write hook error: Runboard…"). */
const RUNBOARD_HOOK_ANSWER = /^(?:Error: )?PreToolUse:\S+ hook error: Runboard\b/;

export function claudeParser(): AgentParser {
  const denied = new Set<string>();
  const pendingWrites = new Map<string, string>(); // tool_use id → file path
  const documentCalls = new Map<string, string>(); // tool_use id → document tool
  return {
    line(text) {
      const e = parseLine(text);
      if (!e) return [];
      const out: AgentEvent[] = [];
      const deny = (tool: string, detail: string, id?: string): void => {
        if (id && denied.has(id)) return;
        if (id) denied.add(id);
        out.push({ kind: 'permission-denied', tool, detail, ...(id ? { id } : {}) });
      };
      if (e.type === 'system' && e.subtype === 'init') {
        out.push({ kind: 'session', id: str(e.session_id), detail: `model ${str(e.model)}` });
      } else if (e.type === 'system' && e.subtype === 'permission_denied') {
        deny(str(e.tool_name), str(e.message), str(e.tool_use_id) || undefined);
      } else if (e.type === 'assistant') {
        const content = ((e.message as Json | undefined)?.content ?? []) as Json[];
        for (const c of content) {
          if (c.type === 'text') out.push({ kind: 'message', text: str(c.text) });
          else if (c.type === 'thinking') out.push({ kind: 'reasoning', text: str(c.thinking) });
          else if (c.type === 'tool_use') {
            const input = (c.input ?? {}) as Json;
            out.push({ kind: 'tool-call', id: str(c.id), tool: str(c.name), input });
            if (c.name === 'Bash')
              out.push({
                kind: 'command',
                id: str(c.id),
                command: str(input.command),
                status: 'started',
                exitCode: null,
                output: '',
              });
            const doc = /^mcp__documents__(.+)$/.exec(str(c.name));
            if (doc) documentCalls.set(str(c.id), doc[1]!);
            if (WRITE_TOOLS.has(str(c.name)))
              pendingWrites.set(str(c.id), str(input.file_path ?? input.notebook_path));
          }
        }
      } else if (e.type === 'user') {
        const content = ((e.message as Json | undefined)?.content ?? []) as Json[];
        for (const c of Array.isArray(content) ? content : []) {
          if (c.type !== 'tool_result') continue;
          const id = str(c.tool_use_id);
          const output = Array.isArray(c.content)
            ? (c.content as Json[]).map((x) => str(x.text)).join('')
            : str(c.content);
          const ok = c.is_error !== true;
          out.push({ kind: 'tool-result', id, ok, output });
          // Runboard's permission hook answered this call (agent-hook.ts): the person's or the
          // supervisor's answer, which the agent was told; not a denial for the person to resolve
          if (!ok && RUNBOARD_HOOK_ANSWER.test(output)) denied.add(id);
          const docTool = documentCalls.get(id);
          const outside = docTool && !ok ? outsideRefusal(output) : null;
          if (outside) deny(`documents.${docTool}`, outside, id);
          const file = pendingWrites.get(id);
          if (file !== undefined) {
            pendingWrites.delete(id);
            if (ok) out.push({ kind: 'files-changed', files: [{ path: file, change: 'update' }], ok: true });
          }
        }
      } else if (e.type === 'result') {
        const u = (e.usage ?? {}) as Json;
        out.push({
          kind: 'usage',
          input: num(u.input_tokens),
          output: num(u.output_tokens),
          cached: num(u.cache_read_input_tokens),
          ...(typeof e.total_cost_usd === 'number' ? { costUsd: e.total_cost_usd } : {}),
        });
        for (const d of (Array.isArray(e.permission_denials) ? e.permission_denials : []) as Json[])
          deny(str(d.tool_name), str(d.tool_input), str(d.tool_use_id) || undefined);
        out.push({
          kind: 'final',
          ok: e.is_error !== true && e.subtype === 'success',
          result: typeof e.result === 'string' ? e.result : null,
          detail: str(e.subtype),
        });
      }
      return out;
    },
  };
}

/** One line for the run's event log. */
export function describe(e: AgentEvent): string {
  const cut = (s: string, n = 300): string => (s.length > n ? s.slice(0, n) + '…' : s);
  switch (e.kind) {
    case 'session':
      return `agent session ${e.id}${e.detail ? ` (${e.detail})` : ''}`;
    case 'message':
      return `agent: ${cut(e.text)}`;
    case 'reasoning':
      return `agent thinking: ${cut(e.text)}`;
    case 'tool-call':
      return `tool call ${e.tool} ${cut(JSON.stringify(e.input ?? null), 200)}`;
    case 'tool-result':
      return `tool result${e.ok ? '' : ' (error)'}: ${cut(e.output, 200)}`;
    case 'command':
      return e.status === 'started'
        ? `$ ${cut(e.command, 200)}`
        : `$ ${cut(e.command, 120)} → ${e.status}${e.exitCode !== null ? ` (exit ${e.exitCode})` : ''}`;
    case 'files-changed':
      return `files ${e.ok ? 'changed' : 'NOT changed'}: ${e.files.map((f) => `${f.change} ${f.path}`).join(', ')}`;
    case 'usage':
      return `tokens: ${e.input} in, ${e.output} out${e.cached ? `, ${e.cached} cached` : ''}`;
    case 'permission-denied':
      return `permission denied: ${e.tool} ${cut(e.detail, 200)}`;
    case 'warning':
      return `agent warning: ${cut(e.message)}`;
    case 'error':
      return `agent error: ${cut(e.message)}`;
    case 'final':
      return `agent finished (${e.ok ? 'claims success' : 'reports failure'}${e.detail ? `: ${cut(e.detail, 200)}` : ''})`;
  }
}
