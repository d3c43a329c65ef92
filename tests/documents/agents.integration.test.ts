// The document tools in real codex and claude runs (scripted model on loopback): each CLI gets the
// documents MCP server for its run, reads a sheet of an XLSX committed to the repository, writes a
// report from what it read and exports it to PDF in its worktree. The PDF, read back from the run's
// branch, holds the value that was only in the XLSX. And what a run may not do with the tools: read or
// write outside its workspace (directly, through `..`, the grant key, a symlink it made), export in a
// read-only flow.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { getDocumentProxy, extractText } from 'unpdf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import type { ScriptedTurn, TurnFn } from '../fixtures/model-server/server.ts';
import { AgentHarness, git } from '../agents/agent-harness.ts';
import { png, xlsx } from './fixtures.ts';

let a: AgentHarness;
/** A file beside the workspace: readable by a run's jail, not part of its workspace. */
let outside: string;

beforeAll(async () => {
  a = await AgentHarness.start();
  await xlsx(path.join(a.workspace, 'book.xlsx'));
  git(a.workspace, 'add', 'book.xlsx');
  git(a.workspace, 'commit', '-qm', 'a workbook');
  const dir = path.join(a.h.root, 'beside');
  mkdirSync(dir, { recursive: true });
  outside = path.join(dir, 'private.md');
  writeFileSync(outside, '# Private\n\nsecret-beside-the-workspace\n');
}, 60_000);
afterAll(async () => {
  await a?.stop();
});

const done = (summary: string): string =>
  `Done.\nRUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

/** The e-mail address the model read from the sheet (it is in the request's tool result), or a marker. */
function emailIn(body: Record<string, unknown>): string {
  return /grace@example\.org/.exec(JSON.stringify(body))?.[0] ?? 'NOT-READ';
}

/** The text of a PDF in a branch of the workspace's repository. */
async function pdfText(branch: string, file: string): Promise<string> {
  const bytes = execFileSync('git', ['show', `${branch}:${file}`], { cwd: a.workspace });
  expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
  const { text } = await extractText(await getDocumentProxy(new Uint8Array(bytes)), { mergePages: true });
  return text;
}

/** The text of every tool result the model got in an episode's last request. */
function lastRequest(episode: string): string {
  return JSON.stringify(a.model.requests.filter((r) => r.episode === episode).at(-1)!.body);
}

describe('claude with the document tools', () => {
  it('reads an XLSX sheet and exports a PDF report into its worktree', async () => {
    a.episodes([
      {
        name: 'claude-docs',
        match: 'EPISODE:claude-docs',
        turns: [
          {
            toolCalls: [
              { name: 'mcp__documents__read_document', arguments: { path: 'book.xlsx', sheet: 'Sheet2' } },
            ],
          },
          ({ body }) => ({
            toolCalls: [
              {
                name: 'Write',
                arguments: {
                  file_path: 'report.md',
                  content: `# Contacts\n\n| Name | Email |\n| --- | --- |\n| Grace | ${emailIn(body)} |\n`,
                },
              },
            ],
          }),
          {
            toolCalls: [
              {
                name: 'mcp__documents__export_document',
                arguments: { md_path: 'report.md', output_path: 'report.pdf', format: 'pdf' },
              },
            ],
          },
          { text: done('wrote report.pdf') },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Report', 'EPISODE:claude-docs write a PDF report of the contacts in @book.xlsx#Sheet2.'),
      a.flow('claude'),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    // The prompt listed the card's @reference as metadata, not its content (the tool read that).
    const first = JSON.stringify(a.model.requests.find((r) => r.episode === 'claude-docs')!.body);
    expect(first).toContain('{\\"path\\":\\"book.xlsx\\",\\"name\\":\\"book.xlsx\\",\\"type\\":\\"xlsx\\"');
    expect(first).toContain('\\"sheet\\":\\"Sheet2\\"');
    expect(first).not.toContain('grace@example.org');
    expect(lastRequest('claude-docs')).toContain('\\"format\\":\\"pdf\\"');
    const text = await pdfText(rec.result.worktree!.branch, 'report.pdf');
    expect(text).toContain('Contacts');
    expect(text).toContain('grace@example.org');
  }, 120_000);
});

