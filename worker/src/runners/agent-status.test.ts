import { describe, expect, it } from 'vitest';
import { claudeParser, codexParser, codexRolloutDenials, type AgentEvent } from './agent-events.ts';
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
  it('codex rollout: a sandbox-refused command the stream left out becomes command + denial events', () => {
    const line = (payload: object) => JSON.stringify({ type: 'response_item', payload });
    const result = (id: string, code: number, out: string) =>
      line({
        type: 'function_call_output',
        call_id: id,
        output: `Chunk ID: 1\nWall time: 0.0000 seconds\nProcess exited with code ${code}\nOutput:\n${out}`,
      });
    const rollout = [
      line({ type: 'function_call', name: 'exec_command', call_id: 'a', arguments: '{"cmd":"echo fine"}' }),
      result('a', 0, 'fine\n'),
      line({ type: 'function_call', name: 'exec_command', call_id: 'b', arguments: '{"cmd":"touch ~/x"}' }),
      result('b', 1, 'touch: cannot touch /h/x: Read-only file system\n'),
      line({ type: 'function_call', name: 'exec_command', call_id: 'c', arguments: '{"cmd":"echo y > a"}' }),
      result('c', 1, 'bash: a: Permission denied\n'),
      line({ type: 'function_call', name: 'update_plan', call_id: 'd', arguments: '{}' }),
      result('d', 1, 'Permission denied'),
      'not json',
    ].join('\n');
    // c was streamed (and parsed as a denial already): not reported twice.
    const streamed: AgentEvent[] = [
      {
        kind: 'command',
        command: 'echo y > a',
        status: 'failed',
        exitCode: 1,
        output: 'bash: a: Permission denied\n',
      },
    ];
    expect(codexRolloutDenials(rollout, streamed)).toEqual([
      {
        kind: 'command',
        id: 'b',
        command: 'touch ~/x',
        status: 'failed',
        exitCode: 1,
        output: 'touch: cannot touch /h/x: Read-only file system\n',
      },
      {
        kind: 'permission-denied',
        tool: 'command',
        detail: 'touch ~/x: touch: cannot touch /h/x: Read-only file system',
        id: 'b',
      },
    ]);
    expect(decideStatus(ev([...codexRolloutDenials(rollout, streamed), msg('ok'), final()])).status).toBe(
      'needs-input',
    );
  });

  it('codex: an MCP tool call codex refused (approval) is a denial; a failed call for another reason is not', () => {
    const p = codexParser();
    // the item codex 0.169 prints when it may not approve an MCP call (approval policy "never")
    const refused = p.line(
      JSON.stringify({
        type: 'item.completed',
        item: {
          id: 'item_2',
          type: 'mcp_tool_call',
          server: 'desktop',
          tool: 'click',
          arguments: { id: 82 },
          result: null,
          error: { message: 'MCP tool call requires approval, but approval policy is never' },
          status: 'failed',
        },
      }),
    );
    expect(refused).toEqual([
      {
        kind: 'tool-result',
        id: 'item_2',
        ok: false,
        output: 'MCP tool call requires approval, but approval policy is never',
      },
      {
        kind: 'permission-denied',
        tool: 'desktop.click',
        detail: 'MCP tool call requires approval, but approval policy is never',
        id: 'item_2',
      },
    ]);
    const other = p.line(
      JSON.stringify({
        type: 'item.completed',
        item: {
          id: 'k',
          type: 'mcp_tool_call',
          server: 'desktop',
          tool: 'read',
          error: { message: 'no such window' },
          status: 'failed',
        },
      }),
    );
    expect(other.map((e) => e.kind)).toEqual(['tool-result']);
  });

  it('a document tool refusing a path outside the workspace is a denial naming the path, in both CLIs', () => {
    const refusal =
      '/home/u/private.md is outside the workspace (/ws); the document tools read and write only files inside it: …';
    const detail = expect.stringMatching(
      /^\/home\/u\/private\.md is outside the workspace; to allow it, grant/,
    );
    // codex 0.169: a tool error comes as status failed with the MCP result, error null
    const codex = codexParser().line(
      JSON.stringify({
        type: 'item.completed',
        item: {
          id: 'item_1',
          type: 'mcp_tool_call',
          server: 'documents',
          tool: 'read_document',
          result: { content: [{ type: 'text', text: refusal }], structured_content: null },
          error: null,
          status: 'failed',
        },
      }),
    );
    expect(codex).toEqual([
      { kind: 'tool-result', id: 'item_1', ok: false, output: refusal },
      { kind: 'permission-denied', tool: 'documents.read_document', detail, id: 'item_1' },
    ]);
    const claude = claudeParser();
    const use = { type: 'tool_use', id: 't1', name: 'mcp__documents__export_document', input: {} };
    claude.line(JSON.stringify({ type: 'assistant', message: { content: [use] } }));
    const result = {
      type: 'tool_result',
      tool_use_id: 't1',
      is_error: true,
      content: [{ type: 'text', text: refusal }],
    };
    expect(claude.line(JSON.stringify({ type: 'user', message: { content: [result] } }))).toEqual([
      { kind: 'tool-result', id: 't1', ok: false, output: refusal },
      { kind: 'permission-denied', tool: 'documents.export_document', detail, id: 't1' },
    ]);
    // Another tool's error that happens to say so is not the document tools' refusal.
    const other = claudeParser();
    other.line(JSON.stringify({ type: 'assistant', message: { content: [{ ...use, name: 'Read' }] } }));
    expect(
      other.line(JSON.stringify({ type: 'user', message: { content: [result] } })).map((e) => e.kind),
    ).toEqual(['tool-result']);
  });

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
