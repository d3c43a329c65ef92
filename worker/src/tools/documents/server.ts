// The document tools as an MCP server on stdio (official SDK, like `desktop-cli serve`), for codex
// and claude runs. Tool errors (bad path, unsupported file, scanned PDF) come back as MCP tool
// errors with the reason, never as a crashed server.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { callDocumentTool } from './call.ts';
import { DOCUMENT_DESCRIPTIONS, DOCUMENT_PARAMS, documentTools, type DocumentScope } from './tools.ts';

type Result = { content: { type: 'text'; text: string }[]; isError?: boolean };

async function answer(f: () => Promise<string>): Promise<Result> {
  try {
    return { content: [{ type: 'text', text: await f() }] };
  } catch (e) {
    return { content: [{ type: 'text', text: (e as Error).message }], isError: true };
  }
}

export function documentServer(scope: DocumentScope, token?: string): McpServer {
  const server = new McpServer({ name: 'runboard-documents', version: '0.1.0' });
  for (const name of documentTools(scope))
    server.registerTool(
      name,
      { description: DOCUMENT_DESCRIPTIONS[name], inputSchema: DOCUMENT_PARAMS[name] },
      (args: unknown) => answer(() => callDocumentTool(scope, name, args, token)),
    );
  return server;
}

/**
 * `documents-mcp [--workspace DIR] [--project DIR] [--read-only] [--allow DIR]… [--flow NAME]
 * [--vision JSON]`: serve on stdio until the client closes. analyze_media's token (the run's vision
 * route) comes from RUNBOARD_VISION_TOKEN in the environment, never from the command line.
 */
export async function main(argv: string[]): Promise<void> {
  const opt = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const vision = opt('--vision');
  const scope: DocumentScope = {
    workspace: opt('--workspace') ?? process.env.RUNBOARD_WORKSPACE ?? process.cwd(),
    project: opt('--project') ?? process.env.RUNBOARD_PROJECT,
    readOnly: argv.includes('--read-only'),
    allow: argv.flatMap((a, i) => (argv[i - 1] === '--allow' ? [a] : [])),
    flowName: opt('--flow'),
    ...(vision ? { vision: JSON.parse(vision) as DocumentScope['vision'] } : {}),
  };
  await documentServer(scope, process.env.RUNBOARD_VISION_TOKEN).connect(new StdioServerTransport());
}
