/**
 * A newcomer's first commands, as real processes with their own state root: `runboard init` in an
 * empty folder, `serve` finding the project from a subfolder (and opening a browser through $BROWSER),
 * the "not a project here" answers (one sentence, what to run, no stack), `--version` and `--help`,
 * and a scheduled card of an init'ed project firing with no board ever opened (the schedule clock is
 * injected; processes, sockets and files are real).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CliOutcome,
  DIST,
  processesMentioning,
  runboardCli,
  sleep,
  waitUntil,
} from '../helpers/harness.ts';
import { TestClock } from '../helpers/schedule-clock.ts';

let root: string;
let env: NodeJS.ProcessEnv;
let clock: TestClock;

const rb = (args: string[], cwd: string, extra: NodeJS.ProcessEnv = {}): Promise<CliOutcome> =>
  runboardCli(args, { env: { ...env, ...extra }, cwd });

/** One line on stderr, exit 2, naming the command to run, and no stack trace. */
function expectOneSentence(r: { code: number; stdout: string; stderr: string }, says: RegExp): void {
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(says);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).not.toMatch(/\n\s+at |ENOENT/);
}

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-init-'));
  // The supervisor init starts inherits this clock: an hour before 08:00 UTC, until the test moves it.
  clock = new TestClock('2026-01-05T07:00:00Z');
  env = {
    ...process.env,
    RUNBOARD_HOME: path.join(root, 'home'),
    RUNBOARD_SCHEDULE_CLOCK: clock.file,
  };
  delete env.NODE_EXTRA_CA_CERTS;
  delete env.CI;
});
afterAll(async () => {
  await rb(['supervisor', 'stop', '--force'], root);
  await waitUntil('the supervisor to stop', () => processesMentioning(root).length === 0, 10_000);
  rmSync(root, { recursive: true, force: true });
  clock.remove();
});

