/**
 * The agent CLIs' permission hook (dist/agent-hook.cjs): claude's and codex's PreToolUse hook, run by
 * the CLI (inside the run's jail, with node) before each file or shell tool call. It reads the call
 * (JSON on stdin), finds what it would touch outside the run's own trees (agent-hook-paths.ts; its
 * private /tmp too), and
 * asks the run's ask socket (RUNBOARD_ASK_SOCKET: the worker, then the supervisor, which decides and
 * may wait for the person: docs/security-model.md "Asks that wait at the tool call") before the act.
 *
 * Its answer to the CLI (stdout, the PreToolUse JSON both CLIs read):
 * - a path denied (by the person, by the time limit, or never offered): `deny` with Runboard's words,
 *   which the CLI gives the model as the tool's result; the agent goes on without it;
 * - every path allowed, at least one by the person: `allow` (claude: its own prompt, which print mode
 *   would deny, is skipped; codex: nothing, its own sandbox still applies);
 * - nothing outside the run's trees, only paths it may use already, or no ask socket: nothing, so the
 *   CLI's own rules decide as they did before the hook.
 *
 * The run can rewrite none of this (it lies in Runboard's install, read-only to runs), but it can ask
 * the socket itself or make the CLI skip the hook: that gains it nothing, since the supervisor decides
 * what is offered and the jail what is reached.
 */
import { accessSync, constants, statSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { toolAsks, type HookAsk } from './agent-hook-paths.ts';

/** RunEnv.askSocket and RunEnv.workspace (named here: this bundle starts at every tool call, lean). */
const ASK_SOCKET = 'RUNBOARD_ASK_SOCKET';
const WORKSPACE = 'RUNBOARD_WORKSPACE';

interface Answer {
  decision: 'allow' | 'deny';
  message: string;
}

/** The supervisor's answer for a path the run may use already (asks.ts liveAsk): no one was asked. */
const ALREADY = /^Runboard: .* is (?:writable|readable) already$/;

/**
 * A path in the run's private /tmp (the jail's tmpfs: new names there are the run's own, and the
 * folders on the way to its trees are read-only copies): its deepest existing folder is writable here.
 * Asked, the supervisor would see the machine's /tmp, which it never offers.
 */
function inPrivateTmp(p: string): boolean {
  if (!p.startsWith('/tmp/')) return false;
  let dir = path.dirname(p);
  for (;;) {
    try {
      statSync(dir);
      break;
    } catch {
      dir = path.dirname(dir);
    }
  }
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function readStdin(): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => (s += d));
    process.stdin.on('end', () => resolve(s));
    process.stdin.on('error', reject);
  });
}

/** One ask on the socket: one JSON line out, one back (the supervisor may wait for the person). */
function ask(socket: string, a: HookAsk, tool: string): Promise<Answer | null> {
  return new Promise((resolve) => {
    const s = net.connect(socket);
    let buf = '';
    s.setEncoding('utf8');
    s.on('connect', () =>
      s.write(JSON.stringify({ kind: a.kind, path: a.path, tool: tool.slice(0, 200) }) + '\n'),
    );
    s.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      s.end();
      try {
        const r = JSON.parse(buf.slice(0, nl)) as Answer;
        resolve(r.decision === 'allow' || r.decision === 'deny' ? r : null);
      } catch {
        resolve(null);
      }
    });
    s.on('error', () => resolve(null));
    s.on('close', () => resolve(null));
  });
}

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  const cli = argv.includes('codex') ? 'codex' : 'claude';
  let call: { tool_name?: unknown; tool_input?: unknown; cwd?: unknown };
  try {
    call = JSON.parse(await readStdin()) as typeof call;
  } catch {
    return ''; // not a tool call: the CLI's own rules
  }
  const socket = env[ASK_SOCKET];
  const tool = typeof call.tool_name === 'string' ? call.tool_name : '';
  const cwd = typeof call.cwd === 'string' && call.cwd.startsWith('/') ? call.cwd : process.cwd();
  if (!socket || !tool) return '';
  const own = [cwd, env[WORKSPACE], env.HOME, env.TMPDIR, '/dev'].filter(
    (d): d is string => !!d && d.startsWith('/'),
  );
  const asks = toolAsks(tool, call.tool_input, { cwd, own, home: env.HOME, tmpdir: env.TMPDIR }).filter(
    (a) => !inPrivateTmp(a.path),
  );
  const answers: Answer[] = [];
  for (const a of asks) {
    const r = await ask(socket, a, tool);
    if (!r) return ''; // the socket is gone (the run ends): the CLI's own rules
    answers.push(r);
    if (r.decision === 'deny') break;
  }
  const denied = answers.find((a) => a.decision === 'deny');
  const personAllowed = answers.some((a) => a.decision === 'allow' && !ALREADY.test(a.message));
  if (!denied && (!personAllowed || cli === 'codex')) return '';
  return JSON.stringify({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: denied ? 'deny' : 'allow',
      permissionDecisionReason: (denied ?? answers.find((a) => !ALREADY.test(a.message))!).message,
    },
  });
}

// Run as the hook (the bundle's entry); imported by a test, it only exports.
if (process.argv[1]?.endsWith('agent-hook.cjs'))
  main(process.argv.slice(2), process.env).then(
    (out) => {
      if (out) process.stdout.write(out + '\n');
    },
    (err: unknown) => {
      process.stderr.write(`runboard agent hook: ${(err as Error).message}\n`);
      process.exitCode = 0; // a broken hook must not block the CLI: its own rules still apply
    },
  );
