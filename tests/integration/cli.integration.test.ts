// The `runboard` CLI as a user runs it: a real process, its own state root, its own supervisor.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliOutcome, DIST, processesMentioning, runboardCli, waitUntil } from '../helpers/harness.ts';

let root: string;
let env: NodeJS.ProcessEnv;

const rb = (args: string[], opts: { cwd?: string } = {}): Promise<CliOutcome> =>
  runboardCli(args, { env, cwd: opts.cwd ?? root, maxBuffer: 64 * 1024 * 1024 });

function card(name: string, command: string, flow = 'shell'): string {
  const file = path.join(root, 'project', 'cards', `${name}.md`);
  writeFileSync(
    file,
    `---\ntitle: ${name}\nflow: ${flow}\nworkspace: ../ws\ncommand: ${JSON.stringify(command)}\n---\n# Task\n${name}\n`,
  );
  return file;
}

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-cli-'));
  env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
  delete env.NODE_EXTRA_CA_CERTS;
  mkdirSync(path.join(root, 'project', 'cards'), { recursive: true });
  mkdirSync(path.join(root, 'ws'));
  writeFileSync(
    path.join(root, 'project', 'config.yaml'),
    'version: 1\nscheduler: { maxConcurrency: 4 }\nflows:\n  shell: { runner: command, cap: 2, killGrace: 300ms }\n  quick: { runner: command, timeout: 300ms, killGrace: 100ms }\n',
  );
});
afterAll(async () => {
  await rb(['supervisor', 'stop', '--force']);
  await waitUntil('the supervisor to stop', () => processesMentioning(root).length === 0, 5000);
  rmSync(root, { recursive: true, force: true });
});

