// An agent's asks, allowed. A real `claude` run (print mode) whose Write lies outside its worktree:
// Runboard's permission hook asks before the act (agent-hook.ts; before it, Claude Code's own check
// refused the act and the ask came after it), the run waits, the person allows it (run/answer), and
// the same run gains the folder (live-grant.ts) and writes. A real `codex exec` run in its own
// bubblewrap sandbox (sandbox.agentSandbox) whose shell command writes outside its writable roots:
// asked before the act too, but codex's sandbox cannot gain the folder while codex runs, so the
// command is refused there and the run ends needs-input with the ask; allowed once, the next run has
// the folder writable in the jail and in codex (writable_roots), continues the same session, and the
// file is there.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlowSpec } from '@runboard/supervisor/protocol';
import { AgentHarness, succeeded } from './agent-harness.ts';

let a: AgentHarness;
let out: string;
beforeAll(async () => {
  a = await AgentHarness.start();
  out = a.outside('out');
});
afterAll(async () => {
  await a.stop();
});

/** Runs the card (refused, asked), then again with the ask allowed once; the file must be written then. */
async function askedThenAllowed(marker: string, flow: FlowSpec, file: string, text: string): Promise<void> {
  const card = a.card(marker, `EPISODE:${marker}`);
  const started = await a.launch(card, flow);
  expect(await a.waitingAsk(started.runId)).toMatchObject({ kind: 'write', path: out, source: 'agent' });
  await a.h.client.answerAsk({ runId: started.runId, ask: 'a1', choice: 'allow' });
  const first = await a.h.collect(started.runId);
  expect(first.result.status, first.result.summary).toBe('needs-input');
  expect(first.result.asks).toEqual([expect.objectContaining({ kind: 'write', path: out, source: 'agent' })]);
  expect(existsSync(file)).toBe(false);
  const { runId } = await a.launch(card, flow, 'agent card', [{ runId: first.result.runId, ask: 'a1' }]);
  const second = await a.h.collect(runId);
  expect(second.result.status, second.result.summary + second.stderr).toBe('succeeded');
  {
    expect(first.result.session).toEqual({ cli: flow.runner, id: expect.any(String) });
    expect(second.result.session).toEqual({ ...first.result.session, resumed: true });
  }
  expect(readFileSync(file, 'utf8')).toBe(text);
}

describe("an agent's own permission refusals", () => {
  it('claude: asked before the act; allowed, the same run gains the folder and the Write goes through', async () => {
    const file = path.join(out, 'report.md');
    a.episodes([
      {
        name: 'claude-out',
        match: 'EPISODE:claude-out',
        turns: [
          {
            text: 'Writing.',
            toolCalls: [{ name: 'Write', arguments: { file_path: file, content: 'report\n' } }],
          },
          ({ body }) =>
            JSON.stringify(body).includes('Runboard:')
              ? { text: 'I was not allowed.' }
              : { text: `Done.\n${succeeded('wrote the report')}` },
        ],
      },
    ]);
    const { runId } = await a.launch(a.card('claude-out', 'EPISODE:claude-out'), a.flow('claude'));
    expect(await a.waitingAsk(runId)).toMatchObject({ kind: 'write', path: out, source: 'agent' });
    expect(existsSync(file)).toBe(false);
    await a.h.client.answerAsk({ runId, ask: 'a1', choice: 'allow' });
    const rec = await a.h.collect(runId);
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(readFileSync(file, 'utf8')).toBe('report\n');
    expect(rec.events.some((e) => e.data?.kind === 'ask-granted')).toBe(true);
  }, 180_000);

  it("codex: its sandbox's refusal is asked; allowed once, the same session continues and the write goes through", async () => {
    const file = path.join(out, 'data.csv');
    const cmd = { name: 'exec_command', arguments: { cmd: `printf 'a,b\\n' > ${file} && echo exported` } };
    a.episodes([
      {
        name: 'codex-out',
        match: 'EPISODE:codex-out',
        turns: [
          { toolCalls: [cmd] },
          ({ body }) =>
            JSON.stringify(body).includes('Runboard: the person allowed')
              ? { text: 'Allowed now: exporting again.', toolCalls: [cmd] }
              : { text: 'The sandbox refused the export: I need your permission.' },
          { text: `Done.\n${succeeded('exported')}` },
        ],
      },
    ]);
    const seen = a.model.requests.length;
    await askedThenAllowed('codex-out', a.flow('codex', { sandbox: { agentSandbox: true } }), file, 'a,b\n');
    const played = a.model.requests.slice(seen).filter((r) => r.episode === 'codex-out');
    expect(played.find((r) => JSON.stringify(r.body).includes('Runboard: the person allowed'))?.turn).toBe(1);
    expect(played.filter((r) => r.turn === 0)).toHaveLength(1);
  }, 180_000);
});
