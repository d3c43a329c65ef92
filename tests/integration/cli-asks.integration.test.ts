// A run that waits at a tool call, met from a terminal (issue 28): `runboard run` says what the run asks
// and how to answer, and `runboard answer` answers it (a real CLI, its own state root and supervisor, a
// real run asking on its ask socket before the act).
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type CliOutcome, DIST, processesMentioning, runboardCli, waitUntil } from '../helpers/harness.ts';

let root: string;
let env: NodeJS.ProcessEnv;

const rb = (args: string[]): Promise<CliOutcome> => runboardCli(args, { env, cwd: root });

beforeAll(async () => {
  root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'rb-cli-asks-')));
  // a command run gets a Node worker (and so the ask socket), as agent runs do
  env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home'), RUNBOARD_COMMAND_WORKER: 'node' };
  delete env.NODE_EXTRA_CA_CERTS;
  for (const d of ['project/cards', 'ws', 'elsewhere']) mkdirSync(path.join(root, d), { recursive: true });
  writeFileSync(
    path.join(root, 'project', 'config.yaml'),
    'version: 1\nscheduler: { maxConcurrency: 2 }\nflows:\n  shell: { runner: command }\n',
  );
  expect((await rb(['grant', 'ws'])).code).toBe(0);
});
afterAll(async () => {
  await rb(['supervisor', 'stop', '--force']);
  await waitUntil('the supervisor to stop', () => processesMentioning(root).length === 0, 5000);
  rmSync(root, { recursive: true, force: true });
});

/** A card whose command asks (kind write, `p`) on the run's ask socket, prints the answer, then runs `then`. */
function askingCard(name: string, p: string, then: string): string {
  const asking =
    `node -e "const s=require('net').connect(process.env.RUNBOARD_ASK_SOCKET);` +
    `s.write(JSON.stringify({kind:'write',path:'${p}',tool:'Write'})+'\\n');` +
    `s.on('data',d=>{console.log('ANSWER',JSON.parse(d).decision);s.end()})"; ${then}`;
  const card = path.join(root, 'project', 'cards', `${name}.md`);
  writeFileSync(
    card,
    `---\ntitle: ${name}\nflow: shell\nworkspace: ../ws\ncommand: ${JSON.stringify(asking)}\n---\n`,
  );
  return card;
}

/** `runboard run <card>` in the background: its output so far, the run id and ask once printed, its end. */
function runInBackground(card: string) {
  const child = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), 'run', card], { env, cwd: root });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (b: Buffer) => (out.stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out.stderr += b.toString()));
  const ended = new Promise<number | null>((resolve) => child.on('close', resolve));
  const asked = async (): Promise<string> => {
    // not a terminal: the ask is still printed, since the run waits for it
    await waitUntil(
      'the ask on stderr',
      () => /runboard answer \S+ a1 deny/.test(out.stderr) || child.exitCode !== null,
      60_000,
    );
    const m = /runboard answer (\S+) a1 deny/.exec(out.stderr);
    if (!m) throw new Error(`the run printed no ask: ${out.stderr}${out.stdout}`);
    return m[1]!;
  };
  return { out, ended, asked };
}

it('run prints the ask and how to answer it; answer deny reaches the waiting tool, and the run goes on', async () => {
  const target = path.join(root, 'elsewhere');
  const r = runInBackground(askingCard('deny', `${target}/x`, 'echo went on'));
  const runId = await r.asked();
  expect(r.out.stderr).toContain(`? the run asks to write ${target} and waits`);
  expect(await rb(['answer', runId, 'a1', 'maybe'])).toMatchObject({ code: 2 });
  expect(await rb(['answer', 'not-a-run', 'a1', 'deny'])).toMatchObject({ code: 2 });
  expect(await rb(['answer', runId, 'a1', 'deny'])).toMatchObject({
    code: 0,
    stdout: `denied: run ${runId}, a1\n`,
  });
  expect(await r.ended).toBe(0);
  expect(r.out.stdout).toContain('ANSWER deny');
  expect(r.out.stdout).toContain('went on');
  // the run has ended: nothing waits on its ask any more, and the answer says so
  const again = await rb(['answer', runId, 'a1', 'allow']);
  expect(again.code).not.toBe(0);
  expect(again.stderr).toContain(`no active run ${runId}`);
}, 120_000);

it('answer allow: the same run gains the folder and writes there', async () => {
  const target = path.join(root, 'elsewhere');
  const r = runInBackground(askingCard('allow', `${target}/x`, `echo from the run > ${target}/x`));
  const runId = await r.asked();
  expect(await rb(['answer', runId, 'a1', 'allow'])).toMatchObject({
    code: 0,
    stdout: `allowed: run ${runId}, a1\n`,
  });
  expect(await r.ended).toBe(0);
  expect(r.out.stdout).toContain('ANSWER allow');
  expect(readFileSync(path.join(target, 'x'), 'utf8')).toBe('from the run\n');
}, 120_000);
