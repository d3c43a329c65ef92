// The codex runner end to end: the real `codex exec --json` in the run jail, its model requests going
// through the supervisor's proxy to the scripted model server, its edits landing in the run's worktree.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
