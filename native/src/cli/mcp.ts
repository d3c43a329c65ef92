// `desktop-cli serve`: the desktop as an MCP server on stdio, for any agent (codex, claude, …).
// Every tool is a desktop-cli command run in this process (same validation, same compact JSON, same
// errors), so the MCP surface and the CLI cannot drift apart. Screenshots come back as MCP images.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { desktop } from '../desktop/desktop.ts';
import { COMMANDS, optionsOf } from './spec.ts';

type Execute = (argv: string[], stdin?: string) => Promise<{ code: number; stdout: string; stderr: string }>;

/** Tools written by hand: an image result (screenshot), and the first MCP names agents already use. */
const HAND_MADE = new Set(['screenshot', 'find']);
/** Tools that act on a window: returnTree adds its tree after the action. */
const ACTS = new Set(['click', 'hover', 'type', 'set-value', 'fill', 'scroll', 'drag', 'action', 'focus']);
const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
type Content = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };
interface ToolResult {
  [key: string]: unknown;
  content: Content[];
  isError?: boolean;
}

const target = {
  app: z.string().optional().describe('application name, e.g. "runboard-form" or "chromium"'),
  window: z.string().optional().describe('window title (substring)'),
  windowId: z.number().int().optional().describe('X window id, from list'),
  pid: z.number().int().optional().describe('process id'),
};
type Target = {
  app?: string | undefined;
  window?: string | undefined;
  windowId?: number | undefined;
  pid?: number | undefined;
};
const returnTree = z
  .boolean()
  .optional()
  .describe('also return the window’s compact accessibility tree after the action');

function targetArgs(t: Target): string[] {
  const a: string[] = [];
  if (t.app) a.push('--app', t.app);
  if (t.window) a.push('--window', t.window);
  if (t.windowId !== undefined) a.push('--window-id', String(t.windowId));
  if (t.pid !== undefined) a.push('--pid', String(t.pid));
  return a;
}

function opt(flag: string, v: unknown): string[] {
  return v === undefined || v === null || v === false ? [] : v === true ? [flag] : [flag, String(v)];
}

/** A compact element as `read --compact` prints it (short keys, to spend few tokens). */
interface Compact {
  i: number;
  r?: string;
  t?: string;
  v?: string;
  [k: string]: unknown;
}