describe('a newcomer’s first commands', () => {
  it('outside a project, each command says in one sentence what to run', async () => {
    const empty = path.join(root, 'empty');
    mkdirSync(empty);
    expectOneSentence(
      await rb(['serve'], empty),
      /no Runboard project in .*empty or above it.*`runboard init`/,
    );
    expectOneSentence(
      await rb(['serve', '--project', '.'], empty),
      /is not a Runboard project.*`runboard init \.`/,
    );
    expectOneSentence(await rb(['config', '--show'], empty), /`runboard init` makes one here/);
    writeFileSync(path.join(empty, 'loose.md'), '---\ntitle: x\nflow: shell\n---\n');
    expectOneSentence(await rb(['run', 'loose.md'], empty), /in no Runboard project.*`runboard init`/);
    expectOneSentence(await rb(['run', 'missing.md'], empty), /there is no card .*missing\.md/);
  });

  it('--version, and each command’s --help, print help (exit 0)', async () => {
    expect((await rb(['--version'], root)).stdout).toMatch(/^runboard \d+\.\d+\.\d+\n$/);
    for (const cmd of ['run', 'record', 'serve', 'schedules', 'init']) {
      const r = await rb([cmd, '--help'], root);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toMatch(new RegExp(`^usage: runboard\\n  ${cmd} `));
      expect(r.stderr, cmd).toBe('');
    }
  });

  it('init makes a project (config, first card, grant, registration); serve finds it from a subfolder', async () => {
    const proj = path.join(root, 'mine');
    mkdirSync(path.join(proj, 'cards'), { recursive: true });
    // Two scheduled cards written before init: one usable (08:00 UTC), one the supervisor refuses.
    writeFileSync(
      path.join(proj, 'cards', 'nightly.md'),
      '---\nid: nightly\ntitle: Nightly\nflow: shell\ncommand: echo nightly ran\nschedule: { cron: "0 8 * * *", timezone: UTC }\n---\n',
    );
    writeFileSync(
      path.join(proj, 'cards', 'odd.md'),
      '---\nid: odd\ntitle: Odd\nflow: shell\ncommand: "true"\nschedule: every 7 minutes\n---\n',
    );
    const r = await rb(['init'], proj);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`granted ${proj}`);
    expect(r.stdout).toContain('registered with the supervisor');
    const config = readFileSync(path.join(proj, 'config.yaml'), 'utf8');
    expect(config).toMatch(/^# /); // commented
    expect(config).toMatch(/\n {2}shell:\n {4}runner: command/);
    expect(existsSync(path.join(proj, 'cards', 'first-card.md'))).toBe(true);
    // Again: one sentence, nothing overwritten.
    expectOneSentence(await rb(['init'], proj), /is a Runboard project already.*`runboard serve`/);
    expect(readFileSync(path.join(proj, 'config.yaml'), 'utf8')).toBe(config);
    // The grant made by init lets the first card run at once.
    const first = await rb(['run', 'cards/first-card.md'], proj);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('Hello from Runboard');

    // No board has ever opened this project; the supervisor read its cards: the refused schedule is
    // listed with why, and the 08:00 one fires and runs.
    const list = await rb(['schedules'], proj);
    expect(list.stdout).toMatch(/Odd {2}cards\/odd\.md\n {2}refused, never fires: .*every 7 minutes/);
    expect(list.stdout).toMatch(/Nightly {2}cards\/nightly\.md\n {2}cron 0 8 \* \* \* \(UTC\)/);
    clock.moveTo('2026-01-05T08:00:00Z');
    let runId = '';
    await waitUntil(
      'the scheduled card ran with no board',
      async () => {
        await sleep(300); // each look is a process
        const rows = (await rb(['schedules', '--json'], proj)).stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { cardId?: string; lastRun?: { status: string; runId: string } });
        const n = rows.find((x) => x.cardId === 'nightly');
        runId = n?.lastRun?.runId ?? '';
        return n?.lastRun?.status === 'succeeded';
      },
      40_000,
    );
    expect((await rb(['logs', runId], proj)).stdout).toBe('nightly ran\n');

    // serve from a subfolder serves the project above; with --open it hands the URL to $BROWSER.
    const browser = path.join(root, 'browser.sh');
    const opened = path.join(root, 'opened.txt');
    writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > ${opened}\n`);
    chmodSync(browser, 0o755);
    const serve = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), 'serve', '--open'], {
      cwd: path.join(proj, 'cards'),
      env: { ...env, BROWSER: browser },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    serve.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitUntil('serve prints its URL', () => /http:\/\/127\.0\.0\.1:\d+\/\S+/.test(out), 30_000);
      expect(out).toContain(`Runboard board for ${proj}\n`);
      const url = /(http:\/\/127\.0\.0\.1:\d+\/\S+)/.exec(out)![1]!;
      await waitUntil('the browser was asked', () => existsSync(opened));
      expect(readFileSync(opened, 'utf8')).toBe(url);
    } finally {
      const exited = new Promise((r) => serve.once('exit', r));
      serve.kill('SIGTERM');
      await exited;
    }
  });

  it('serve registers the project it serves: the supervisor reads its cards with no board open', async () => {
    // A project made by hand (no `init`): only `serve` can have told the supervisor of it. A board tells
    // the supervisor its usable schedules only; a registered project's cards the supervisor reads itself,
    // so `schedules` also lists the one it refuses, with why, after the board has closed.
    const proj = path.join(root, 'by-hand');
    mkdirSync(path.join(proj, 'cards'), { recursive: true });
    writeFileSync(path.join(proj, 'config.yaml'), 'version: 2\nflows:\n  shell: { runner: command }\n');
    writeFileSync(
      path.join(proj, 'cards', 'weekly.md'),
      '---\nid: weekly\ntitle: Weekly\nflow: shell\ncommand: echo weekly\nschedule: { cron: "0 9 * * 1", timezone: UTC }\n---\n',
    );
    writeFileSync(
      path.join(proj, 'cards', 'odd.md'),
      '---\nid: odd\ntitle: Odd\nflow: shell\ncommand: "true"\nschedule: every 7 minutes\n---\n',
    );
    const serve = spawn(process.execPath, [path.join(DIST, 'runboard.mjs'), 'serve', '--no-open'], {
      cwd: proj,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    serve.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitUntil('serve prints its URL', () => /http:\/\/127\.0\.0\.1:\d+\/\S+/.test(out), 30_000);
      expect(out).toContain('and so do its scheduled cards');
    } finally {
      const exited = new Promise((r) => serve.once('exit', r));
      serve.kill('SIGTERM');
      await exited;
    }
    // No board is open and the supervisor starts again, knowing only what it keeps (projects.json).
    expect((await rb(['supervisor', 'stop', '--force'], root)).code).toBe(0);
    await waitUntil('the supervisor stopped', () => processesMentioning(root).length === 0, 10_000);
    const list = await rb(['schedules'], proj);
    expect(list.stdout).toMatch(/Weekly {2}cards\/weekly\.md\n {2}cron 0 9 \* \* 1 \(UTC\)/);
    expect(list.stdout).toMatch(/Odd {2}cards\/odd\.md\n {2}refused, never fires: .*every 7 minutes/);
  });
});
