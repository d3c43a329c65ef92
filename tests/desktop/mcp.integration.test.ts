// `desktop-cli serve` as an MCP server on its own, driven by the official MCP client over stdio
// against our GTK form on the test desktop: the tools are there, and they act on the real app.
import { spawn, spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without type declarations
import { mcpBuildOptions } from '../../native/scripts/bundle-cli.mjs';
import { decodePng } from './png.ts';
import { DesktopSession, eventually } from './session.ts';

const TITLE = 'Runboard MCP Form';
const PASSWORD = 'mcp-secret-pw';
let s: DesktopSession;
let client: Client;

type Text = { type: 'text'; text: string };
type Result = { content: ({ type: string } & Record<string, unknown>)[]; isError?: boolean };
async function call(name: string, args: Record<string, unknown>): Promise<Result> {
  return (await client.callTool({ name, arguments: args })) as Result;
}
const text = (r: Result, i = 0): string => (r.content[i] as Text).text;

beforeAll(async () => {
  s = await DesktopSession.start();
  await build(mcpBuildOptions(path.join(path.dirname(s.cli), 'desktop-mcp.cjs')));
  await s.startForm(TITLE, {}, ['--password', PASSWORD]);
  client = new Client({ name: 'runboard-test', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [s.cli, 'serve'],
      env: s.env as Record<string, string>,
    }),
  );
});

afterAll(async () => {
  await client?.close();
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

describe('desktop-cli serve (MCP)', () => {
  it('lists the tools the issue names: every desktop-cli command (from its one definition), and the first MCP names', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'action',
        'assert',
        'click',
        'clipboard',
        'do',
        'drag',
        'fill',
        'find',
        'focus',
        'hover',
        'key',
        'list',
        'observe',
        'open',
        'read',
        'screenshot',
        'screenshot_coords',
        'scroll',
        'set_value',
        'type',
        'wait',
        'wait_for',
      ].sort(),
    );
  });

  it('lists the monitors (the test desktop has one: the whole screen)', async () => {
    const mons = JSON.parse(text(await call('list', { monitors: true }))) as { bounds: number[] }[];
    expect(mons).toHaveLength(1);
    expect(mons[0]!.bounds).toEqual([0, 0, 1280, 800]);
  });

  it('finds and clicks a button by id; the app shows it was pressed; the tree can come back with it', async () => {
    const found = JSON.parse(text(await call('find', { window: TITLE, name: 'Submit', role: 'btn' }))) as {
      i: number;
    }[];
    expect(found).toHaveLength(1);
    const r = await call('click', { window: TITLE, id: found[0]!.i, returnTree: true });
    expect(r.isError).toBeFalsy();
    expect(JSON.parse(text(r))).toMatchObject({ ok: true });
    expect(text(r, 1)).toContain('Submit'); // the tree after the click
    const done = JSON.parse(
      text(await call('wait_for', { window: TITLE, name: 'clicked Submit 1', timeoutMs: 5000 })),
    );
    expect(done.ok).toBe(true);
  });

  it('set_value replaces an entry’s text, and the tree shows the new value; the password stays secret', async () => {
    const [nameEntry] = JSON.parse(
      text(await call('find', { window: TITLE, name: 'Name', role: 'input' })),
    ) as { i: number }[];
    await call('set_value', { window: TITLE, id: nameEntry!.i, value: 'first' });
    const r = await call('set_value', {
      window: TITLE,
      id: nameEntry!.i,
      value: 'héllo ✓',
      returnTree: true,
    });
    expect(r.isError).toBeFalsy();
    const value = async (): Promise<string | undefined> =>
      (
        JSON.parse(text(await call('find', { window: TITLE, name: 'Name', role: 'input' }))) as {
          v?: string;
        }[]
      )[0]?.v;
    // The tree catches up with the entry's text a moment later: poll (a rejection would end the poll).
    let seen: string | undefined;
    await eventually(async () => (seen = await value()) === 'héllo ✓');
    expect(seen).toBe('héllo ✓');
    expect(JSON.stringify(r)).not.toContain(PASSWORD);
    expect(text(await call('read', { window: TITLE }))).not.toContain(PASSWORD);
  });

  it('reports errors as tool errors with the reason, and keeps serving', async () => {
    const r = await call('click', { window: 'No Such Window Anywhere', id: 1 });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/APP_NOT_FOUND|no window/i);
    const t = await call('wait_for', { window: TITLE, name: 'never appears', timeoutMs: 300 });
    expect(t.isError).toBe(true);
    expect(text(t)).toMatch(/timed out after 300 ms/);
    expect((await call('list', {})).isError).toBeFalsy();
  });

  it("runs the public tool's batch (do), assert and wait as tools, with the CLI's results and failures", async () => {
    const r = await call('do', {
      window: TITLE,
      steps:
        '- set-value: { text: "Email", value: "mcp@example.com" }\n- assert: { text: "Email", roles: input, value: "mcp@example.com" }\n',
    });
    expect(r.isError, text(r)).toBeFalsy();
    expect(JSON.parse(text(r))).toMatchObject({ ok: true, action: 'do', steps: 2, completed: 2 });
    const failed = await call('assert', {
      window: TITLE,
      text: 'Email',
      roles: 'input',
      value: 'something else',
    });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toContain('ASSERTION_FAILED');
    expect(text(failed)).toContain('"pass":false');
    const waited = await call('wait', { window: TITLE, forText: 'never there', timeout: 0.3, interval: 50 });
    expect(waited.isError).toBe(true);
    expect(text(waited)).toContain('"timed_out":true');
  });

  it('returns a screenshot as an MCP image of the right size', async () => {
    const r = await call('screenshot', { window: TITLE, scale: 0.5 });
    const img = r.content[0] as { type: string; data: string; mimeType: string };
    expect(img.type).toBe('image');
    expect(img.mimeType).toBe('image/png');
    const meta = JSON.parse(text(r, 1)) as { w: number; h: number };
    const png = decodePng(Buffer.from(img.data, 'base64'));
    expect([png.width, png.height]).toEqual([meta.w, meta.h]);
    expect(png.width).toBeGreaterThan(50);
  });
});

