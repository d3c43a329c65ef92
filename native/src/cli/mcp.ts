// `desktop-cli serve`: the desktop as an MCP server on stdio, for any agent (codex, claude, …).
// Every tool is a desktop-cli command run in this process (same validation, same compact JSON, same
// errors), so the MCP surface and the CLI cannot drift apart. Screenshots come back as MCP images.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import pkg from '../../package.json' with { type: 'json' };
import { desktop } from '../desktop/desktop.ts';

type Execute = (argv: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;
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

export async function serve(_args: string[], execute: Execute): Promise<number> {
  const server = new McpServer({ name: 'runboard-desktop', version: pkg.version });

  const run = async (argv: string[]): Promise<ToolResult> => {
    const r = await execute(argv);
    if (r.code !== 0)
      return { content: [{ type: 'text', text: r.stderr.trim() || `exit ${r.code}` }], isError: true };
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
    'list',
    {
      description:
        'List running apps (apps: true), the monitors (monitors: true: name, bounds [x,y,w,h] in screen pixels, primary) or top-level windows (default): app, pid, title, id, bounds, focused.',
      inputSchema: {
        apps: z.boolean().optional(),
        monitors: z.boolean().optional(),
        app: z.string().optional(),
        pid: z.number().int().optional(),
      },
    },
    async (a) =>
      run([
        'list',
        ...(a.apps ? ['--apps'] : a.monitors ? ['--monitors'] : ['--windows']),
        ...opt('--app', a.app),
        ...opt('--pid', a.pid),
      ]),
  );
  server.registerTool(
    'read',
    {
      description:
        'Read a window’s accessibility tree as compact JSON (short keys: i id, r role, t title, v value or the text a label shows, d description, b bounds [x,y,w,h] in screen pixels, f focused, e enabled, s selected, c children, a actions). Element ids are for click/type/action/… on the same window.',
      inputSchema: {
        ...target,
        depth: z.number().int().min(1).optional(),
        roles: z.array(z.string()).optional().describe('short roles to keep, e.g. ["btn","txt"]'),
        visibleOnly: z.boolean().optional().describe('default true'),
        compact: z.boolean().optional().describe('flat list instead of a tree'),
      },
    },
    async (a) =>
      run([
        'read',
        ...targetArgs(a),
        ...opt('--depth', a.depth),
        ...(a.roles?.length ? ['--roles', a.roles.join(',')] : []),
        ...(a.visibleOnly === false ? ['--visible-only=false'] : []),
        ...opt('--compact', a.compact),
      ]),
  );
  server.registerTool(
    'find',
    {
      description:
        'Find elements of a window by (part of) their name and/or short role; returns the compact elements.',
      inputSchema: { ...target, name: z.string().optional(), role: z.string().optional() },
    },
    async (a) => {
      const found = await find(a, a.name, a.role);
      if (!Array.isArray(found)) return found;
      return { content: [{ type: 'text', text: JSON.stringify(found) }] };
    },
  );
  server.registerTool(
    'click',
    {
      description: 'Click an element by id (from read/find) or a screen point.',
      inputSchema: {
        ...target,
        id: z.number().int().optional(),
        x: z.number().int().optional(),
        y: z.number().int().optional(),
        button: z.enum(['left', 'right', 'middle']).optional(),
        double: z.boolean().optional(),
        returnTree,
      },
    },
    async (a) =>
      withTree(
        await run([
          'click',
          ...targetArgs(a),
          ...opt('--id', a.id),
          ...opt('--x', a.x),
          ...opt('--y', a.y),
          ...opt('--button', a.button),
          ...opt('--double', a.double),
        ]),
        a,
        a.returnTree,
      ),
  );
  server.registerTool(
    'type',
    {
      description: 'Type any Unicode text, into an element by id (focused first) or into the focused window.',
      inputSchema: {
        ...target,
        text: z.string(),
        id: z.number().int().optional(),
        delayMs: z.number().int().min(0).optional(),
        returnTree,
      },
    },
    async (a) =>
      withTree(
        await run([
          'type',
          ...targetArgs(a),
          '--text',
          a.text,
          ...opt('--id', a.id),
          ...opt('--delay', a.delayMs),
        ]),
        a,
        a.returnTree,
      ),
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
  server.registerTool(
    'scroll',
    {
      description: 'Scroll at an element or point: direction up/down/left/right, amount in wheel clicks.',
      inputSchema: {
        ...target,
        direction: z.enum(['up', 'down', 'left', 'right']).optional(),
        amount: z.number().int().min(1).optional(),
        id: z.number().int().optional(),
        x: z.number().int().optional(),
        y: z.number().int().optional(),
        returnTree,
      },
    },
    async (a) =>
      withTree(
        await run([
          'scroll',
          ...targetArgs(a),
          ...opt('--direction', a.direction),
          ...opt('--amount', a.amount),
          ...opt('--id', a.id),
          ...opt('--x', a.x),
          ...opt('--y', a.y),
        ]),
        a,
        a.returnTree,
      ),
  );
  server.registerTool(
    'drag',
    {
      description: 'Drag from an element or point to an element or point.',
      inputSchema: {
        ...target,
        fromId: z.number().int().optional(),
        fromX: z.number().int().optional(),
        fromY: z.number().int().optional(),
        toId: z.number().int().optional(),
        toX: z.number().int().optional(),
        toY: z.number().int().optional(),
        returnTree,
      },
    },
    async (a) =>
      withTree(
        await run([
          'drag',
          ...targetArgs(a),
          ...opt('--from-id', a.fromId),
          ...opt('--from-x', a.fromX),
          ...opt('--from-y', a.fromY),
          ...opt('--to-id', a.toId),
          ...opt('--to-x', a.toX),
          ...opt('--to-y', a.toY),
        ]),
        a,
        a.returnTree,
      ),
  );
  server.registerTool(
    'focus',
    { description: 'Focus and raise a window by app, title, window id or pid.', inputSchema: { ...target } },
    async (a) => run(['focus', ...targetArgs(a)]),
  );
  server.registerTool(
    'action',
    {
      description:
        'Perform an element’s accessibility action (press, activate, toggle, …) without a synthetic click.',
      inputSchema: { ...target, id: z.number().int(), name: z.string().optional(), returnTree },
    },
    async (a) =>
      withTree(
        await run(['action', ...targetArgs(a), '--id', String(a.id), ...opt('--name', a.name)]),
        a,
        a.returnTree,
      ),
  );
  server.registerTool(
    'set_value',
    {
      description: 'Replace the text of an editable element: focus it, select all, type the value.',
      inputSchema: { ...target, id: z.number().int(), value: z.string(), returnTree },
    },
    async (a) => {
      // `type --id` focuses the element and waits until it has the focus before pressing anything.
      const all = await run(['type', ...targetArgs(a), '--id', String(a.id), '--key', 'ctrl+a']);
      if (all.isError) return all;
      // Now type into the focused element: another `--id` would click it again and drop the selection.
      return withTree(await run(['type', ...targetArgs(a), '--text', a.value]), a, a.returnTree);
    },
  );
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

  await server.connect(new StdioServerTransport());
  // Serve until the client closes stdin.
  await new Promise<void>((resolve) => process.stdin.once('close', resolve));
  return 0;
}
