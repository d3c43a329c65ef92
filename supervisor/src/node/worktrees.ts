/**
 * Git worktrees for coding-agent runs: each `worktree: true` run gets its own worktree and
 * branch of the granted repository, so parallel runs never touch each other or the user's checkout.
 *
 *   <repo>/.runboard/worktrees/<run-id>   branch runboard/<run-id>, from the checkout's HEAD
 *   run ends   → changes committed on that branch (by the supervisor, not the agent), diff summary recorded
 *   keep       → branch merged into the base branch, worktree + branch removed
 *   discard    → worktree + branch removed
 *
 * The worktree lives inside the repository, hence inside the grant; `/.runboard/` goes to the
 * repository's .git/info/exclude so the user's `git status` stays clean. The run may rewrite anything in
 * its worktree, its `.git` file included, so every git command here goes through `safeGit`
 * (common/git.ts): the repository's git dir and the worktree's admin dir (`<common>/worktrees/<id>`,
 * outside the run's writable set) are named explicitly, and no configuration can make git run a command.
 */
import {
  closeSync,
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import type { DiffSummary, WorktreeInfo } from '../protocol/index.ts';
import {
  commonGitDir,
  GitError,
  safeGit,
  safeGitStatus,
  withOwnGitDir,
  type GitPlace,
} from '../common/git.ts';

export class WorktreeError extends Error {}

async function git(place: GitPlace, args: string[], allowFail = false): Promise<string> {
  try {
    return await safeGit(place, args, { allowFail });
  } catch (err) {
    throw err instanceof GitError ? new WorktreeError(err.message) : err;
  }
}

const isInside = (parent: string, child: string): boolean => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/** The repository's common git dir; a WorktreeError when it cannot be found. */
async function commonDirOf(repo: string): Promise<string> {
  try {
    return await commonGitDir(repo);
  } catch (err) {
    throw new WorktreeError(`cannot find the git dir of ${repo}: ${(err as Error).message}`);
  }
}

/**
 * Where git commands on a run's worktree look: its admin dir in the common git dir (found by the
 * `gitdir` back-link git keeps there, never by the `.git` file in the worktree, which the run can
 * replace) and the worktree as the work tree.
 */
async function worktreePlace(info: WorktreeInfo): Promise<{ gitDir: string; workTree: string }> {
  const common = await commonDirOf(info.repo);
  const admin = path.join(common, 'worktrees');
  const expected = path.join(info.path, '.git');
  const names = [path.basename(info.path)];
  try {
    names.push(...readdirSync(admin).filter((n) => n !== names[0]));
  } catch {
    // no worktrees dir: nothing to find below
  }
  for (const name of names) {
    try {
      if (readFileSync(path.join(admin, name, 'gitdir'), 'utf8').trim() === expected) {
        const gitDir = path.join(admin, name);
        if (isInside(info.path, gitDir)) break; // never a git dir the run can write
        return { gitDir, workTree: info.path };
      }
    } catch {
      // not this one
    }
  }
  throw new WorktreeError(`git has no record of the worktree ${info.path} in ${common}`);
}

/**
 * Why a worktree flow's extra writable trees would let its runs write what Runboard's git reads: the
 * repository's git dir (its config, attributes, the worktree's admin dir) or the user's checkout around
 * the workspace. Null when they do not.
 */
export function worktreeWritableConflict(workspace: string, writable: readonly string[]): string | null {
  for (const w of writable) {
    if (isInside(w, workspace) || w.split(path.sep).includes('.git'))
      return `the flow's sandbox.writable path ${w} would let a worktree run write the repository its work is committed from (its checkout or .git); a worktree flow may add only paths outside both`;
  }
  return null;
}

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
  const top = await git({ discoverFrom: workspace }, ['rev-parse', '--show-toplevel'], true);
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
  const commonDir = await commonDirOf(repo);
  const place = { gitDir: commonDir, workTree: repo };
  const baseCommit = await git(place, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], true);
  if (!baseCommit)
    throw new WorktreeError(`the repository ${repo} has no commit yet; commit once, then run again`);
  const baseBranch = (await git(place, ['symbolic-ref', '--short', '-q', 'HEAD'], true)) || null;
  excludeWorktrees(commonDir);
  const dir = path.join(repo, '.runboard', 'worktrees', runId);
  const branch = `runboard/${runId}`;
  ownFolder(path.join(repo, '.runboard'));
  ownFolder(path.dirname(dir));
  await git(place, ['worktree', 'add', '--quiet', '-b', branch, dir, baseCommit]);
  if (realpathSync(dir) !== dir) {
    await git(place, ['worktree', 'remove', '--force', dir], true);
    await git(place, ['branch', '-D', branch], true);
    throw new WorktreeError(`${dir} led elsewhere while the worktree was made (a symlink?); run again`);
  }
  const info: WorktreeInfo = { repo, path: dir, branch, baseBranch, baseCommit, state: 'active', diff: null };
  await worktreePlace(info); // git recorded it where the run cannot write
  return { info, workspace: path.join(dir, path.relative(repo, workspace)) };
}

/**
 * Makes `dir` (one level) unless it is there as a real folder. The folders on the way to a worktree are
 * in the user's checkout, which another run (one with the repository as its workspace) may have
 * written: a symlink there would put the worktree, and the run's writable tree, outside the grant.
 */
