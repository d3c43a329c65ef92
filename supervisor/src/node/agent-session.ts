/**
 * An agent's session kept across a permission ask (docs/security-model.md, "Permission asks"): a
 * claude run that stopped because Claude Code refused a tool call (before the act) keeps its
 * transcript in its log dir (the state root, out of every run's reach); the run the person's "allow"
 * launches gets it in its own HOME and continues that session (`claude --resume`) in a new jail that
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
export const keptTranscript = (logDir: string, session: string): string =>
  path.join(logDir, 'agent-session', `${session}.jsonl`);

/** Claude Code's folder name for a working directory's sessions (`/a/b.c` → `-a-b-c`). */
export const claudeProjectName = (cwd: string): string => cwd.replace(/[^a-zA-Z0-9]/g, '-');

/** The session's transcript in a claude HOME: a regular file in a real folder of `.claude/projects`. */
async function findTranscript(home: string, session: string): Promise<string | null> {
  const projects = path.join(home, '.claude', 'projects');
  for (const p of [path.join(home, '.claude'), projects]) {
    const st = await lstat(p).catch(() => null);
    if (!st?.isDirectory()) return null;
  }
  for (const d of await readdir(projects, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    const file = path.join(projects, d.name, `${session}.jsonl`);
    const st = await lstat(file).catch(() => null);
    if (st?.isFile() && st.size <= MAX_TRANSCRIPT) return file;
  }
  return null;
}

/** Copies the run's transcript of `session` into its log dir; false when there is none to keep. */
export async function keepClaudeSession(
  scratchDir: string,
  logDir: string,
  session: string,
): Promise<boolean> {
  const file = await findTranscript(path.join(scratchDir, 'home'), session);
  if (!file) return false;
  const to = keptTranscript(logDir, session);
  await mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await copyFile(file, to);
  return true;
}

/** Puts a kept transcript into a new run's HOME, under the folder claude looks in for `cwd`. */
export async function restoreClaudeSession(
  fromLogDir: string,
  session: string,
  scratchDir: string,
  cwd: string,
): Promise<void> {
  const dir = path.join(scratchDir, 'home', '.claude', 'projects', claudeProjectName(cwd));
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await copyFile(keptTranscript(fromLogDir, session), path.join(dir, `${session}.jsonl`));
}
