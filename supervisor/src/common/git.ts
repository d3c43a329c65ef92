/**
 * Every git command Runboard itself runs (the supervisor committing a run's worktree, the host showing
 * its diff, keep/discard) goes through here. Those commands run outside any sandbox, on repositories a
 * run may have written to, so git must not run a single command named by anything a run could write:
 *
 * - the repository is named explicitly (`--git-dir`, `--work-tree`): a `.git` dir or file the run put in
 *   its worktree (a fresh `git init`, `gitdir: .evil`) is never discovered or read;
 * - no system or global config (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), no system
 *   attributes, an environment built from scratch (no inherited `GIT_*`, `GIT_SSH_COMMAND`, pager, editor);
 * - command-line config (highest precedence) switches off every config key that names a command:
 *   hooks, fsmonitor, pagers, editors, external diff, credential helpers, ssh, gpg, auto gc, submodule
 *   recursion; and, read from the repository's config right before each command, every filter driver
 *   (clean/smudge/process), diff driver (textconv/command) and merge driver that attributes (the run's
 *   own `.gitattributes` included) could select.
 */
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';

export class GitError extends Error {}

/** Where a command runs: an explicit git dir (and work tree), or `cwd` only to find a repository. */
export type GitPlace =
  | {
      gitDir: string;
      workTree?: string;
      /** Another repository's object store (GIT_OBJECT_DIRECTORY), for a git dir of our own. */
      objects?: string;
    }
  | { discoverFrom: string };

/** Config keys that run a command, each set to a value that runs none. */
const FIXED: ReadonlyArray<readonly [string, string]> = [
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.untrackedCache', 'false'],
  ['core.pager', 'cat'],
  ['core.editor', 'true'],
  ['sequence.editor', 'true'],
  ['core.askPass', ''],
  ['core.sshCommand', 'false'],
  ['core.gitProxy', ''],
  ['core.alternateRefsCommand', ''],
  ['core.attributesFile', '/dev/null'],
  ['diff.external', ''],
  ['credential.helper', ''],
  ['gpg.program', 'false'],
  ['gpg.ssh.program', 'false'],
  ['gpg.x509.program', 'false'],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['gc.auto', '0'],
  ['maintenance.auto', 'false'],
  ['submodule.recurse', 'false'],
  ['diff.ignoreSubmodules', 'all'],
  ['status.submoduleSummary', 'false'],
  ['fetch.recurseSubmodules', 'false'],
  ['protocol.allow', 'never'],
  ['uploadpack.packObjectsHook', ''],
];

/**
 * Named drivers defined in the repository's config, neutralised: an empty filter command is skipped by
 * git (the content goes in as it is), a diff driver's commands are off (and `--no-textconv`/`--no-ext-diff`
 * are passed where diffs are made), a merge driver fails (`false`), so a merge that needs one stops
 * and leaves the branch for the user to merge.
 */
function neutralise(key: string): Array<[string, string]> {
  let m = /^filter\.(.+)\.(clean|smudge|process)$/s.exec(key);
  if (m)
    return [
      [`filter.${m[1]}.${m[2]}`, ''],
      [`filter.${m[1]}.required`, 'false'],
    ];
  m = /^diff\.(.+)\.(textconv|command)$/s.exec(key);
  if (m) return [[key, '']];
  m = /^merge\.(.+)\.driver$/s.exec(key);
  if (m) return [[key, 'false']];
  if (/^(pager|alias)\./.test(key)) return [[key, '']];
  return [];
}

/** The environment of every git command: nothing inherited but PATH. */
export function gitEnv(overrides: ReadonlyArray<readonly [string, string]>): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH || '/usr/local/bin:/usr/bin:/bin',
    LANG: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ATTR_NOSYSTEM: '1',
    GIT_TERMINAL_PROMPT: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    GIT_PAGER: 'cat',
    GIT_EDITOR: 'true',
    GIT_AUTHOR_NAME: 'Runboard',
    GIT_AUTHOR_EMAIL: 'runboard@localhost',
    GIT_COMMITTER_NAME: 'Runboard',
    GIT_COMMITTER_EMAIL: 'runboard@localhost',
    // GIT_CONFIG_COUNT rather than `-c`: a key with `=` in its subsection cannot be said with `-c`.
    GIT_CONFIG_COUNT: String(overrides.length),
  };
  overrides.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

function placeArgs(place: GitPlace): { args: string[]; cwd: string; env: Record<string, string> } {
  if ('discoverFrom' in place) return { args: [], cwd: place.discoverFrom, env: {} };
  const args = [`--git-dir=${place.gitDir}`];
  if (place.workTree) args.push(`--work-tree=${place.workTree}`);
  // Relative paths in git's output and arguments refer to the work tree, else to the git dir.
  return {
    args,
    cwd: place.workTree ?? place.gitDir,
    env: place.objects ? { GIT_OBJECT_DIRECTORY: place.objects } : {},
  };
}