/** The MCP server: every desktop-cli command as a tool, run through `execute`. */
function buildServer(execute: Execute): McpServer {
  const server = new McpServer({ name: 'runboard-desktop', version: pkg.version });

  const run = async (argv: string[], stdin?: string): Promise<ToolResult> => {
    const r = await execute(argv, stdin);
    if (r.code !== 0)
      // A result that is also a failure (wait timed out, assert failed) comes with its result.
      return {
        content: [
          {
            type: 'text',
            text: [r.stderr.trim() || `exit ${r.code}`, r.stdout.trim()].filter(Boolean).join('\n'),
          },
        ],
        isError: true,
      };
    return { content: [{ type: 'text', text: r.stdout.trim() }] };
  };
  const withTree = async (res: ToolResult, t: Target, want: boolean | undefined): Promise<ToolResult> => {
    if (res.isError || !want) return res;
    const tree = await run(['read', ...targetArgs(t)]);
    return { content: [...res.content, ...tree.content] };
  };
  const find = async (t: Target, name?: string, role?: string): Promise<Compact[] | ToolResult> => {
    const r = await run(['read', '--compact', ...targetArgs(t)]);
    if (r.isError) return r;
    const text = (r.content[0] as { text: string }).text;
    const parsed = JSON.parse(text) as { elements?: Compact[] } | Compact[];
    const els = Array.isArray(parsed) ? parsed : (parsed.elements ?? []);
    const n = name?.toLowerCase();
    return els.filter((e) => (!n || (e.t ?? '').toLowerCase().includes(n)) && (!role || e.r === role));
  };

  server.registerTool(
    'find',
    {
      description:
        "Find elements of a window by (part of) their name and/or short role; returns the compact elements. With text (and no name): the CLI's find, across all windows.",
      inputSchema: {
        ...target,
        name: z.string().optional(),
        role: z.string().optional(),
        text: z.string().optional(),
        roles: z.string().optional(),
        limit: z.number().int().optional(),
        exact: z.boolean().optional(),
      },
    },
    async (a) => {
      if (a.text !== undefined && a.name === undefined)
        return run([
          'find',
          '--text',
          a.text,
          ...opt('--app', a.app),
          ...opt('--roles', a.roles),
          ...opt('--limit', a.limit),
          ...opt('--exact', a.exact),
        ]);
      const found = await find(a, a.name, a.role);
      if (!Array.isArray(found)) return found;
      return { content: [{ type: 'text', text: JSON.stringify(found) }] };
    },
  );
  server.registerTool(
    'key',
    {
      description: 'Press a key combination: "enter", "tab", "ctrl+a", "ctrl+shift+t".',
      inputSchema: { ...target, combo: z.string(), delayMs: z.number().int().min(0).optional(), returnTree },
    },
    async (a) =>
      withTree(
        await run(['type', ...targetArgs(a), '--key', a.combo, ...opt('--delay', a.delayMs)]),
        a,
        a.returnTree,
      ),
  );
  // Every other command is a tool made from its definition in spec.ts (the CLI parses the same one):
  // a flag --window-id is the parameter windowId, values are passed as the CLI's arguments.
  for (const [name, spec] of Object.entries(COMMANDS)) {
    if (HAND_MADE.has(name)) continue;
    const tool = name.replace(/-/g, '_');
    const shape: Record<string, z.ZodType> = {};
    const flags = new Map<string, string>();
    for (const [flag, o] of Object.entries(optionsOf(spec))) {
      if (flag === 'pretty' || flag === 'raw') continue;
      const param = camel(flag);
      flags.set(param, flag);
      shape[param] = (
        o.type === 'boolean'
          ? z.boolean()
          : spec.multiple?.includes(flag)
            ? z.array(z.string())
            : flag === 'roles'
              ? z.union([z.string(), z.array(z.string())])
              : z.union([z.string(), z.number()])
      ).optional();
    }
    if (name === 'type') shape.delayMs = z.number().int().min(0).optional(); // the first MCP name of --delay
    if (name === 'clipboard')
      shape.command = z.enum(['read', 'write', 'clear', 'grab']).describe('what to do with the clipboard');
    if (name === 'open') shape.target = z.string().optional().describe('a URL or a file');
    if (name === 'do')
      shape.steps = z
        .union([z.string(), z.array(z.record(z.string(), z.unknown()))])
        .describe('the steps: a YAML list (as `do` reads on stdin), or the same list as JSON');
    if (name === 'fill') shape.fields = z.array(z.record(z.string(), z.unknown())).optional();
    if (name === 'observe')
      shape.duration = z.number().min(0.1).max(60).optional().describe('seconds (default 5)');
    if (ACTS.has(name)) shape.returnTree = returnTree;
    server.registerTool(
      tool,
      { description: `${spec.summary} (desktop-cli ${name})`, inputSchema: shape },
      async (a: Record<string, unknown>) => {
        const argv = [name];
        const positionals: string[] = [];
        let stdin: string | undefined;
        for (const [param, value] of Object.entries(a)) {
          if (value === undefined || value === null || param === 'returnTree') continue;
          if (param === 'delayMs') argv.push('--delay', String(value));
          else if (param === 'command' || param === 'target') positionals.push(String(value));
          else if (param === 'steps')
            stdin = typeof value === 'string' ? value : JSON.stringify(value); // JSON is YAML
          else if (param === 'fields') stdin = JSON.stringify({ fields: value, submit: a.submit });
          else {
            const flag = flags.get(param);
            if (!flag) continue;
            if (value === true) argv.push(`--${flag}`);
            else if (value === false) argv.push(`--${flag}=false`);
            else if (Array.isArray(value))
              if (spec.multiple?.includes(flag)) for (const x of value) argv.push(`--${flag}`, String(x));
              else argv.push(`--${flag}`, value.map(String).join(','));
            else argv.push(`--${flag}`, String(value));
          }
        }
        if (name === 'observe' && a.duration === undefined) argv.push('--duration', '5');
        if (name === 'screenshot-coords' && a.output === undefined) argv.push('--output', '-');
        const r = await run([...argv, ...(positionals.length ? ['--', ...positionals] : [])], stdin);
        if (name === 'screenshot-coords' && !r.isError && a.output === undefined) {
          const data = (r.content[0] as { text: string }).text;
          return {
            content: [{ type: 'image', data, mimeType: a.format === 'jpg' ? 'image/jpeg' : 'image/png' }],
          };
        }
        return ACTS.has(name) ? withTree(r, a, a.returnTree as boolean | undefined) : r;
      },
    );
  }
  server.registerTool(
    'wait_for',
    {
      description:
        'Wait until an element (by part of its name and/or short role) appears in a window — or is gone, with gone: true — or the timeout passes.',
      inputSchema: {
        ...target,
        name: z.string().optional(),
        role: z.string().optional(),
        gone: z.boolean().optional(),
        timeoutMs: z.number().int().min(0).max(120_000).optional().describe('default 5000'),
      },
    },
    async (a) => {
      const deadline = Date.now() + (a.timeoutMs ?? 5000);
      for (;;) {
        const found = await find(a, a.name, a.role);
        const list = Array.isArray(found) ? found : [];
        const done = a.gone ? list.length === 0 && Array.isArray(found) : list.length > 0;
        if (done) return { content: [{ type: 'text', text: JSON.stringify({ ok: true, found: list }) }] };
        if (Date.now() >= deadline) {
          const why = Array.isArray(found) ? '' : ` (${(found.content[0] as { text: string }).text})`;
          return {
            content: [
              {
                type: 'text',
                text: JSON.stringify({ ok: false, error: `timed out after ${a.timeoutMs ?? 5000} ms${why}` }),
              },
            ],
            isError: true,
          };
        }
        await new Promise((r) => setTimeout(r, 150));
      }
    },
  );
  server.registerTool(
    'screenshot',
    {
      description: 'A screenshot of the screen or one window (cursor drawn in), scaled, as an image.',
      inputSchema: {
        ...target,
        scale: z.number().min(0.1).max(1).optional().describe('default 0.5'),
        format: z.enum(['png', 'jpeg']).optional(),
        quality: z.number().int().min(1).max(100).optional(),
      },
    },
    async (a) => {
      try {
        const shot = await desktop.capture({
          ...(a.app ? { app: a.app } : {}),
          ...(a.window ? { title: a.window } : {}),
          ...(a.windowId !== undefined ? { windowId: a.windowId } : {}),
          ...(a.pid !== undefined ? { pid: a.pid } : {}),
          format: a.format ?? 'png',
          quality: a.quality ?? 80,
          scale: a.scale ?? 0.5,
        });
        return {
          content: [
            {
              type: 'image',
              data: shot.data.toString('base64'),
              mimeType: a.format === 'jpeg' ? 'image/jpeg' : 'image/png',
            },
            { type: 'text', text: JSON.stringify({ w: shot.width, h: shot.height, b: shot.source }) },
          ],
        };
      } catch (err) {
        return { content: [{ type: 'text', text: (err as Error).message }], isError: true };
      }
    },
  );

  return server;
}

