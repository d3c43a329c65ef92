// Claude Code's own permission denials go through the same ask as the sandbox's: a real `claude` run
// (print mode, against the scripted model server) whose Write outside its worktree Claude Code itself
// refuses ends needs-input with an ask for that folder, derived by the supervisor; allowed once, the
// next run gets the folder writable in the jail and in Claude Code (--add-dir), and the file is written.
import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHarness } from './agent-harness.ts';

let a: AgentHarness;
let out: string;
beforeAll(async () => {
  a = await AgentHarness.start();
  mkdirSync(path.join(a.h.root, 'reports'));
  out = realpathSync(path.join(a.h.root, 'reports'));
});
afterAll(async () => {
  await a.stop();
});

const ok = (summary: string): string => `RUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

describe("claude's own permission denials", () => {
  it('ask for the folder; allowed once, Claude Code and the jail both let the write through', async () => {
    const file = path.join(out, 'report.md');
    a.episodes([
      {
        name: 'outside',
        match: 'EPISODE:outside',
        turns: [
          {
            text: 'Writing the report.',
            toolCalls: [{ name: 'Write', arguments: { file_path: file, content: 'report\n' } }],
          },
          { text: `Done.\n${ok('wrote the report')}` },
        ],
      },
    ]);
    const card = a.card('Report', 'EPISODE:outside write the report');
    const flow = a.flow('claude');
    const first = await a.run(card, flow);
    expect(first.result.status, first.result.summary).toBe('needs-input');
    expect(first.result.asks).toEqual([
      expect.objectContaining({ kind: 'write', path: out, source: 'agent' }),
    ]);
    expect(existsSync(file)).toBe(false);

    const { runId } = await a.launch(card, flow, 'agent card', [{ runId: first.result.runId, ask: 'a1' }]);
    const second = await a.h.collect(runId);
    expect(second.result.status, second.result.summary + second.stderr).toBe('succeeded');
    expect(readFileSync(file, 'utf8')).toBe('report\n');
  }, 180_000);
});
