/**
 * The permission hook (agent-hook.ts) as each agent CLI is told about it: the same PreToolUse
 * settings for both (claude: `--settings`; codex: `hooks.json` in the run's CODEX_HOME). Null when the
 * run has no ask socket (a fleet host's worker, an older supervisor) or the hook is not built: the
 * CLI then runs as before (its refusals are asked after the act).
 */
import { RunEnv } from '@runboard/supervisor/protocol';
import { distFile } from './load.ts';
import type { RunnerContext } from './runner.ts';

/** Claude Code's tools that name a file or run a shell command (codex: every tool, it names few). */
const CLAUDE_TOOLS = 'Read|Write|Edit|MultiEdit|NotebookEdit|NotebookRead|Glob|Grep|LS|Bash';
/** supervisor live-asks.ts DEFAULT_ASK_TIMEOUT_MS: how long the supervisor lets an ask wait. */
const ASK_TIMEOUT_MS = 10 * 60_000;

const sh = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

export interface HookSettings {
  hooks: {
    PreToolUse: { matcher: string; hooks: { type: 'command'; command: string; timeout: number }[] }[];
  };
}

export function hookSettings(cli: 'claude' | 'codex', ctx: RunnerContext): HookSettings | null {
  if (!ctx.env[RunEnv.askSocket]) return null;
  const file = distFile('agent-hook.cjs');
  if (!file) return null;
  // The hook waits as long as the supervisor lets the ask wait, and a little longer: the supervisor's
  // own time limit answers first (a denial in words), never the CLI's.
  const timeout = Math.ceil((ctx.spec.flow.askTimeoutMs ?? ASK_TIMEOUT_MS) / 1000) + 60;
  return {
    hooks: {
      PreToolUse: [
        {
          matcher: cli === 'claude' ? CLAUDE_TOOLS : '.*',
          hooks: [{ type: 'command', command: `${sh(process.execPath)} ${sh(file)} ${cli}`, timeout }],
        },
      ],
    },
  };
}
