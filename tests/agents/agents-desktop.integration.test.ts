// A coding agent given the desktop: a real `claude` or `codex` run (scripted model on loopback) whose
// flow says `desktop: true` gets `desktop-cli serve` as its MCP server for that run only, and presses a
// button in our GTK test app with it. The app's own state, read back through the accessibility tree,
// proves it. codex runs with its own sandbox on, as config.yaml gives it (`agentSandbox: auto`).
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { allElements } from '../../native/src/desktop/compact.ts';
import type { TurnFn } from '../fixtures/model-server/server.ts';
import { DIST } from '../helpers/harness.ts';
import { DesktopSession, eventually } from '../desktop/session.ts';
import { AgentHarness } from './agent-harness.ts';

const CLAUDE_FORM = 'Runboard Claude Form';
const CODEX_FORM = 'Runboard Codex Form';

/** The flow's part that gives the run the test desktop. */
const desktopEnv = () => ({
  DISPLAY: s.env.DISPLAY!,
  DBUS_SESSION_BUS_ADDRESS: s.env.DBUS_SESSION_BUS_ADDRESS!,
  RUNBOARD_DESKTOP_CLI: path.join(DIST, 'desktop-cli.cjs'),
});

/** The id desktop-cli gives Submit in a read of the form (the one the agent will use). */
function submitId(title: string): number {
  const read = s.run(['read', '--window', title, '--compact']);
  return (read.json as { elements: { i: number; r: string; t?: string }[] }).elements.find(
    (e) => e.r === 'btn' && e.t === 'Submit',
  )!.i;
}
let s: DesktopSession;
let a: AgentHarness;
let runtimeDir: string;

beforeAll(async () => {
  runtimeDir = mkdtempSync(path.join(os.tmpdir(), 'rb-agents-runtime-'));
  chmodSync(runtimeDir, 0o700);
  mkdirSync(path.join(runtimeDir, 'runboard-atspi'), { mode: 0o700 }); // kept in the run, read-only
  s = await DesktopSession.start();
  await s.startForm(CLAUDE_FORM);
  await s.startForm(CODEX_FORM);
  a = await AgentHarness.start();
});
afterAll(async () => {
  await a?.stop();
  await s?.stop();
  if (runtimeDir) rmSync(runtimeDir, { recursive: true, force: true });
});

/** The form's status line ("status: idle", "clicked Submit 1"): the app's own state. */
async function statusLabel(title: string): Promise<string> {
  const els = allElements((await desktop.read({ title, visibleOnly: false })).elements);
  return els.find((e) => e.role === 'label' && /^(status|clicked)/.test(e.name))?.name ?? '';
}

describe('claude with the desktop as an MCP server', () => {
  it('presses Submit in the GTK app through desktop-cli serve', async () => {
    const TITLE = CLAUDE_FORM;
    const submit = { i: submitId(TITLE) };
    a.episodes([
      {
        name: 'desktop',
        match: 'EPISODE:desktop',
        turns: [
          { toolCalls: [{ name: 'mcp__desktop__read', arguments: { window: TITLE, roles: ['btn'] } }] },
          { toolCalls: [{ name: 'mcp__desktop__click', arguments: { window: TITLE, id: submit.i } }] },
          {
            text: `Pressed Submit.\nRUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary: 'pressed Submit' })}`,
          },
        ],
      },
    ]);
    expect(await statusLabel(TITLE)).toBe('status: idle');
    const rec = await a.run(
      a.card('Press submit', 'EPISODE:desktop press the Submit button of the form'),
      a.flow('claude', {
        worktree: false,
        desktop: true,
        // The display and the session bus come from the flow; no allowAbstractUnix: X clients take the
        // display's path socket (decision 134).
        // The person's runtime folder, as a desktop flow on their display has it: read-only in the run,
        // with only the buses there (decision 122). desktop-cli keeps its read context elsewhere then
        // (the click by id needs it).
        env: { ...desktopEnv(), XDG_RUNTIME_DIR: runtimeDir },
      }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(await eventually(async () => (await statusLabel(TITLE)) === 'clicked Submit 1')).toBe(true);
    // The MCP tool results went back to the model: the click's answer is in the last request.
    const last = a.model.requests.filter((r) => r.episode === 'desktop').at(-1)!;
    expect(JSON.stringify(last.body)).toContain('\\"ok\\":true');
  });
});

/** codex offers an MCP server's tools as one Responses API namespace tool, `mcp__<server>`. */
function desktopNamespace(body: Record<string, unknown>): { name: string; tools: string[] } {
  const ns = ((body.tools ?? []) as { type?: string; name?: string; tools?: { name: string }[] }[]).find(
    (t) => t.type === 'namespace' && t.name === 'mcp__desktop',
  );
  if (!ns) throw new Error('codex offered no mcp__desktop namespace');
  return { name: ns.name!, tools: (ns.tools ?? []).map((t) => t.name) };
}

describe('codex with the desktop as an MCP server', () => {
  it('presses Submit in the GTK app through desktop-cli serve, with its own sandbox on', async () => {
    const TITLE = CODEX_FORM;
    const submit = { i: submitId(TITLE) };
    let offered: string[] = [];
    const call =
      (tool: string, args: Record<string, unknown>): TurnFn =>
      ({ body }) => {
        const ns = desktopNamespace(body);
        offered = ns.tools;
        return { toolCalls: [{ name: tool, namespace: ns.name, arguments: args }] };
      };
    a.episodes([
      {
        name: 'codex-desktop',
        match: 'EPISODE:codex-desktop',
        turns: [
          call('read', { window: TITLE, roles: ['btn'] }),
          call('click', { window: TITLE, id: submit.i }),
          {
            text: `Pressed Submit.\nRUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary: 'pressed Submit' })}`,
          },
        ],
      },
    ]);
    expect(await statusLabel(TITLE)).toBe('status: idle');
    const rec = await a.run(
      a.card('Press submit', 'EPISODE:codex-desktop press the Submit button of the form'),
      a.flow('codex', {
        worktree: false,
        desktop: true,
        sandbox: { agentSandbox: 'auto' },
        env: desktopEnv(),
      }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(offered).toEqual(expect.arrayContaining(['read', 'click', 'wait_for', 'screenshot']));
    expect(rec.result.sandbox).toMatchObject({ fs: 'mounts' }); // codex's own sandbox was on
    expect(await eventually(async () => (await statusLabel(TITLE)) === 'clicked Submit 1')).toBe(true);
    const last = a.model.requests.filter((r) => r.episode === 'codex-desktop').at(-1)!;
    expect(JSON.stringify(last.body)).toContain('\\"ok\\":true');
  });
});