describe('desktop-cli serve --transport streamable-http', () => {
  it('serves the tools on loopback to a client with the token; no token, a wrong one, another user or a foreign Host is refused', async () => {
    const child = spawn(process.execPath, [s.cli, 'serve', '--transport', 'streamable-http', '--port', '0'], {
      env: s.env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      const first = await new Promise<string>((resolve, reject) => {
        let buf = '';
        child.stderr.on('data', (d: Buffer) => {
          buf += d.toString();
          if (buf.includes('\n')) resolve(buf.split('\n')[0]!);
        });
        child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${buf}`)));
      });
      const { url, token } = JSON.parse(first) as { url: string; token: string };
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      const port = Number(new URL(url).port);
      const init = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '0' } },
      });
      const post = (headers: Record<string, string>) =>
        new Promise<number>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              path: '/mcp',
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                accept: 'application/json, text/event-stream',
                ...headers,
              },
            },
            (res) => (res.resume(), resolve(res.statusCode ?? 0)),
          );
          req.once('error', reject);
          req.end(init);
        });
      expect(await post({})).toBe(401);
      expect(await post({ authorization: `Bearer ${'0'.repeat(token.length)}` })).toBe(401);
      expect(await post({ authorization: `Bearer ${token}`, host: 'evil.example' })).toBe(403);
      // Another local user reaches the port (loopback is open to every user) and is refused without the token.
      const other = spawnSync(
        'setpriv',
        [
          '--reuid=65534',
          '--regid=65534',
          '--clear-groups',
          'curl',
          '-s',
          '-o',
          '/dev/null',
          '-w',
          '%{http_code}',
          '-X',
          'POST',
          '-H',
          'content-type: application/json',
          '--data',
          init,
          url,
        ],
        { encoding: 'utf8' },
      );
      expect(other.stdout).toBe('401');
      // Not on any other interface.
      const external = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && a.family === 'IPv4' && !a.internal);
      if (external) {
        const refused = await new Promise<boolean>((resolve) => {
          const sock = connect({ host: external.address, port }, () => (sock.destroy(), resolve(false)));
          sock.once('error', () => resolve(true));
        });
        expect(refused, `port ${port} open on ${external.address}`).toBe(true);
      }
      // The real client with the token: the same tools, acting on the real form.
      const http = new Client({ name: 'runboard-http-test', version: '0.0.0' });
      await http.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { authorization: `Bearer ${token}` } },
        }),
      );
      const { tools } = await http.listTools();
      expect(tools.map((t) => t.name)).toContain('click');
      const r = (await http.callTool({ name: 'read', arguments: { window: TITLE } })) as Result;
      expect(r.isError, text(r)).toBeFalsy();
      expect(text(r)).toContain('"Submit"');
      await http.close();
    } finally {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    }
  });
});
