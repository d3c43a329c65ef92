// Ctrl+I in `runboard record` on its own (seed 002): the recording pauses and a small prompt window
// (zenity) asks; what the person enters becomes an extract step with its candidates, and the recording
// goes on. A scripted person (XTest) works the form and fills the prompt through its accessibility tree.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PROMPT_TITLE } from '../../host/src/cli/record-prompt.ts';
import { allElements } from '../../native/src/desktop/compact.ts';
import { desktop, type Element, type ManifestStep } from '../../native/src/index.ts';
import { DesktopSession, eventually, findElement, repo, sleep } from './session.ts';

const TITLE = 'Runboard Prompt Form';
let s: DesktopSession;
let out: string;

beforeAll(async () => {
  s = await DesktopSession.start();
  await s.startForm(TITLE, {}, ['--x', '40', '--y', '40']);
  out = mkdtempSync(path.join(os.tmpdir(), 'runboard-prompt-'));
}, 60_000);

afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  await s?.stop();
  expect(s.leftovers(), 'processes the suite started and left running').toEqual([]);
});

const middle = (e: Element): [number, number] => [
  e.bounds[0] + Math.floor(e.bounds[2] / 2),
  e.bounds[1] + Math.floor(e.bounds[3] / 2),
];

it('asks in a prompt window at Ctrl+I and records the extract the person enters', async () => {
  const cli = path.join(repo, 'dist', 'runboard.mjs');
  const display = s.env.DISPLAY!;
  const child = spawn(process.execPath, [cli, 'record', '--display', display, '--out', out, '--no-video'], {
    env: s.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((res) => child.once('exit', res));
  try {
    expect(await eventually(async () => stderr.includes('; Ctrl+C'), 20_000), stderr).toBe(true);
    const name = await findElement(TITLE, 'text', 'Name');
    await desktop.click(...middle(name));
    await desktop.type('Ada');
    await desktop.key('ctrl+i');
    const prompt = await eventually(
      async () => (await desktop.listWindows({ title: PROMPT_TITLE }))[0],
      20_000,
    );
    expect(prompt, `the prompt window; recorder said: ${stderr}`).toBeTruthy();
    const els = await eventually(async () => {
      const all = allElements((await desktop.read({ windowId: prompt!.id })).elements);
      return all.some((e) => e.role === 'push button' && e.name === 'OK') ? all : undefined;
    }, 10_000);
    // Each entry sits beside its label.
    const entryBy = (label: string): Element => {
      const l = els!.find((e) => e.role === 'label' && e.name.startsWith(label))!;
      return els!.find((e) => e.role === 'text' && e.editable && Math.abs(e.bounds[1] - l.bounds[1]) < 4)!;
    };
    // A person waits for the caret before typing: a click's focus change lands a moment later.
    const fill = async (label: string, text: string): Promise<void> => {
      const entry = entryBy(label);
      await desktop.click(...middle(entry));
      const focused = await eventually(async () => {
        const now = allElements((await desktop.read({ windowId: prompt!.id })).elements);
        return now.find((e) => e.id === entry.id)?.focused;
      }, 5000);
      expect(focused, `the ${label} entry has the focus`).toBe(true);
      await desktop.type(text);
    };
    await fill('Query or note', 'the customer name');
    await fill('Candidate values', 'Ada, Grace');
    await desktop.click(...middle(els!.find((e) => e.role === 'push button' && e.name === 'OK')!));
    expect(await eventually(async () => stderr.includes('recording again'), 10_000), stderr).toBe(true);
    await desktop.click(...middle(name));
    await sleep(1000);
  } finally {
    child.kill('SIGINT');
  }
  expect(await exited, stderr).toBe(0);
  const id = /recording (rec-\S+) into/.exec(stderr)![1]!;
  const steps = readFileSync(path.join(out, id, 'manifest.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as ManifestStep);
  // The prompt's own typing and clicks are not steps: the recording was paused.
  expect(steps.map((x) => x.action.type)).toEqual(['click', 'type', 'extract', 'click']);
  expect(steps[2]!.action).toEqual({
    type: 'extract',
    query: 'the customer name',
    candidates: ['Ada', 'Grace'],
  });
}, 90_000);
