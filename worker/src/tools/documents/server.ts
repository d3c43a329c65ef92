// The document tools as an MCP server on stdio (official SDK, like `desktop-cli serve`), for codex
// and claude runs. Tool errors (bad path, unsupported file, scanned PDF) come back as MCP tool
// errors with the reason, never as a crashed server.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { exportDocument } from './export.ts';
import { DEFAULT_MAX_CHARS, readDocument, SUPPORTED } from './read.ts';

export interface ServerOptions {
  workspace: string;
  project?: string | undefined;
  /** A read-only run: read_document only (its jail would refuse the writes of export_document anyway). */
  readOnly?: boolean;
  /** Folders besides the workspace the tools may use (the flow's granted writable trees). */
  allow?: readonly string[];
}

type Result = { content: { type: 'text'; text: string }[]; isError?: boolean };

async function answer(f: () => Promise<string>): Promise<Result> {
  try {
    return { content: [{ type: 'text', text: await f() }] };
  } catch (e) {
    return { content: [{ type: 'text', text: (e as Error).message }], isError: true };
  }
}

export function documentServer(opts: ServerOptions): McpServer {
  const server = new McpServer({ name: 'runboard-documents', version: '0.1.0' });
  server.registerTool(
    'read_document',
    {
      description: `Read a file of the workspace as Markdown with its metadata: ${SUPPORTED}. Excel: the first sheet unless \`sheet\` names another, as a Markdown table. PDFs must contain text (scanned PDFs are not supported).`,
      inputSchema: {
        path: z.string().describe('file path, relative to the workspace'),
        sheet: z.string().optional().describe('Excel only: the sheet to read (default: the first)'),
        max_chars: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            `at most this many characters of Markdown (default ${DEFAULT_MAX_CHARS}); a longer text is truncated and says so`,
          ),
      },
    },
    ({ path, sheet, max_chars }) =>
      answer(async () => {
        const r = await readDocument(opts.workspace, path, { sheet, maxChars: max_chars, allow: opts.allow });
        return `${JSON.stringify(r.metadata)}\n\n${r.markdown}`;
      }),
  );
  if (opts.readOnly) return server;
  server.registerTool(
    'export_document',
    {
      description:
        'Convert a Markdown file of the workspace to PDF or DOCX. PDFs use pdf_style.css from the workspace, else the project, else a built-in style.',
      inputSchema: {
        md_path: z.string().describe('the Markdown file, relative to the workspace'),
        output_path: z
          .string()
          .optional()
          .describe(
            'the file to write, relative to the workspace (default: md_path with the format’s extension)',
          ),
        format: z
          .enum(['pdf', 'docx'])
          .optional()
          .describe('pdf or docx (default: from output_path’s extension)'),
      },
    },
    ({ md_path, output_path, format }) =>
      answer(async () =>
        JSON.stringify(
          await exportDocument(opts.workspace, md_path, output_path, format, {
            project: opts.project,
            allow: opts.allow,
          }),
        ),
      ),
  );
  return server;
}

/** `documents-mcp [--workspace DIR] [--project DIR] [--read-only] [--allow DIR]…`: serve on stdio until the client closes. */
export async function main(argv: string[]): Promise<void> {
  const opt = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const workspace = opt('--workspace') ?? process.env.RUNBOARD_WORKSPACE ?? process.cwd();
  const project = opt('--project') ?? process.env.RUNBOARD_PROJECT;
  const readOnly = argv.includes('--read-only');
  const allow = argv.flatMap((a, i) => (argv[i - 1] === '--allow' ? [a] : []));
  await documentServer({ workspace, project, readOnly, allow }).connect(new StdioServerTransport());
}
