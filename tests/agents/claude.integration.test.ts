// The claude runner end to end (real Claude Code CLI, print mode, stream-json) and the status from
// evidence: a permission denial ends needs-input although the CLI exits 0 and claims success; a
// read-only flow's write attempt is refused by the jail and reported, not hidden.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/harness.ts';
import { agentEvents, AgentHarness, git, KEYS } from './agent-harness.ts';

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start();
});
afterAll(async () => {
  await a.stop();
});

const ok = (summary: string): string => `RUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

describe('claude runs', () => {
  it('implements a change with its Write tool in the run worktree', async () => {
    // The model writes a path relative to its cwd: the worktree's path is only known once the run exists.
    a.episodes([
      {
        name: 'claude-edit',
        match: 'EPISODE:claude-edit',
        turns: [
          {
            text: 'Writing NOTES.md.',
            toolCalls: [{ name: 'Write', arguments: { file_path: 'NOTES.md', content: 'notes\n' } }],
          },
          { text: `Wrote NOTES.md.\n${ok('wrote NOTES.md')}` },
        ],
      },
    ]);
    const rec = await a.run(a.card('Notes', 'EPISODE:claude-edit write NOTES.md'), a.flow('claude'));
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.summary).toBe('wrote NOTES.md');
    expect(rec.result.worktree?.diff).toMatchObject({ files: [{ path: 'NOTES.md', added: 1, removed: 0 }] });
    expect(git(a.workspace, 'status', '--porcelain')).toBe('');
    const kinds = agentEvents(rec).map((e) => e.kind);
    for (const k of ['session', 'message', 'tool-call', 'tool-result', 'files-changed', 'usage', 'final'])
      expect(kinds).toContain(k);
    const reqs = a.model.requests.filter((r) => r.episode === 'claude-edit');
    expect(reqs[0]!.path).toBe('/v1/messages');
    expect(reqs[0]!.headers['x-api-key']).toBe(KEYS.anthropic);
    expect(reqs[0]!.headers.authorization).toBeUndefined();
  });

  it('a permission denial ends needs-input although the CLI exits 0 and says success', async () => {
    a.episodes([
      {
        name: 'deny',
        match: 'EPISODE:deny',
        turns: [
          {
            toolCalls: [
              {
                name: 'Bash',
                arguments: { command: 'git push origin main', description: 'push the change' },
              },
            ],
          },
          { text: `All done!\n${ok('pushed')}` },
        ],
      },
    ]);
    const rec = await a.run(a.card('Deny', 'EPISODE:deny'), a.flow('claude'));
    // What the CLI itself said: exit 0, result subtype success.
    expect(rec.result.exitCode).toBe(0);
    expect(rec.stdout).toMatch(/"subtype":"success"/);
    expect(rec.stdout).toContain('"permission_denials":[{');
    // What Runboard concluded from the evidence.
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.metrics.verdict).toBe('permission-denied');
    expect(rec.result.summary).toContain('denied permission');
    expect(rec.result.summary).toContain('Bash');
    expect(rec.events.some((e) => e.data?.questions)).toBe(true);
    expect(rec.result.questions?.length).toBeGreaterThan(0); // for the card's ## Questions
    expect(rec.result.questions?.join(' ')).toContain('Bash');
    expect(rec.result.worktree?.diff?.files).toEqual([]);
  });
});

describe('read-only flows', () => {
  it('a review run cannot write the workspace; the refused write is reported, the repo is unchanged', async () => {
    a.episodes([
      {
        name: 'ro',
        match: 'EPISODE:ro',
        turns: [
          { toolCalls: [{ name: 'exec_command', arguments: { cmd: 'echo x >> app.txt' } }] },
          { text: `Reviewed.\n${ok('looks good')}` },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Review', 'EPISODE:ro'),
      a.flow('codex', {
        name: 'review',
        worktree: false,
        readOnly: true,
        prompt: path.join(REPO, 'prompts', 'review'),
      }),
    );
    expect(rec.result.exitCode).toBe(0);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.metrics.verdict).toBe('permission-denied');
    expect(readFileSync(path.join(a.workspace, 'app.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(rec.result.worktree ?? null).toBeNull();
  });
});
