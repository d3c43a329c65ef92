// A coding agent given the desktop: a real `claude` run (scripted model on loopback) whose flow says
// `desktop: true` gets `desktop-cli serve` as its MCP server for that run only, and presses a button
// in our GTK test app with it. The app's own state, read back through the accessibility tree, proves it.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { desktop } from '../../native/src/index.ts';
import { allElements } from '../../native/src/desktop/compact.ts';
import { DIST } from '../helpers/harness.ts';
import { DesktopSession, eventually } from '../desktop/session.ts';
import { AgentHarness } from './agent-harness.ts';

const TITLE = 'Runboard Agent Form';
let s: DesktopSession;
let a: AgentHarness;

beforeAll(async () => {
  s = await DesktopSession.start();
  await s.startForm(TITLE);
  a = await AgentHarness.start();
});
afterAll(async () => {
  await a?.stop();
  await s?.stop();
});

async function statusLabel(): Promise<string> {
  const els = allElements((await desktop.read({ title: TITLE, visibleOnly: false })).elements);
  return els.find((e) => e.role === 'label' && /^(status|clicked)/.test(e.name))?.name ?? '';
}

describe('claude with the desktop as an MCP server', () => {
  it('presses Submit in the GTK app through desktop-cli serve', async () => {
    // The id the agent will use is the one desktop-cli gives the button in a read of the window.
    const read = s.run(['read', '--window', TITLE, '--compact']);
    const submit = (read.json as { elements: { i: number; r: string; t?: string }[] }).elements.find(
      (e) => e.r === 'btn' && e.t === 'Submit',
    )!;
    expect(submit).toBeDefined();
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
    expect(await statusLabel()).toBe('status: idle');
    const rec = await a.run(
      a.card('Press submit', 'EPISODE:desktop press the Submit button of the form'),
      a.flow('claude', {
        worktree: false,
        desktop: true,
        // X11's socket is an abstract Unix socket; the display and the session bus come from the flow.
        sandbox: { allowAbstractUnix: true },
        env: {
          DISPLAY: s.env.DISPLAY!,
          DBUS_SESSION_BUS_ADDRESS: s.env.DBUS_SESSION_BUS_ADDRESS!,
          RUNBOARD_DESKTOP_CLI: path.join(DIST, 'desktop-cli.cjs'),
        },
      }),
    );
    expect(rec.result.status, rec.result.summary + rec.stderr).toBe('succeeded');
    expect(await eventually(async () => (await statusLabel()) === 'clicked Submit 1')).toBe(true);
    // The MCP tool results went back to the model: the click's answer is in the last request.
    const last = a.model.requests.filter((r) => r.episode === 'desktop').at(-1)!;
    expect(JSON.stringify(last.body)).toContain('\\"ok\\":true');
  });
});
