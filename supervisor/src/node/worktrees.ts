/**
 * Git worktrees for coding-agent runs (issue 6): each `worktree: true` run gets its own worktree and
 * branch of the granted repository, so parallel runs never touch each other or the user's checkout.
 *
 *   <repo>/.runboard/worktrees/<run-id>   branch runboard/<run-id>, from the checkout's HEAD
 *   run ends   → changes committed on that branch (by the supervisor, not the agent), diff summary recorded
 *   keep       → branch merged into the base branch, worktree + branch removed
 *   discard    → worktree + branch removed
 *
 * The worktree lives inside the repository, hence inside the grant; `/.runboard/` goes to the
 * repository's .git/info/exclude so the user's `git status` stays clean. Every git call here runs with
 * hooks disabled: the supervisor runs unsandboxed and must not execute code from the repository.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import type { DiffSummary, WorktreeInfo } from '../protocol/index.ts';

export class WorktreeError extends Error {}

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Runboard',
  GIT_AUTHOR_EMAIL: 'runboard@localhost',
  GIT_COMMITTER_NAME: 'Runboard',
  GIT_COMMITTER_EMAIL: 'runboard@localhost',
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
};

async function git(cwd: string, args: string[], allowFail = false): Promise<string> {
  const r = await execa('git', ['-c', 'core.hooksPath=/dev/null', '-c', 'commit.gpgsign=false', ...args], {
    cwd,
    env: GIT_ENV,
    reject: false,
    stdin: 'ignore',
  });
  if (r.exitCode !== 0 && !allowFail)
    throw new WorktreeError(`git ${args[0]} failed: ${(r.stderr || r.stdout || '').toString().trim()}`);
  return String(r.stdout ?? '').trim();
}

const isInside = (parent: string, child: string): boolean => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

export interface CreatedWorktree {
  info: WorktreeInfo;
  /** Where the run works: the card's workspace, mapped into the worktree. */
  workspace: string;
}

/**
 * One git operation at a time per repository: parallel runs on one repository would otherwise race in
 * git's shared state (`git worktree add` twice at once fails with "failed to read …/commondir").
 */
const repoLocks = new Map<string, Promise<unknown>>();
function withRepoLock<T>(repo: string, fn: () => Promise<T>): Promise<T> {
  const prev = repoLocks.get(repo) ?? Promise.resolve();
  const next = prev.then(fn, fn);
  const tail = next.catch(() => undefined);
  repoLocks.set(repo, tail);
  void tail.then(() => {
    if (repoLocks.get(repo) === tail) repoLocks.delete(repo);
  });
  return next;
}

/** Creates the run's worktree. `workspace` and `grantPath` are realpaths (validated by the grant). */
export async function createWorktree(
  workspace: string,
  grantPath: string,
  runId: string,
): Promise<CreatedWorktree> {
  const top = await git(workspace, ['rev-parse', '--show-toplevel'], true);
  if (!top)
    throw new WorktreeError(
      `${workspace} is not in a git repository; a worktree flow needs one (git init and commit)`,
    );
  const repo = realpathSync(top);
  if (!isInside(grantPath, repo))
    throw new WorktreeError(
      `the repository ${repo} reaches outside the grant ${grantPath}; grant the repository's folder itself`,
    );
  return withRepoLock(repo, () => addWorktree(repo, workspace, runId));
}

async function addWorktree(repo: string, workspace: string, runId: string): Promise<CreatedWorktree> {
  const baseCommit = await git(repo, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], true);
  if (!baseCommit)
    throw new WorktreeError(`the repository ${repo} has no commit yet; commit once, then run again`);
  const baseBranch = (await git(repo, ['symbolic-ref', '--short', '-q', 'HEAD'], true)) || null;
  const commonDir = path.resolve(repo, await git(repo, ['rev-parse', '--git-common-dir']));
  const exclude = path.join(commonDir, 'info', 'exclude');
  const excluded = existsSync(exclude) && readFileSync(exclude, 'utf8').split('\n').includes('/.runboard/');
  if (!excluded) {
    mkdirSync(path.dirname(exclude), { recursive: true });
    appendFileSync(exclude, '\n# Runboard run worktrees\n/.runboard/\n');
  }
  const dir = path.join(repo, '.runboard', 'worktrees', runId);
  const branch = `runboard/${runId}`;
  mkdirSync(path.dirname(dir), { recursive: true });
  await git(repo, ['worktree', 'add', '--quiet', '-b', branch, dir, baseCommit]);
  return {
    info: { repo, path: dir, branch, baseBranch, baseCommit, state: 'active', diff: null },
    workspace: path.join(dir, path.relative(repo, workspace)),
  };
}

