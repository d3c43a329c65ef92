// The document tools' MCP server (dist/documents-mcp.cjs, bundled by the global setup) driven by the
// official SDK's client over stdio, as codex and claude drive it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { xlsx } from './fixtures.ts';

const SERVER = path.resolve(import.meta.dirname, '..', '..', 'dist', 'documents-mcp.cjs');
let ws: string;
let client: Client;

type Text = { content: { type: string; text: string }[]; isError?: boolean };

beforeAll(async () => {
  ws = mkdtempSync(path.join(tmpdir(), 'rb-docs-mcp-'));
  await xlsx(path.join(ws, 'book.xlsx'));
  writeFileSync(
    path.join(ws, 'report.md'),
    '# Report\n\n- one\n- two\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n',
  );
  client = new Client({ name: 'test', version: '1' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER, '--workspace', ws],
      stderr: 'pipe',
    }),
  );
}, 60_000);

afterAll(async () => {
  await client?.close(); // closes stdin: the server exits
  rmSync(ws, { recursive: true, force: true });
});

describe('documents MCP server', () => {
  it('lists read_document and export_document with their parameters', async () => {
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual(['analyze_media', 'export_document', 'read_document']);
    expect(Object.keys(byName.read_document!.inputSchema.properties ?? {}).sort()).toEqual([
      'max_chars',
      'path',
      'sheet',
    ]);
    expect(byName.read_document!.inputSchema.required).toEqual(['path']);
    expect(Object.keys(byName.export_document!.inputSchema.properties ?? {}).sort()).toEqual([
      'format',
      'md_path',
      'output_path',
    ]);
  });

  it('reads a named sheet of an XLSX as a Markdown table with its metadata', async () => {
    const r = (await client.callTool({
      name: 'read_document',
      arguments: { path: 'book.xlsx', sheet: 'Sheet2' },
    })) as Text;
    expect(r.isError).toBeFalsy();
    const [meta, ...rest] = r.content[0]!.text.split('\n\n');
    expect(JSON.parse(meta!)).toMatchObject({
      path: 'book.xlsx',
      format: 'xlsx',
      sheet: 'Sheet2',
      sheets: ['Summary', 'Sheet2'],
    });
    expect(rest.join('\n\n')).toBe('| Name | Email |\n| --- | --- |\n| Grace | grace@example.org |');
  });

  it('exports Markdown to DOCX and PDF in the workspace', async () => {
    for (const format of ['docx', 'pdf']) {
      const r = (await client.callTool({
        name: 'export_document',
        arguments: { md_path: 'report.md', output_path: `out/report.${format}`, format },
      })) as Text;
      expect(r.isError, r.content[0]?.text).toBeFalsy();
      expect(JSON.parse(r.content[0]!.text)).toMatchObject({ path: `out/report.${format}`, format });
    }
    expect(readFileSync(path.join(ws, 'out/report.pdf')).subarray(0, 5).toString()).toBe('%PDF-');
    const back = (await client.callTool({
      name: 'read_document',
      arguments: { path: 'out/report.docx' },
    })) as Text;
    expect(back.content[0]!.text).toContain('# Report');
    expect(back.content[0]!.text).toMatch(/\|\s*a\s*\|\s*b\s*\|/);
  }, 60_000);

  it('answers a path outside the workspace with a tool error, and keeps serving', async () => {
    const r = (await client.callTool({
      name: 'read_document',
      arguments: { path: '/etc/hostname' },
    })) as Text;
    expect(r.isError).toBe(true);
    expect(r.content[0]!.text).toMatch(/^\/etc\/hostname is outside the workspace/);
    const ok = (await client.callTool({ name: 'read_document', arguments: { path: 'report.md' } })) as Text;
    expect(ok.isError).toBeFalsy();
  });
});