/** codex offers an MCP server's tools as one Responses API namespace tool, `mcp__<server>`. */
function namespaceTools(body: Record<string, unknown>, server: string): string[] | null {
  const ns = ((body.tools ?? []) as { type?: string; name?: string; tools?: { name: string }[] }[]).find(
    (t) => t.type === 'namespace' && t.name === `mcp__${server}`,
  );
  return ns ? (ns.tools ?? []).map((t) => t.name) : null;
}

const docCall =
  (tool: string, args: Record<string, unknown>, seen?: (tools: string[] | null) => void): TurnFn =>
  ({ body }) => {
    seen?.(namespaceTools(body, 'documents'));
    return { toolCalls: [{ name: tool, namespace: 'mcp__documents', arguments: args }] };
  };

describe('codex with the document tools', () => {
  it('reads an XLSX sheet and exports a PDF report into its worktree', async () => {
    let offered: string[] | null = null;
    a.episodes([
      {
        name: 'codex-docs',
        match: 'EPISODE:codex-docs',
        turns: [
          docCall('read_document', { path: 'book.xlsx', sheet: 'Sheet2' }, (t) => (offered = t)),
          ({ body }) => ({
            toolCalls: [
              {
                name: 'exec_command',
                arguments: {
                  cmd: `printf '# Contacts\\n\\nGrace: ${emailIn(body)}\\n' > report.md && echo ok`,
                },
              },
            ],
          }),
          docCall('export_document', { md_path: 'report.md', output_path: 'out/report.pdf' }),
          { text: done('wrote out/report.pdf') },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Report', 'EPISODE:codex-docs write a PDF report of the contacts in book.xlsx'),
      // codex's own sandbox on, as config.yaml gives codex flows by default
      a.flow('codex', { sandbox: { agentSandbox: 'auto' } }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(offered).toEqual(expect.arrayContaining(['read_document', 'export_document']));
    expect(rec.result.sandbox).toMatchObject({ fs: 'mounts' }); // codex's own sandbox was on
    const text = await pdfText(rec.result.worktree!.branch, 'out/report.pdf');
    expect(text).toContain('grace@example.org');
  }, 120_000);

  it('a read-only flow is offered the tools that only read', async () => {
    let offered: string[] | null = null;
    a.episodes([
      {
        name: 'codex-docs-ro',
        match: 'EPISODE:codex-docs-ro',
        turns: [
          docCall('read_document', { path: 'book.xlsx' }, (t) => (offered = t)),
          { text: done('read it') },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Read', 'EPISODE:codex-docs-ro summarise book.xlsx'),
      a.flow('codex', { readOnly: true, worktree: false }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect([...(offered ?? [])].sort()).toEqual(['analyze_media', 'read_document']);
    expect(lastRequest('codex-docs-ro')).toContain('R1');
  }, 120_000);

  it('a flow with documents: false offers no document tools', async () => {
    let offered: string[] | null = ['not asked'];
    a.episodes([
      {
        name: 'codex-nodocs',
        match: 'EPISODE:codex-nodocs',
        turns: [
          ({ body }): ScriptedTurn => {
            offered = namespaceTools(body, 'documents');
            return { text: done('nothing') };
          },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('None', 'EPISODE:codex-nodocs nothing'),
      a.flow('codex', { documents: false, worktree: false }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(offered).toBeNull();
  }, 120_000);
});

describe('attacks from inside a run through the document tools', () => {
  it('cannot read or write outside its workspace: absolute, .., or a symlink the run made', async () => {
    const rel = path.relative(a.workspace, outside);
    a.episodes([
      {
        name: 'docs-escape',
        match: 'EPISODE:docs-escape',
        turns: [
          docCall('read_document', { path: outside }),
          docCall('read_document', { path: rel }),
          docCall('read_document', { path: path.join(a.h.paths.keysDir, 'grant.key') }),
          // The link's target is built at run time: the agent hook's courtesy ask before a shell
          // command cannot see it (agent-hook-paths.ts), so the document tool's own check is what refuses.
          {
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: `t=${outside}; ln -s "$t" link.md && echo ok` } },
            ],
          },
          docCall('read_document', { path: 'link.md' }),
          { toolCalls: [{ name: 'exec_command', arguments: { cmd: `printf '# x\\n' > x.md && echo ok` } }] },
          docCall('export_document', {
            md_path: 'x.md',
            output_path: path.join(path.dirname(outside), 'dropped.docx'),
          }),
          { text: done('tried') },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Escape', 'EPISODE:docs-escape read the private file'),
      a.flow('codex', { worktree: false }),
    );
    // Each refusal is a permission the person may give: the card asks, naming the path and how.
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('needs-input');
    const questions = JSON.stringify(rec.result.questions);
    expect(questions).toContain(
      `run documents.read_document: ${outside} is outside the workspace; to allow it`,
    );
    expect(questions).toContain('documents.export_document');
    const requests = a.model.requests
      .filter((r) => r.episode === 'docs-escape')
      .map((r) => JSON.stringify(r.body));
    // Every result the model got: refusals naming the workspace rule, never the file's content.
    expect(requests.join('\n')).not.toContain('secret-beside-the-workspace');
    expect(requests.join('\n').match(/is outside the workspace/g)?.length).toBeGreaterThanOrEqual(5);
    expect(existsSync(path.join(path.dirname(outside), 'dropped.docx'))).toBe(false);
  }, 120_000);
});

describe('the permission ask for a path outside the workspace', () => {
  it('a claude run is asked; once the folder is granted and in the flow, the same read works', async () => {
    const turns = [
      { toolCalls: [{ name: 'mcp__documents__read_document', arguments: { path: outside } }] },
      ({ body }: { body: Record<string, unknown> }): ScriptedTurn => ({
        text: done(/secret-beside-the-workspace/.test(JSON.stringify(body)) ? 'read it' : 'refused'),
      }),
    ];
    a.episodes([{ name: 'claude-ask', match: 'EPISODE:claude-ask', turns }]);
    const card = a.card('Ask', 'EPISODE:claude-ask read the file beside the workspace');
    const asked = await a.run(card, a.flow('claude', { worktree: false }));
    expect(asked.result.status, asked.result.summary + asked.stderr).toBe('needs-input');
    expect(JSON.stringify(asked.result.questions)).toContain(
      `documents.read_document: ${outside} is outside the workspace`,
    );
    // The person allows it the way the question says: a grant of the folder, the folder in the flow.
    createGrant(a.h.paths, path.dirname(outside));
    a.episodes([{ name: 'claude-ask', match: 'EPISODE:claude-ask', turns }]);
    const allowed = await a.run(
      card,
      a.flow('claude', { worktree: false, sandbox: { writable: [path.dirname(outside)] } }),
    );
    expect(allowed.result.status, allowed.result.summary + allowed.stderr).toBe('succeeded');
    expect(allowed.result.summary).toBe('read it');
  }, 120_000);
});

describe('analyze_media in a claude run', () => {
  it("asks the flow's vision model through the run's proxy route (the real key added by the proxy)", async () => {
    writeFileSync(path.join(a.workspace, 'red.png'), await png());
    a.episodes([
      {
        name: 'vision',
        match: 'Describe this media for an agent',
        requireTools: false,
        turns: [{ text: '{"summary": "a red rectangle", "tags": ["red"], "text": ""}' }],
      },
      {
        name: 'claude-vision',
        match: 'EPISODE:claude-vision',
        turns: [
          { toolCalls: [{ name: 'mcp__documents__analyze_media', arguments: { path: 'red.png' } }] },
          { text: done('described') },
        ],
      },
    ]);
    const rec = await a.run(
      a.card('Look', 'EPISODE:claude-vision what is in red.png?'),
      a.flow('claude', {
        worktree: false,
        vision: { profile: 'eyes', provider: 'anthropic', model: 'claude-eyes' },
      }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(lastRequest('claude-vision')).toContain('a red rectangle');
    const asked = a.model.requests.filter((r) => r.episode === 'vision');
    expect(asked).toHaveLength(1);
    expect(asked[0]!.body?.model).toBe('claude-eyes');
    expect(asked[0]!.headers['x-api-key']).toBe('sk-ant-test-0123456789');
  }, 120_000);
});