/** Commits what the run left in its worktree onto its branch and summarises the diff against the base. */
export function commitWorktree(info: WorktreeInfo, runId: string, title: string): Promise<DiffSummary> {
  return withRepoLock(info.repo, () => commitWorktreeNow(info, runId, title));
}

async function commitWorktreeNow(info: WorktreeInfo, runId: string, title: string): Promise<DiffSummary> {
  await git(info.path, ['add', '-A']);
  const changed = (await git(info.path, ['status', '--porcelain'])).length > 0;
  if (changed)
    await git(info.path, [
      'commit',
      '--quiet',
      '--no-verify',
      '-m',
      `Runboard run ${runId}: ${title}`.slice(0, 200),
    ]);
  const head = await git(info.path, ['rev-parse', 'HEAD']);
  const numstat = await git(info.path, ['diff', '--numstat', '-z', info.baseCommit, head]);
  return { ...parseNumstat(numstat), commit: head === info.baseCommit ? null : head };
}

/** `git diff --numstat -z` → files with +/- (null for binary files). Renames keep their new path. */
export function parseNumstat(out: string): Omit<DiffSummary, 'commit'> {
  const files: DiffSummary['files'] = [];
  const parts = out.split('\0');
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (!p) continue;
    const m = /^(-|\d+)\t(-|\d+)\t(.*)$/s.exec(p);
    if (!m) continue;
    let file = m[3]!;
    if (file === '') {
      // a rename: the next two fields are the old and the new path
      i += 2;
      file = parts[i] ?? '';
    }
    files.push({
      path: file,
      added: m[1] === '-' ? null : Number(m[1]),
      removed: m[2] === '-' ? null : Number(m[2]),
    });
  }
  return {
    files,
    added: files.reduce((s, f) => s + (f.added ?? 0), 0),
    removed: files.reduce((s, f) => s + (f.removed ?? 0), 0),
  };
}

function removeWorktree(info: WorktreeInfo): Promise<void> {
  return withRepoLock(info.repo, () => removeWorktreeNow(info));
}

async function removeWorktreeNow(info: WorktreeInfo): Promise<void> {
  if (existsSync(info.path)) await git(info.repo, ['worktree', 'remove', '--force', info.path]);
  await git(info.repo, ['worktree', 'prune'], true);
  await git(info.repo, ['branch', '-D', info.branch], true);
}

/**
 * Keep: merge the run's branch into the base branch. Where the base branch is checked out in the
 * user's checkout, the merge happens there (their files change, as asked) and refuses to overwrite
 * their uncommitted edits; elsewhere only a fast-forward of the branch ref is done.
 */
export async function keepWorktree(info: WorktreeInfo): Promise<WorktreeInfo> {
  if (info.state !== 'active') throw new WorktreeError(`the worktree was already ${info.state}`);
  if (!info.baseBranch)
    throw new WorktreeError('the run started from a detached HEAD: there is no base branch to merge into');
  if (!info.diff?.commit) {
    await removeWorktree(info);
    return { ...info, state: 'kept', mergeCommit: null };
  }
  const current = (await git(info.repo, ['symbolic-ref', '--short', '-q', 'HEAD'], true)) || null;
  let mergeCommit: string;
  if (current === info.baseBranch) {
    const r = await execa(
      'git',
      [
        '-c',
        'core.hooksPath=/dev/null',
        'merge',
        '--no-ff',
        '--no-edit',
        '-m',
        `Merge ${info.branch}`,
        info.branch,
      ],
      { cwd: info.repo, env: GIT_ENV, reject: false, stdin: 'ignore' },
    );
    if (r.exitCode !== 0) {
      await git(info.repo, ['merge', '--abort'], true);
      throw new WorktreeError(
        `could not merge ${info.branch} into ${info.baseBranch}: ${String(r.stderr || r.stdout).trim()}; the worktree is kept as it is`,
      );
    }
    mergeCommit = await git(info.repo, ['rev-parse', 'HEAD']);
  } else {
    const base = await git(info.repo, ['rev-parse', `refs/heads/${info.baseBranch}`]);
    const ff = await execa('git', ['merge-base', '--is-ancestor', base, info.branch], {
      cwd: info.repo,
      reject: false,
    });
    if (ff.exitCode !== 0)
      throw new WorktreeError(
        `${info.baseBranch} moved on and is not checked out: merge ${info.branch} yourself; the worktree is kept`,
      );
    await git(info.repo, ['update-ref', `refs/heads/${info.baseBranch}`, info.diff.commit, base]);
    mergeCommit = info.diff.commit;
  }
  await removeWorktree(info);
  return { ...info, state: 'kept', mergeCommit };
}

export async function discardWorktree(info: WorktreeInfo): Promise<WorktreeInfo> {
  if (info.state !== 'active') throw new WorktreeError(`the worktree was already ${info.state}`);
  await removeWorktree(info);
  return { ...info, state: 'discarded' };
}
