import { describe, expect, it } from 'vitest';
import { claudeParser, codexParser, type AgentEvent } from './agent-events.ts';
import { decideStatus, parseCompletion, type AgentEvidence } from './agent-status.ts';

const ev = (events: AgentEvent[], over: Partial<AgentEvidence> = {}): AgentEvidence => ({
  cli: 'codex',
  exitCode: 0,
  signal: null,
  cancelled: false,
  events,
  stderrTail: '',
  ...over,
});
const final = (ok = true, result: string | null = null): AgentEvent => ({ kind: 'final', ok, result });
const msg = (text: string): AgentEvent => ({ kind: 'message', text });

describe('decideStatus', () => {
  it('believes success only with a final event, no denial and a result', () => {
    expect(decideStatus(ev([msg('done'), final()]))).toMatchObject({ status: 'succeeded', summary: 'done' });
  });
  it('fails a non-zero exit, with the last error', () => {
    const v = decideStatus(ev([{ kind: 'error', message: 'boom' }], { exitCode: 1 }));
    expect(v).toMatchObject({ status: 'failed', reason: 'exit' });
    expect(v.summary).toContain('boom');
  });
  it('fails an exit 0 without the final event', () => {
    expect(decideStatus(ev([msg('working on it')])).reason).toBe('no-final-event');
  });
  it('fails a final event that reports failure', () => {
    expect(
      decideStatus(ev([{ kind: 'final', ok: false, result: null, detail: 'rate limited' }])).summary,
    ).toContain('rate limited');
  });
  it('turns a permission denial under exit 0 into needs-input with a question', () => {
    const v = decideStatus(
      ev([{ kind: 'permission-denied', tool: 'Bash', detail: 'git push' }, msg('ok'), final()]),
    );
    expect(v).toMatchObject({ status: 'needs-input', reason: 'permission-denied' });
    expect(v.questions[0]).toContain('git push');
  });
  it('fails an empty result', () => {
    expect(decideStatus(ev([final(true, '  ')])).reason).toBe('empty-result');
  });
  it("follows the agent's completion contract for FAILED and NEEDS_CLARIFICATION", () => {
    const q =
      'RUNBOARD_RESULT: {"status":"NEEDS_CLARIFICATION","summary":"which db?","questions":["Postgres or SQLite?"]}';
    expect(decideStatus(ev([msg(q), final()]))).toMatchObject({
      status: 'needs-input',
      questions: ['Postgres or SQLite?'],
    });
    const f = 'RUNBOARD_RESULT: {"status":"FAILED","error":"no tests"}';
    expect(decideStatus(ev([msg(f), final()]))).toMatchObject({ status: 'failed', reason: 'agent-failed' });
  });
  it('ignores a malformed completion line rather than guessing', () => {
    expect(parseCompletion('RUNBOARD_RESULT: {nope')).toBeNull();
    expect(parseCompletion('RUNBOARD_RESULT: {"status":"MAYBE"}')).toBeNull();
  });
});

describe('parsers', () => {
  it('codex: a command refused by the OS counts as a denial; a file_change failure too', () => {
    const p = codexParser();
    const out = p.line(
      JSON.stringify({
        type: 'item.completed',
        item: {
          id: 'i',
          type: 'command_execution',
          command: 'echo x >> a',
          aggregated_output: 'bash: a: Permission denied\n',
          exit_code: 1,
          status: 'failed',
        },
      }),
    );
    expect(out.map((e) => e.kind)).toEqual(['command', 'permission-denied']);
    const fc = p.line(
      JSON.stringify({
        type: 'item.completed',
        item: { id: 'j', type: 'file_change', changes: [{ path: 'a', kind: 'update' }], status: 'failed' },
      }),
    );
    expect(fc.map((e) => e.kind)).toEqual(['files-changed', 'permission-denied']);
    expect(p.line('not json')).toEqual([]);
    expect(
      p.line(JSON.stringify({ type: 'turn.completed', usage: { input_tokens: 5, output_tokens: 2 } })),
    ).toEqual([
      { kind: 'usage', input: 5, output: 2, cached: 0 },
      { kind: 'final', ok: true, result: null },
    ]);
  });
  it('claude: denials from the stream and from the result count once', () => {
    const p = claudeParser();
    const a = p.line(
      JSON.stringify({
        type: 'system',
        subtype: 'permission_denied',
        tool_name: 'Bash',
        tool_use_id: 't1',
        message: 'needs approval',
      }),
    );
    const b = p.line(
      JSON.stringify({
        type: 'result',
        subtype: 'success',
        is_error: false,
        result: 'done',
        usage: { input_tokens: 1, output_tokens: 1 },
        permission_denials: [{ tool_name: 'Bash', tool_use_id: 't1', tool_input: {} }],
      }),
    );
    expect([...a, ...b].filter((e) => e.kind === 'permission-denied')).toHaveLength(1);
    expect(b.at(-1)).toMatchObject({ kind: 'final', ok: true, result: 'done' });
  });
});