function ownFolder(dir: string): void {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    mkdirSync(dir);
    return;
  }
  if (!st.isDirectory())
    throw new WorktreeError(
      `${dir} is not a folder (a symlink or a file, perhaps left by a run); remove it and run again`,
    );
}

/**
 * `/.runboard/` into the repository's info/exclude, so the user's `git status` stays clean. Written only
 * through real folders and files (never a symlink a run may have left in `.git`); otherwise skipped.
 */
function excludeWorktrees(commonDir: string): void {
  const infoDir = path.join(commonDir, 'info');
  const exclude = path.join(infoDir, 'exclude');
  const kind = (p: string): 'dir' | 'file' | 'none' | 'other' => {
    try {
      const st = lstatSync(p);
      return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
    } catch {
      return 'none';
    }
  };
  const infoKind = kind(infoDir);
  if (infoKind === 'none') mkdirSync(infoDir);
  else if (infoKind !== 'dir') return;
  const excludeKind = kind(exclude);
  if (excludeKind === 'other') return;
  if (excludeKind === 'file' && readFileSync(exclude, 'utf8').split('\n').includes('/.runboard/')) return;
  const fd = openSync(
    exclude,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    writeSync(fd, '\n# Runboard run worktrees\n/.runboard/\n');
  } finally {
    closeSync(fd);
  }
}

/** Commits what the run left in its worktree onto its branch and summarises the diff against the base. */
export function commitWorktree(info: WorktreeInfo, runId: string, title: string): Promise<DiffSummary> {
  return withRepoLock(info.repo, () => commitWorktreeNow(info, runId, title));
}

/**
 * `git add -A` is the one command that reads the run's files. It runs on a git dir of our own (no
 * configuration from the repository, which runs may write, not even its named drivers), over the
 * repository's objects; the commit is plumbing (write-tree, commit-tree, update-ref), which reads no
 * work tree, runs no hook and looks at no submodule the run may have planted.
 */
async function commitWorktreeNow(info: WorktreeInfo, runId: string, title: string): Promise<DiffSummary> {
  const place = await worktreePlace(info);
  const common = await commonDirOf(info.repo);
  const parent = await git({ gitDir: common }, [
    'rev-parse',
    '--verify',
    `refs/heads/${info.branch}^{commit}`,
  ]);
  const { tree, commit } = await withOwnGitDir(common, parent, async (own) => {
    await git(own, ['read-tree', parent]);
    await git({ ...own, workTree: info.path }, ['add', '-A']);
    const tree = await git(own, ['write-tree']);
    if (tree === (await git(own, ['rev-parse', `${parent}^{tree}`]))) return { tree, commit: null };
    const message = `Runboard run ${runId}: ${title}`.slice(0, 200);
    return { tree, commit: await git(own, ['commit-tree', tree, '-p', parent, '-m', message]) };
  });
  if (commit) {
    await git({ gitDir: common }, [
      'update-ref',
      '-m',
      'runboard: run commit',
      `refs/heads/${info.branch}`,
      commit,
      parent,
    ]);
    // The worktree's own index follows its branch (index only: no file is touched, no filter runs).
    await git(place, ['read-tree', tree], true);
  }
  const head = await git(place, ['rev-parse', `refs/heads/${info.branch}`]);
  const numstat = await safeGit(
    { gitDir: place.gitDir },
    ['diff-tree', '-r', '-M', '--numstat', '-z', '--no-textconv', '--no-ext-diff', info.baseCommit, head],
    { raw: true },
  );
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

/**
 * The worktree's files go by our own hand (git's `worktree remove` would insist on the `.git` file the
 * run may have replaced); then git forgets the worktree and its branch.
 */
async function removeWorktreeNow(info: WorktreeInfo): Promise<void> {
  const gitDir = await commonDirOf(info.repo);
  rmSync(info.path, { recursive: true, force: true });
  await git({ gitDir }, ['worktree', 'prune'], true);
  await git({ gitDir }, ['branch', '-D', info.branch], true);
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
  const gitDir = await commonDirOf(info.repo);
  const checkout = { gitDir, workTree: info.repo };
  const current = (await git(checkout, ['symbolic-ref', '--short', '-q', 'HEAD'], true)) || null;
  let mergeCommit: string;
  if (current === info.baseBranch) {
    const merged = await safeGitStatus(checkout, [
      'merge',
      '--no-ff',
      '--no-edit',
      '-m',
      `Merge ${info.branch}`,
      info.branch,
    ]);
    if (merged.code !== 0) {
      await git(checkout, ['merge', '--abort'], true);
      throw new WorktreeError(
        `could not merge ${info.branch} into ${info.baseBranch}: ${merged.message}; the worktree is kept as it is`,
      );
    }
    mergeCommit = await git(checkout, ['rev-parse', 'HEAD']);
  } else {
    const base = await git({ gitDir }, ['rev-parse', `refs/heads/${info.baseBranch}`]);
    const ff = await safeGitStatus({ gitDir }, ['merge-base', '--is-ancestor', base, info.branch]);
    if (ff.code !== 0)
      throw new WorktreeError(
        `${info.baseBranch} moved on and is not checked out: merge ${info.branch} yourself; the worktree is kept`,
      );
    await git({ gitDir }, ['update-ref', `refs/heads/${info.baseBranch}`, info.diff.commit, base]);
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