/** `serve [--transport stdio|streamable-http] [--port n]`. */
export async function serve(args: string[], execute: Execute): Promise<number> {
  const flag = (name: string) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const transport = flag('--transport') ?? 'stdio';
  // A server reads the same windows again and again: it keeps their trees between reads, brought up
  // to date by the accessibility events that name what changed (decision in docs/decisions.md).
  await desktop.keepTrees(true).catch(() => undefined);
  if (transport === 'streamable-http') return serveHttp(Number(flag('--port') ?? 0), execute);
  if (transport !== 'stdio') {
    process.stderr.write(
      JSON.stringify({
        error: 'USAGE',
        message: `--transport must be stdio or streamable-http (not "${transport}")`,
      }) + '\n',
    );
    return 2;
  }
  await buildServer(execute).connect(new StdioServerTransport());
  // Serve until the client closes stdin.
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  return 0;
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: message }));
}

/**
 * MCP over streamable HTTP, stateless (a server per request), on the loopback interface only, for a
 * client that shows the token printed on stderr at start (or given in DESKTOP_CLI_MCP_TOKEN) as
 * `Authorization: Bearer <token>`: any local user or process can reach a loopback port, and the
 * desktop's tools type and click as the person. A Host other than the loopback's is refused too (a
 * web page's DNS rebinding).
 */
async function serveHttp(port: number, execute: Execute): Promise<number> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(JSON.stringify({ error: 'USAGE', message: '--port must be 0-65535' }) + '\n');
    return 2;
  }
  const token = process.env.DESKTOP_CLI_MCP_TOKEN || randomBytes(32).toString('hex');
  const want = Buffer.from(`Bearer ${token}`);
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(host)) return refuse(res, 403, 'not a loopback Host');
    const given = Buffer.from(req.headers.authorization ?? '');
    if (given.length !== want.length || !timingSafeEqual(given, want))
      return refuse(res, 401, 'missing or wrong token (Authorization: Bearer <token>)');
    if ((req.url ?? '').split('?')[0] !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    const server = buildServer(execute);
    const t = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void t.close().then(() => server.close()));
    void server
      .connect(t)
      .then(() => t.handleRequest(req, res))
      .catch((e: unknown) => {
        if (!res.headersSent) refuse(res, 500, (e as Error).message);
      });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, '127.0.0.1', resolve);
  });
  const addr = http.address() as { port: number };
  process.stderr.write(JSON.stringify({ url: `http://127.0.0.1:${addr.port}/mcp`, token }) + '\n');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  http.close();
  return 0;
}
