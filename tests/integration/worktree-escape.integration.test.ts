/**
 * A `worktree: true` run attacks the git commands Runboard runs outside the jail (committing the run's
 * work, keep): it replaces its worktree's `.git`, plants fsmonitor commands, hooks, filter drivers and
 * nested repositories. Each would-be command would create a marker file outside the run's reach; none
 * may appear, and the run's legitimate work is still committed, summarised and kept.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { git } from '../agents/agent-harness.ts';
import { Harness, type RunRecord } from '../helpers/harness.ts';

let h: Harness;
let markers: string;

beforeAll(async () => {
  h = await Harness.start();
  markers = path.join(h.root, 'markers');
  git(h.workspace, 'init', '-q', '-b', 'main');
  git(h.workspace, 'commit', '-q', '--allow-empty', '-m', 'initial');
}, 30_000);
afterAll(async () => {
  await h?.stop();
});

/** A shell command that, if anything runs it, leaves `markers/<name>` behind. */
const touch = (name: string): string => `mkdir -p ${markers} && touch ${path.join(markers, name)}`;
const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

async function worktreeRun(script: string): Promise<RunRecord> {
  const { runId } = await h.launch(['sh', '-ec', script], { worktree: true });
  return h.collect(runId);
}

function expectNoMarkers(): void {
  const found = existsSync(markers) ? readdirSync(markers) : [];
  rmSync(markers, { recursive: true, force: true }); // one attack's markers do not fail the next
  expect(found).toEqual([]);
}

function expectWorkCommitted(rec: RunRecord, file: string, text: string): string {
  expect(rec.result.status).toBe('succeeded');
  const diff = rec.result.worktree?.diff;
  expect(diff?.files.map((f) => f.path)).toContain(file);
  const commit = diff!.commit!;
  expect(git(h.workspace, 'show', `${commit}:${file}`)).toBe(text);
  return commit;
}

describe("a worktree run cannot make Runboard's git run its commands", () => {
  it('git init in the worktree with core.fsmonitor and hooks; a nested repository with fsmonitor', async () => {
    const rec = await worktreeRun(
      [
        'echo work > work.txt',
        'rm -f .git && git init -q',
        `git config core.fsmonitor ${q(`${touch('fsmonitor')}; false`)}`,
        `git config core.hooksPath "$PWD/.git/hooks"`,
        'mkdir -p .git/hooks',
        ...['pre-commit', 'commit-msg', 'post-commit', 'reference-transaction', 'post-index-change'].map(
          (hook) => `printf '#!/bin/sh\\n%s\\n' ${q(touch(`hook-${hook}`))} > .git/hooks/${hook}`,
        ),
        'chmod +x .git/hooks/*',
        'mkdir sub && cd sub && git init -q && echo x > x && git add x',
        `git -c user.name=r -c user.email=r@r commit -qm x`,
        `git config core.fsmonitor ${q(`${touch('nested-fsmonitor')}; false`)}`,
      ].join('\n'),
    );
    expectNoMarkers();
    expectWorkCommitted(rec, 'work.txt', 'work');
    // Discard removes the worktree whose .git the run replaced, and its branch.
    const { run } = await h.client.discardWorktree(rec.result.runId);
    expect(run.worktree?.state).toBe('discarded');
    expect(existsSync(rec.result.worktree!.path)).toBe(false);
    expect(git(h.workspace, 'branch', '--list', rec.result.worktree!.branch)).toBe('');
    expectNoMarkers();
  });

  it('a .git file redirected to a git dir of its own (gitdir: .evil) with a clean filter', async () => {
    const rec = await worktreeRun(
      [
        'echo work > work.txt',
        'git init -q tmp && mv tmp/.git .evil && rm -rf tmp',
        `git --git-dir=.evil config filter.x.clean ${q(`${touch('evil-clean')}; cat`)}`,
        `git --git-dir=.evil config core.fsmonitor ${q(`${touch('evil-fsmonitor')}; false`)}`,
        'echo "* filter=x" > .gitattributes',
        'rm -f .git && printf "gitdir: .evil\\n" > .git',
      ].join('\n'),
    );
    expectNoMarkers();
    expectWorkCommitted(rec, 'work.txt', 'work');
  });

  it(".gitattributes in the run's tree selecting drivers planted in the repository's config; then keep", async () => {
    // An earlier run with the repository as its workspace (no worktree) planted the drivers.
    const planted = await h.run([
      'sh',
      '-ec',
      [
        `git config filter.evil.clean ${q(`${touch('clean')}; cat`)}`,
        `git config filter.evil.smudge ${q(`${touch('smudge')}; cat`)}`,
        `git config filter.evil.process ${q(touch('process'))}`,
        `git config diff.evil.textconv ${q(`${touch('textconv')}; cat`)}`,
        `git config merge.evil.driver ${q(`${touch('merge')}; false`)}`,
      ].join('\n'),
    ]);
    expect(planted.result.status).toBe('succeeded');
    const rec = await worktreeRun(
      ['echo "* filter=evil diff=evil merge=evil" > .gitattributes', 'echo work > work.txt'].join('\n'),
    );
    expectNoMarkers();
    const commit = expectWorkCommitted(rec, 'work.txt', 'work');

    const { run } = await h.client.keepWorktree(rec.result.runId);
    expect(run.worktree).toMatchObject({ state: 'kept' });
    expect(git(h.workspace, 'merge-base', '--is-ancestor', commit, 'main')).toBe('');
    expect(git(h.workspace, 'show', 'main:work.txt')).toBe('work');
    expectNoMarkers();
  });

  it("refuses a worktree flow whose writable trees reach the repository's .git or checkout", async () => {
    for (const writable of [path.join(h.workspace, '.git'), h.workspace]) {
      const err = await h.launch('true', { worktree: true, sandbox: { writable: [writable] } }).then(
        () => null,
        (e: unknown) => e as { code: number; message: string },
      );
      expect(err).toMatchObject({ code: 1004 });
      expect(err!.message).toMatch(/would let a worktree run write the repository/);
    }
  });

  it('a worktree is never made through symlinks another run left in the repository', async () => {
    const outside = path.join(h.root, 'outside-wt');
    const outsideInfo = path.join(h.root, 'outside-info');
    mkdirSync(outside, { recursive: true });
    mkdirSync(outsideInfo, { recursive: true });
    // A run with the repository as its workspace (no worktree) plants the symlinks.
    const planted = await h.run([
      'sh',
      '-ec',
      [
        'if [ -e .runboard ]; then mv .runboard .runboard.old; fi',
        `ln -s ${outside} .runboard`,
        'mv .git/info .git/info.old',
        `ln -s ${outsideInfo} .git/info`,
      ].join('\n'),
    ]);
    expect(planted.result.status, planted.stderr).toBe('succeeded');
    try {
      const rec = await worktreeRun('echo work > work.txt');
      expect(readdirSync(outside)).toEqual([]);
      expect(readdirSync(outsideInfo)).toEqual([]);
      expect(rec.result.status).toBe('failed');
      expect(rec.result.termination?.reason).toBe('worktree-failed');
      expect(rec.result.summary).toMatch(/\.runboard is not a folder/);
    } finally {
      rmSync(path.join(h.workspace, '.runboard'));
      rmSync(path.join(h.workspace, '.git', 'info'));
      renameSync(path.join(h.workspace, '.git', 'info.old'), path.join(h.workspace, '.git', 'info'));
      if (existsSync(path.join(h.workspace, '.runboard.old')))
        renameSync(path.join(h.workspace, '.runboard.old'), path.join(h.workspace, '.runboard'));
    }
  });
});