describe('runboard', () => {
  it('refuses to run a card whose workspace has no grant, saying how to grant it', async () => {
    const r = await rb(['run', card('nogrant', 'true')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`no grant covers the workspace ${path.join(root, 'ws')}`);
    expect(r.stderr).toContain(`runboard grant ${path.join(root, 'ws')}`);
  });

  it('run --json reports a missing grant as a JSON line a program can act on', async () => {
    const r = await rb(['run', '--json', card('nogrant', 'true')]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout.trim())).toEqual({
      type: 'error',
      error: 'no-grant',
      workspace: path.join(root, 'ws'),
      message: expect.stringContaining(`runboard grant ${path.join(root, 'ws')}`),
    });
  });

  it('grant, then run: starts the supervisor, streams output, exit code 0', async () => {
    expect((await rb(['grant', 'ws'])).stdout).toMatch(/^granted .*\/ws \(grant [0-9a-f]+\)\n$/);
    const r = await rb(['run', card('hello', 'echo hello; echo warn >&2')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('hello\n');
    expect(r.stderr).toMatch(
      /^warn\n✓ succeeded in [\d.]+s \(exit 0\) — finished: command exited with code 0\n$/,
    );
  });

  it('refuses to grant a folder that holds its own state (/, the state root, a parent of it), saying why', async () => {
    for (const dir of ['/', root, path.join(root, 'home')]) {
      const r = await rb(['grant', dir]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        /^runboard: cannot grant .*: .* contains Runboard's state root .*; grant a folder that does not contain it\n$/,
      );
    }
  });

  it('--json prints the run id first, then events and output, and the result last', async () => {
    const r = await rb(['run', '--json', card('json', 'echo json-out; exit 5')]);
    expect(r.code).toBe(1);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({
      type: 'run',
      runId: expect.stringMatching(/^\d{8}-\d{6}-[0-9a-f]{6}$/),
    });
    expect(lines.at(-1)).toMatchObject({ type: 'result', result: { status: 'failed', exitCode: 5 } });
    expect(
      lines
        .filter((l) => l.type === 'output')
        .map((l) => l.data)
        .join(''),
    ).toBe('json-out\n');
    expect(lines.some((l) => l.type === 'event' && l.event.type === 'ready')).toBe(true);
    expect(r.stderr).toBe('');
  });

  it('exit codes differ per status: timed-out 4', async () => {
    const r = await rb(['run', card('slow', 'sleep 10', 'quick')]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/✗ timed-out/);
  });

  it('runs lists newest first; logs prints a run; cancel stops one and is idempotent', async () => {
    const long = spawn(
      process.execPath,
      [path.join(DIST, 'runboard.mjs'), 'run', '--json', card('long', 'echo begin; sleep 30')],
      { env, cwd: root },
    );
    let out = '';
    long.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await waitUntil('the run to start', () => out.includes('"output"'));
    const runId = JSON.parse(out.split('\n')[0]!).runId as string;
    const list = await rb(['runs']);
    expect(list.stdout.split('\n')[0]).toMatch(/^RUN\s+STATUS\s+FLOW\s+TIME\s+TOKENS\s+COST\s+CARD$/);
    expect(list.stdout.split('\n')[1]).toMatch(
      new RegExp(`^${runId}\\s+running\\s+shell\\s+\\S+\\s+-\\s+-\\s`),
    );
    const exited = new Promise<number>((r) => long.once('exit', (c) => r(c ?? -1)));
    const c1 = await rb(['cancel', runId]);
    expect(c1.stdout).toMatch(new RegExp(`^run ${runId} cancelled after \\d+ ms\\n$`));
    expect(await exited).toBe(130);
    const c2 = await rb(['cancel', runId]);
    expect(c2.stdout).toBe(`run ${runId} had already ended: cancelled\n`);
    const logs = await rb(['logs', runId]);
    expect(logs.stdout).toBe('begin\n');
    const json = await rb(['runs', '--json']);
    expect(JSON.parse(json.stdout.split('\n')[0]!)).toMatchObject({ runId, status: 'cancelled' });
  });

  it('logs --json without -f; runs --active with none going; run ids and usage errors in plain words', async () => {
    const runs = (await rb(['runs', '--json'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const hello = runs.find((r: { card: { title?: string } }) => r.card.title === 'hello') as {
      runId: string;
    };
    const logs = await rb(['logs', '--json', hello.runId]);
    expect(logs.code).toBe(0);
    const lines = logs.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { type: 'output', runId: hello.runId, stream: 'stdout', data: 'hello\n' },
      { type: 'output', runId: hello.runId, stream: 'stderr', data: 'warn\n' },
      { type: 'result', runId: hello.runId, result: expect.objectContaining({ status: 'succeeded' }) },
    ]);

    expect((await rb(['runs', '--active'])).stdout).toBe('no runs going\n');

    for (const args of [
      ['logs', 'nope'],
      ['cancel', '../x'],
      ['keep', '123'],
    ]) {
      const r = await rb(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`is not a run id: run ids look like 20250101-120000-0a1b2c`);
      expect(r.stderr).not.toMatch(/RunId|regex|pattern|Invalid string/);
    }

    // a usage error shows that command's usage line, not the whole help
    const u = await rb(['logs']);
    expect(u.code).toBe(2);
    expect(u.stderr).toBe(
      'runboard: logs takes one run id\nusage: runboard logs <run-id> [-f] [--json]\n(`runboard help` lists every command)\n',
    );
    const opt = await rb(['runs', '--bogus']);
    expect(opt.code).toBe(2);
    expect(opt.stderr).toMatch(/--bogus/);
    expect(opt.stderr).toContain('usage: runboard runs [--active] [--json]');
    expect(opt.stderr).not.toContain('supervisor status');
  });

  it('reports a broken card clearly', async () => {
    const file = path.join(root, 'project', 'cards', 'broken.md');
    writeFileSync(file, '---\ntitle: [unclosed\n---\n');
    const r = await rb(['run', file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/broken\.md: front matter is not valid YAML/);
  });

  it('supervisor status and stop', async () => {
    const s = await rb(['supervisor', 'status']);
    expect(s.stdout).toMatch(/supervisor 0\.1\.0 pid \d+/);
    expect(s.stdout).toMatch(/sandbox: Landlock ABI \d+/);
    const stop = await rb(['supervisor', 'stop']);
    expect(stop.stderr).toBe('');
    expect(stop.stdout).toBe('supervisor stopping\n');
    await waitUntil('the supervisor to stop', async () => (await rb(['supervisor', 'status'])).code === 3);
    expect((await rb(['supervisor', 'status'])).stdout).toMatch(/^no supervisor running/);
  });
});
