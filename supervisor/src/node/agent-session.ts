/**
 * An agent's session kept across a permission ask (docs/security-model.md, "Permission asks"): a
 * claude or codex run that stopped at a refusal (Claude Code refuses a tool call before the act) keeps its
 * transcript in its log dir (the state root, out of every run's reach); the run the person's "allow"
 * launches gets it in its own HOME and continues that session (`claude --resume`, `codex exec resume`) in a new jail that
 * has the allowed folder, instead of starting the task again. A live run's Landlock domain cannot be
 * widened, so the continuation is a new run.
 *
 * The run wrote its HOME: only the transcript is kept, a regular file (not a link) found without
 * following links, of at most MAX_TRANSCRIPT bytes; the session id is checked by the protocol's
 * AgentSessionId (hex and dashes: no path in it).
 */
import { copyFile, lstat, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';

/** The largest transcript kept (a long session's is a few MB). */
export const MAX_TRANSCRIPT = 64 * 1024 * 1024;

/** Where a run keeps its agent session's transcript, in its log dir. */
export const keptDir = (logDir: string): string => path.join(logDir, 'agent-session');

/** Claude Code's folder name for a working directory's sessions (`/a/b.c` → `-a-b-c`). */
export const claudeProjectName = (cwd: string): string => cwd.replace(/[^a-zA-Z0-9]/g, '-');

/** The agent CLIs whose sessions are kept. */
export type AgentCli = 'claude' | 'codex';

const isDir = async (p: string): Promise<boolean> => !!(await lstat(p).catch(() => null))?.isDirectory();

/** A regular file of at most MAX_TRANSCRIPT bytes (not a link). */
const isTranscript = async (p: string): Promise<boolean> => {
  const st = await lstat(p).catch(() => null);
  return !!st?.isFile() && st.size <= MAX_TRANSCRIPT;
};

/**
 * The session's transcript under `root`, found without following links, as a path relative to root:
 * claude's `projects/<folder>/<id>.jsonl`, codex's `sessions/YYYY/MM/DD/rollout-…-<id>.jsonl`.
 */
async function findTranscript(cli: AgentCli, root: string, session: string): Promise<string | null> {
  const top = cli === 'claude' ? 'projects' : 'sessions';
  if (!(await isDir(root)) || !(await isDir(path.join(root, top)))) return null;
  const want = (name: string): boolean =>
    cli === 'claude' ? name === `${session}.jsonl` : name.endsWith(`-${session}.jsonl`);
  const walk = async (rel: string, depth: number): Promise<string | null> => {
    for (const d of await readdir(path.join(root, rel), { withFileTypes: true })) {
      const r = path.join(rel, d.name);
      if (d.isFile() && want(d.name) && (await isTranscript(path.join(root, r)))) return r;
      if (d.isDirectory() && depth > 0) {
        const found = await walk(r, depth - 1);
        if (found) return found;
      }
    }
    return null;
  };
  return walk(top, cli === 'claude' ? 1 : 3);
}

/** Where a CLI keeps its sessions in a run's HOME. */
const cliRoot = (cli: AgentCli, scratchDir: string): string =>
  path.join(scratchDir, 'home', cli === 'claude' ? '.claude' : '.codex');

/** Copies the run's transcript of `session` into its log dir; false when there is none to keep. */
export async function keepSession(
  cli: AgentCli,
  scratchDir: string,
  logDir: string,
  session: string,
): Promise<boolean> {
  const root = cliRoot(cli, scratchDir);
  const rel = await findTranscript(cli, root, session);
  if (!rel) return false;
  const to = path.join(keptDir(logDir), rel);
  await mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await copyFile(path.join(root, rel), to);
  return true;
}

/**
 * Puts a kept transcript into a new run's HOME where its CLI looks for it: claude under the folder
 * of the new working directory (`cwd`; a worktree flow gets a new one each run), codex where it was.
 */
export async function restoreSession(
  cli: AgentCli,
  fromLogDir: string,
  session: string,
  scratchDir: string,
  cwd: string,
): Promise<void> {
  const rel = await findTranscript(cli, keptDir(fromLogDir), session);
  if (!rel) throw new Error(`the transcript of session ${session} was not kept`);
  const to =
    cli === 'claude'
      ? path.join(cliRoot(cli, scratchDir), 'projects', claudeProjectName(cwd), `${session}.jsonl`)
      : path.join(cliRoot(cli, scratchDir), rel);
  await mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await copyFile(path.join(keptDir(fromLogDir), rel), to);
}
