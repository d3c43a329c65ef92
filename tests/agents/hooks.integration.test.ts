// The agent CLIs' own permission hooks ask before the act (worker/src/runners/agent-hook.ts): a real
// `claude` (print mode) and a real `codex exec`, driven by the scripted model server, call a tool that
// would touch a folder outside the run's grants; their PreToolUse hook asks the run's ask socket, the
// run waits (running, the ask on its record) for the person's answer (run/answer). Deny: the tool gets
// Runboard's denial as its result and the agent goes on. A path inside the grants asks nothing.
// (Allow: tests/agents/asks.integration.test.ts.)
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
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

/** The scripted model: it calls `call`; told "denied", it goes on and succeeds; else it says so. */
function deniedThenOn(name: string, call: { name: string; arguments: Record<string, unknown> }) {
  a.episodes([
    {
      name,
      match: `EPISODE:${name}`,
      turns: [
        { text: 'Exporting.', toolCalls: [call] },
        ({ body }) =>
          JSON.stringify(body).includes('Runboard: the person denied')
            ? { text: `Without it, then.\n${succeeded('went on without the export')}` }
            : { text: 'The denial did not reach me.' },
      ],
    },
  ]);
}

describe("the agent CLIs' hooks ask before the act", () => {
  it('claude: its Write outside the grants waits; Deny reaches the agent as the tool result and it goes on', async () => {
    const file = path.join(out, 'report.md');
    deniedThenOn('hook-claude-deny', { name: 'Write', arguments: { file_path: file, content: 'x\n' } });
    const { runId } = await a.launch(a.card('claude deny', 'EPISODE:hook-claude-deny'), a.flow('claude'));
    const ask = await a.waitingAsk(runId);
    expect(ask).toMatchObject({ id: 'a1', kind: 'write', path: out, source: 'agent' });
    expect(ask.evidence).toContain(`Write write ${file}`);
    await a.h.client.answerAsk({ runId, ask: 'a1', choice: 'deny' });
    const rec = await a.h.collect(runId);
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.summary).toContain('went on without the export');
    expect(existsSync(file)).toBe(false);
    // the agent was told why, in Runboard's words, as the Write's result
    const req = a.model.requests.find(
      (r) => r.episode === 'hook-claude-deny' && JSON.stringify(r.body).includes('the person denied'),
    );
    expect(JSON.stringify(req?.body)).toContain(
      `Runboard: the person denied write ${out}. Go on without it.`,
    );
    expect(rec.events.some((e) => e.data?.kind === 'ask-answer' && e.data.choice === 'deny')).toBe(true);
  }, 180_000);

  it('claude: a Write in its worktree and one in a granted writable folder outside it ask nothing', async () => {
    const extra = path.join(a.h.root, 'extra');
    mkdirSync(extra);
    createGrant(a.h.paths, extra);
    a.episodes([
      {
        name: 'hook-claude-inside',
        match: 'EPISODE:hook-claude-inside',
        turns: [
          { toolCalls: [{ name: 'Write', arguments: { file_path: 'notes.md', content: 'n\n' } }] },
          {
            toolCalls: [
              { name: 'Write', arguments: { file_path: path.join(extra, 'report.md'), content: 'r\n' } },
            ],
          },
          { text: `Done.\n${succeeded('wrote inside')}` },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('claude inside', 'EPISODE:hook-claude-inside'),
      a.flow('claude', { sandbox: { writable: [extra] } }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(readFileSync(path.join(extra, 'report.md'), 'utf8')).toBe('r\n');
    expect(rec.result.asks).toBeUndefined();
    expect(rec.events.some((e) => e.data?.kind === 'ask' || e.data?.kind === 'ask-refused')).toBe(false);
  }, 180_000);

  it('codex: its shell command writing outside the grants waits; Deny blocks it and codex goes on', async () => {
    const file = path.join(out, 'data.csv');
    deniedThenOn('hook-codex-deny', {
      name: 'exec_command',
      arguments: { cmd: `printf 'a,b\\n' > ${file} && echo exported` },
    });
    const { runId } = await a.launch(a.card('codex deny', 'EPISODE:hook-codex-deny'), a.flow('codex'));
    const ask = await a.waitingAsk(runId);
    expect(ask).toMatchObject({ id: 'a1', kind: 'write', path: out, source: 'agent' });
    await a.h.client.answerAsk({ runId, ask: 'a1', choice: 'deny' });
    const rec = await a.h.collect(runId);
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.summary).toContain('went on without the export');
    expect(existsSync(file)).toBe(false);
  }, 180_000);

  it("attack: a path never offered (Runboard's state) is denied at once, without an ask; the agent goes on", async () => {
    const keys = path.join(a.h.paths.root, 'keys', 'stolen.txt');
    a.episodes([
      {
        name: 'hook-claude-state',
        match: 'EPISODE:hook-claude-state',
        turns: [
          { toolCalls: [{ name: 'Write', arguments: { file_path: keys, content: 'x' } }] },
          ({ body }) =>
            JSON.stringify(body).includes('Runboard refused this without asking the person')
              ? { text: `Refused, going on.\n${succeeded('refused')}` }
              : { text: 'no refusal seen' },
        ],
      },
    ]);
    const rec = await a.run(a.card('claude state', 'EPISODE:hook-claude-state'), a.flow('claude'));
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(rec.result.asks).toBeUndefined();
    expect(rec.events.some((e) => e.data?.kind === 'ask-refused' && e.data.live === true)).toBe(true);
    expect(existsSync(keys)).toBe(false);
  }, 180_000);
});