async function exec(
  place: GitPlace,
  args: string[],
  overrides: ReadonlyArray<readonly [string, string]>,
  maxBuffer?: number,
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const where = placeArgs(place);
  const r = await execa('git', [...where.args, ...args], {
    cwd: where.cwd,
    env: { ...gitEnv(overrides), ...where.env },
    extendEnv: false,
    reject: false,
    stdin: 'ignore',
    stripFinalNewline: false,
    ...(maxBuffer ? { maxBuffer } : {}),
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? '') };
}

/** Commands that never run a filter, diff or merge driver (they touch no work tree content). */
const DRIVERLESS = new Set([
  'rev-parse',
  'symbolic-ref',
  'update-ref',
  'config',
  'branch',
  'merge-base',
  'write-tree',
  'commit-tree',
  'diff-tree',
  'cat-file',
  'show-ref',
  'ls-tree',
]);
const driverless = (args: string[]): boolean =>
  DRIVERLESS.has(args[0] ?? '') ||
  (args[0] === 'read-tree' && !args.includes('-u')) ||
  (args[0] === 'worktree' && args[1] === 'prune');

/**
 * The command-line config for a command on `place`: the fixed list plus, for a command that may run a
 * driver, the repository's named drivers.
 */
async function overridesFor(place: GitPlace, args: string[]): Promise<Array<readonly [string, string]>> {
  if (driverless(args)) return [...FIXED];
  const listed = await exec(place, ['config', '--list', '--name-only', '-z'], FIXED);
  const named = listed.exitCode === 0 ? listed.stdout.split('\0').flatMap(neutralise) : [];
  return [...FIXED, ...named];
}

/**
 * Runs git on `place` with the containment above. Returns stdout (trimmed); throws GitError with git's
 * message when it fails, unless `allowFail` (then the failed command's stdout, usually empty).
 */
export async function safeGit(
  place: GitPlace,
  args: string[],
  opts: { allowFail?: boolean; maxBuffer?: number; raw?: boolean } = {},
): Promise<string> {
  const r = await exec(place, args, await overridesFor(place, args), opts.maxBuffer);
  if (r.exitCode !== 0 && !opts.allowFail)
    throw new GitError(`git ${args[0]} failed: ${(r.stderr || r.stdout).trim()}`);
  return opts.raw ? r.stdout : r.stdout.trim();
}

/** Like safeGit, but the exit code is the answer (`diff-index --quiet`, `merge-base --is-ancestor`). */
export async function safeGitStatus(
  place: GitPlace,
  args: string[],
): Promise<{ code: number; message: string }> {
  const r = await exec(place, args, await overridesFor(place, args));
  return { code: r.exitCode, message: (r.stderr || r.stdout).trim() };
}

/**
 * The common git dir (`.git` of the main checkout) of the repository whose top level is `repo`. Found by
 * git's own discovery from the user's checkout, which a worktree run cannot write.
 */
export async function commonGitDir(repo: string): Promise<string> {
  const out = await safeGit({ discoverFrom: repo }, [
    'rev-parse',
    '--path-format=absolute',
    '--git-common-dir',
  ]);
  return realpathSync(path.resolve(repo, out));
}

let ownGitDirs = os.tmpdir();

/**
 * Where `withOwnGitDir` makes its git dirs: a folder no run can write (the supervisor passes one in its
 * state root; a folder granted to a run, even /tmp, would let the run put config in it).
 */
export function keepOwnGitDirsIn(dir: string): void {
  ownGitDirs = dir;
}

/**
 * Runs `fn` with a git dir of Runboard's own for the repository whose common git dir is `common`: its
 * objects are the repository's (GIT_OBJECT_DIRECTORY), its config, index and HEAD (`head`) are ours,
 * with nothing in them that names a command. So a command that reads a work tree (`git add`) reads no
 * configuration a run could have written, not even for a moment. The repository's `info/exclude`
 * patterns are copied (data). Removed afterwards.
 */
export async function withOwnGitDir<T>(
  common: string,
  head: string,
  fn: (place: { gitDir: string; objects: string }) => Promise<T>,
): Promise<T> {
  const format = await safeGit({ gitDir: common }, ['rev-parse', '--show-object-format']);
  const version =
    (await safeGit({ gitDir: common }, ['config', '--get', 'core.repositoryformatversion'], {
      allowFail: true,
    })) || '0';
  const dir = mkdtempSync(path.join(ownGitDirs, 'git-'));
  try {
    mkdirSync(path.join(dir, 'refs'));
    mkdirSync(path.join(dir, 'info'));
    writeFileSync(path.join(dir, 'HEAD'), `${head}\n`);
    writeFileSync(
      path.join(dir, 'config'),
      `[core]\n\trepositoryformatversion = ${/^\d+$/.test(version) ? version : '0'}\n\tbare = false\n` +
        (format === 'sha1' ? '' : `[extensions]\n\tobjectformat = ${format}\n`),
    );
    const exclude = path.join(common, 'info', 'exclude');
    try {
      if (lstatSync(exclude).isFile()) copyFileSync(exclude, path.join(dir, 'info', 'exclude'));
    } catch {
      // no exclude patterns
    }
    return await fn({ gitDir: dir, objects: path.join(common, 'objects') });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
