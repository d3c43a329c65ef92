// The codex runner end to end: the real `codex exec --json` in the run jail, its model requests going
// through the supervisor's proxy to the scripted model server, its edits landing in the run's worktree;
// and codex's own bubblewrap sandbox inside the jail (flow sandbox.agentSandbox).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../helpers/harness.ts';
import { REPO } from '../helpers/harness.ts';
import { agentEvents, AgentHarness, git, KEYS } from './agent-harness.ts';

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start();
});
afterAll(async () => {
  await a.stop();
});

const done = (summary: string): string =>
  `Done.\nRUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

describe('codex implement run', () => {
  it('edits a file in its own worktree; the diff is recorded and the user checkout is untouched', async () => {
    a.episodes([
      {
        name: 'edit',
        match: 'EPISODE:codex-edit',
        turns: [
          {
            text: 'Appending a line.',
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: "printf 'three\\n' >> app.txt && echo ok" } },
            ],
          },
          { text: done('appended three to app.txt') },
        ],
      },
    ]);
    const head = git(a.workspace, 'rev-parse', 'HEAD');
    const rec = await a.run(
      a.card('Append', 'EPISODE:codex-edit append "three" to app.txt'),
      a.flow('codex'),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.summary).toBe('appended three to app.txt');
    expect(rec.result.termination?.reason).toBe('finished');

    // The diff, recorded against the commit the run started from.
    const wt = rec.result.worktree!;
    expect(wt).toMatchObject({ repo: a.workspace, baseBranch: 'main', baseCommit: head, state: 'active' });
    expect(wt.path).toBe(path.join(a.workspace, '.runboard', 'worktrees', rec.result.runId));
    expect(wt.diff).toMatchObject({
      files: [{ path: 'app.txt', added: 1, removed: 0 }],
      added: 1,
      removed: 0,
    });
    expect(git(a.workspace, 'show', `${wt.branch}:app.txt`)).toBe('one\ntwo\nthree');

    // The user's checkout: same commit, same file, nothing to commit (the worktree dir is excluded).
    expect(readFileSync(path.join(a.workspace, 'app.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(git(a.workspace, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(a.workspace, 'status', '--porcelain')).toBe('');

    // What the agent did is in the run's events; its raw JSON stream in stdout.log.
    const kinds = agentEvents(rec).map((e) => e.kind);
    for (const k of ['session', 'message', 'command', 'usage', 'final']) expect(kinds).toContain(k);
    const cmd = agentEvents(rec).find((e) => e.kind === 'command' && e.status === 'completed');
    expect(cmd).toMatchObject({ exitCode: 0 });
    expect(rec.stdout).toContain('"type":"turn.completed"');
    expect(rec.result.metrics).toMatchObject({ tokensIn: 200, tokensOut: 20, verdict: 'ok' });

    // The proxy: codex sent its run token; the provider got the real key; the key is nowhere in the run.
    const reqs = a.model.requests.filter((r) => r.episode === 'edit');
    expect(reqs.length).toBe(2);
    expect(reqs[0]!.headers.authorization).toBe(`Bearer ${KEYS.openai}`);
    expect(reqs[0]!.path).toBe('/v1/responses');
    const logDir = rec.result.logDir;
    for (const f of ['events.jsonl', 'stdout.log', 'stderr.log', 'result.json'])
      expect(readFileSync(path.join(logDir, f), 'utf8')).not.toContain(KEYS.openai);
    const modelEvents = rec.events.filter((e) => e.data?.kind === 'model-request');
    expect(modelEvents.length).toBe(2);

    // Keep: merged into main in the user's checkout; worktree and branch gone.
    const kept = await a.keep(rec.result.runId);
    expect(kept.run.worktree?.state).toBe('kept');
    expect(readFileSync(path.join(a.workspace, 'app.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
    expect(existsSync(wt.path)).toBe(false);
    expect(git(a.workspace, 'branch', '--list', wt.branch)).toBe('');
  });
});

/** The completed/failed command events of a run (what codex reported for each shell command). */
const commands = (rec: RunRecord) =>
  agentEvents(rec).filter((e) => e.kind === 'command' && e.status !== 'started') as {
    kind: 'command';
    status: string;
    exitCode: number | null;
    output: string;
  }[];

describe("codex's own sandbox inside the jail (sandbox.agentSandbox)", () => {
  // The run's HOME is in its scratch dir, which the jail lets the run write (codex keeps its sessions
  // there). codex's workspace-write sandbox does not: a write there is refused by codex, not by us.
  const writeHome = { cmd: 'printf \'x\\n\' > "$HOME/escape.txt" && echo wrote-home' };
  const writeTmp = { cmd: 'printf \'x\\n\' > "$TMPDIR/probe.txt" && echo wrote-tmp' };
  const episodes = () =>
    a.episodes([
      {
        name: 'sb-edit',
        match: 'EPISODE:sb-edit',
        turns: [
          {
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: "printf 'three\\n' >> app.txt && echo wrote-ws" } },
            ],
          },
          { toolCalls: [{ name: 'exec_command', arguments: writeTmp }] },
          { text: done('appended three') },
        ],
      },
      {
        name: 'sb-home',
        match: 'EPISODE:sb-home',
        turns: [{ toolCalls: [{ name: 'exec_command', arguments: writeHome }] }, { text: done('wrote') }],
      },
      {
        name: 'sb-ro',
        match: 'EPISODE:sb-ro',
        turns: [{ toolCalls: [{ name: 'exec_command', arguments: writeTmp }] }, { text: done('probed') }],
      },
    ]);
  const agentSandbox = { sandbox: { agentSandbox: true } };

  it('workspace-write: writes in the worktree and $TMPDIR succeed; the jail confines by mounts', async () => {
    episodes();
    const before = readFileSync(path.join(a.workspace, 'app.txt'), 'utf8');
    // 'auto' (config.yaml's default for codex flows): where user namespaces work, the same as true.
    const rec = await a.run(
      a.card('Sandboxed edit', 'EPISODE:sb-edit'),
      a.flow('codex', { sandbox: { agentSandbox: 'auto' } }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.sandbox).toMatchObject({ enforced: true, fs: 'mounts' });
    const cmds = commands(rec);
    expect(cmds.map((c) => [c.exitCode, c.output.trim()])).toEqual([
      [0, 'wrote-ws'],
      [0, 'wrote-tmp'],
    ]);
    expect(rec.result.worktree?.diff).toMatchObject({ files: [{ path: 'app.txt', added: 1, removed: 0 }] });
    expect(readFileSync(path.join(a.workspace, 'app.txt'), 'utf8')).toBe(before);
  });

  it("workspace-write: a write outside the workspace is refused by codex's sandbox, which the jail would allow", async () => {
    episodes();
    // Control: the same command without codex's sandbox; the jail lets the run write its HOME.
    const plain = await a.run(a.card('Home write', 'EPISODE:sb-home'), a.flow('codex'));
    expect(plain.result.status, plain.result.summary + plain.stderr).toBe('succeeded');
    expect(plain.result.sandbox).toMatchObject({ enforced: true, fs: 'landlock' });
    expect(commands(plain).map((c) => [c.exitCode, c.output.trim()])).toEqual([[0, 'wrote-home']]);

    const rec = await a.run(a.card('Home write', 'EPISODE:sb-home'), a.flow('codex', agentSandbox));
    expect(rec.result.sandbox).toMatchObject({ enforced: true, fs: 'mounts' });
    const [cmd, ...more] = commands(rec);
    expect(more).toEqual([]);
    expect(cmd!.exitCode).not.toBe(0);
    // bubblewrap's read-only bind of everything outside the writable roots: EROFS. (The jail allows
    // this path; where it refuses, Landlock says EACCES and its mounts EROFS only outside the run's trees.)
    expect(cmd!.output).toMatch(/escape\.txt: Read-only file system/);
    expect(cmd!.output).not.toContain('wrote-home');
    // Evidence over the agent's claim: the refused write makes the run needs-input.
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.metrics.verdict).toBe('permission-denied');
  });

  it("read-only flows: codex runs read-only, so even the run's own $TMPDIR is refused", async () => {
    episodes();
    const ro = {
      name: 'review',
      worktree: false,
      readOnly: true,
      prompt: path.join(REPO, 'prompts', 'review'),
    };
    // Control: the jail alone lets a read-only run write its $TMPDIR (scratch).
    const plain = await a.run(a.card('Probe', 'EPISODE:sb-ro'), a.flow('codex', ro));
    expect(commands(plain).map((c) => [c.exitCode, c.output.trim()])).toEqual([[0, 'wrote-tmp']]);

    const rec = await a.run(a.card('Probe', 'EPISODE:sb-ro'), a.flow('codex', { ...ro, ...agentSandbox }));
    const [cmd] = commands(rec);
    expect(cmd!.exitCode).not.toBe(0);
    expect(cmd!.output).toMatch(/probe\.txt: Read-only file system/);
    expect(rec.result.status).toBe('needs-input');
    expect(git(a.workspace, 'status', '--porcelain')).toBe('');
  });

  it('auto, on a machine without user namespaces: codex runs in the jail alone, and the run says so', async () => {
    const b = await AgentHarness.start({ env: { RUNBOARD_NAMESPACES: 'off' } });
    try {
      b.episodes([
        {
          name: 'sb-home',
          match: 'EPISODE:sb-home',
          turns: [{ toolCalls: [{ name: 'exec_command', arguments: writeHome }] }, { text: done('wrote') }],
        },
      ]);
      const rec = await b.run(
        b.card('Home write', 'EPISODE:sb-home'),
        b.flow('codex', { sandbox: { agentSandbox: 'auto' } }),
      );
      expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
      expect(rec.result.sandbox).toMatchObject({ enforced: true, fs: 'landlock' });
      expect(commands(rec).map((c) => [c.exitCode, c.output.trim()])).toEqual([[0, 'wrote-home']]);
      const off = rec.events.find(
        (e) => (e.data as { kind?: string } | undefined)?.kind === 'agent-sandbox-off',
      );
      expect(off?.message).toContain('codex runs without its own sandbox');
      // true instead of auto: refused, with what to do
      const strict = await b.run(b.card('Strict', 'x'), b.flow('codex', agentSandbox));
      expect(strict.result.termination?.reason).toBe('sandbox-failed');
      expect(strict.result.summary).toContain('set it to auto or false');
    } finally {
      await b.stop();
    }
  });

  it('is refused with a reason for runners without an agent sandbox', async () => {
    const rec = await a.run(a.card('Nope', 'x'), a.flow('claude', agentSandbox));
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('sandbox-failed');
    expect(rec.result.summary).toContain('sandbox.agentSandbox is for runner codex');
  });
});
