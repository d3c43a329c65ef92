// `runboard gc` as a user runs it (issue 34 item 4): real runs of a real supervisor, real recordings
// and stored values on disk; one run is still going while gc removes the rest around it.
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listGrants } from '@runboard/supervisor/grants';
import { runLogDir, statePaths, type StatePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { type CliOutcome, DIST, processesMentioning, runboardCli, waitUntil } from '../helpers/harness.ts';

let root: string;
let project: string;
let env: NodeJS.ProcessEnv;
let paths: StatePaths;

const rb = (args: string[]): Promise<CliOutcome> => runboardCli(args, { env, cwd: project });

function card(name: string, command: string, extra = ''): string {
  const file = path.join(project, 'cards', `${name}.md`);
  writeFileSync(
    file,
    `---\nid: ${name}\ntitle: ${name}\nflow: shell\nworkspace: ../ws\ncommand: ${JSON.stringify(command)}\n${extra}---\n# Task\n${name}\n`,
  );
  return file;
}

/** Runs a card to its end; its run id and log folder. */
async function runCard(file: string): Promise<{ runId: string; logDir: string }> {
  const r = await rb(['run', '--json', file]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout.split('\n')[0]!) as { runId: string; logDir: string };
}

function recording(id: string, endedAt: string | undefined): string {
  const dir = path.join(project, 'recordings', id);
  mkdirSync(path.join(dir, 'screenshots'), { recursive: true });
  writeFileSync(path.join(dir, 'manifest.jsonl'), '{"step":1}\n');
  writeFileSync(path.join(dir, 'screenshots', '001.png'), Buffer.alloc(4096));
  writeFileSync(
    path.join(dir, 'recording.json'),
    JSON.stringify({ id, startedAt: '2026-01-01T00:00:00Z', ...(endedAt ? { endedAt } : {}) }),
  );
  return dir;
}

/** A stored sensitive value as the supervisor keeps it (keys/params/<ref>.json, 0600). */
function storedValue(ref: string, cardFile: string): string {
  const dir = path.join(root, 'home', 'keys', 'params');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${ref}.json`);
  writeFileSync(file, JSON.stringify({ card: cardFile, param: 'pin', value: '4711' }), { mode: 0o600 });
  return file;
}

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-gc-'));
  project = path.join(root, 'project');
  env = { ...process.env, RUNBOARD_HOME: path.join(root, 'home') };
  paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
  delete env.NODE_EXTRA_CA_CERTS;
  mkdirSync(path.join(project, 'cards'), { recursive: true });
  mkdirSync(path.join(root, 'ws'));
  writeFileSync(
    path.join(project, 'config.yaml'),
    'version: 2\nflows:\n  shell: { runner: command, cap: 4 }\nretention:\n  keepPerCard: 1\n  maxSize: 1k\n',
  );
  expect((await rb(['grant', path.join(root, 'ws')])).code).toBe(0);
});
afterAll(async () => {
  await rb(['supervisor', 'stop', '--force']);
  await waitUntil('the supervisor to stop', () => processesMentioning(root).length === 0, 10_000);
  rmSync(root, { recursive: true, force: true });
});

describe('runboard gc', () => {
  it('says what it would remove, removes it with --yes, and never touches a run in flight or what a card names', async () => {
    const often = card('often', 'seq 1 200');
    const first = await runCard(often);
    const second = await runCard(often);
    const third = await runCard(often);
    // a replay-like card that names the first run and a recording: both stay
    card('names', 'true', `basedOn: ${first.runId}\nrecording: rec-named\n`);
    const oldRec = recording('rec-old', '2026-01-01T00:05:00Z');
    const namedRec = recording('rec-named', '2026-01-01T00:05:00Z');
    const liveRec = recording('rec-live', undefined); // being recorded: no end yet
    // a stored value whose card was deleted, and one whose card still names it
    const gone = storedValue(`s-${'a'.repeat(32)}`, path.join(project, 'cards', 'deleted.md'));
    const kept = storedValue(`s-${'b'.repeat(32)}`, path.join(project, 'cards', 'pin.md'));
    card('pin', 'true', `params:\n  pin: { secret: s-${'b'.repeat(32)} }\n`);

    // a run in flight: it waits for a file the test writes after gc
    const release = path.join(root, 'ws', 'release');
    const live = spawn(
      process.execPath,
      [
        path.join(DIST, 'runboard.mjs'),
        'run',
        '--json',
        card('live', `echo started; while [ ! -f ${release} ]; do sleep 0.05; done; echo released`),
      ],
      { env, cwd: project },
    );
    let out = '';
    live.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number>((r) => live.once('exit', (c) => r(c ?? -1)));
    await waitUntil('the live run to start', () => out.includes('started'), 60_000);
    const liveRun = JSON.parse(out.split('\n')[0]!) as { runId: string; logDir: string };

    const dry = await rb(['gc']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('retention maxAge 30d, maxSize 1.0 KiB, keepPerCard 1');
    expect(dry.stdout).toMatch(/^would remove run logs: 1 run, [\d.]+ (B|KiB)/m);
    expect(dry.stdout).toMatch(/^would remove recordings: 1, [\d.]+ KiB$/m);
    expect(dry.stdout).toContain('would remove stored values of deleted cards: 1');
    expect(dry.stdout).toContain('1 run going, 1 recording being made, 2 named by a card');
    expect(dry.stdout).toContain('nothing was removed: run `runboard gc --yes` to remove it');
    for (const p of [first.logDir, second.logDir, third.logDir, oldRec, gone])
      expect(existsSync(p)).toBe(true);

    const json = JSON.parse((await rb(['gc', '--json'])).stdout) as {
      removed: { runs: { id: string; reason: string }[]; recordings: { id: string }[] };
    };
    expect(json.removed.runs).toEqual([{ id: second.runId, bytes: expect.any(Number), reason: 'size' }]);
    expect(json.removed.recordings.map((r) => r.id)).toEqual(['rec-old']);

    const wet = await rb(['gc', '--yes']);
    expect(wet.code, wet.stderr).toBe(0);
    expect(wet.stdout).toMatch(/^removed run logs: 1 run, /m);
    expect(wet.stdout).toMatch(/^removed recordings: 1, /m);
    expect(wet.stdout).toContain('removed stored values of deleted cards: 1');
    expect(wet.stdout).toMatch(/^freed [\d.]+ KiB$/m);
    expect(existsSync(second.logDir)).toBe(false);
    expect(existsSync(oldRec)).toBe(false);
    expect(existsSync(gone)).toBe(false);
    // kept: the run a card names, the card's last run, the run in flight, the named and live recordings
    for (const p of [first.logDir, third.logDir, liveRun.logDir, namedRec, liveRec, kept])
      expect(existsSync(p), p).toBe(true);

    // the run in flight ends as it would have, its log whole
    writeFileSync(release, '');
    expect(await exited).toBe(0);
    expect((await rb(['logs', liveRun.runId])).stdout).toBe('started\nreleased\n');
    expect(readFileSync(path.join(liveRun.logDir, 'stdout.log'), 'utf8')).toContain('released');
  });

  it('removes the launch keys of the runs it removes with them, not at the next hourly prune', async () => {
    // runs of one card launched as the board launches them: each with its queueing's key
    const file = card('keyed', 'seq 1 200');
    const started = await rb(['supervisor', 'start']); // already going when the test before it ran
    expect(started.code, started.stderr).toBe(0);
    const client = await SupervisorClient.connect(paths);
    const keyed: string[] = [];
    try {
      const grant = listGrants(paths).find((g) => g.path === realpathSync(path.join(root, 'ws')))!;
      for (const key of ['queueing-1', 'queueing-2']) {
        const { runId } = await client.launch({
          card: { path: file, project, id: 'keyed', title: 'keyed' },
          flow: { name: 'shell', runner: 'command' },
          workspace: path.join(root, 'ws'),
          grant,
          command: 'seq 1 200',
          key,
        });
        const ended = await new Promise<RunResult>((resolve, reject) => {
          client.attach(runId, { onEnd: resolve }).catch(reject);
        });
        expect(ended.status).toBe('succeeded');
        keyed.push(runId);
      }
    } finally {
      client.close();
    }
    const keysDir = path.join(paths.supervisorDir, 'launch-keys');
    const named = (): string[] => readdirSync(keysDir).map((n) => readlinkSync(path.join(keysDir, n)));
    expect(named()).toEqual(expect.arrayContaining(keyed));

    const wet = JSON.parse((await rb(['gc', '--yes', '--json'])).stdout) as {
      removed: { runs: { id: string }[] };
    };
    const removed = wet.removed.runs.map((r) => r.id);
    expect(removed).toContain(keyed[0]); // keepPerCard 1: the card's older run goes
    expect(removed).not.toContain(keyed[1]);
    for (const id of removed) expect(existsSync(runLogDir(paths, id))).toBe(false);
    // its key went with it; the kept run's key stays
    expect(named().filter((id) => removed.includes(id))).toEqual([]);
    expect(named()).toContain(keyed[1]);
  });

  it('refuses a recordings folder that is a link, and a bad retention value with what to write', async () => {
    const elsewhere = mkdtempSync(path.join(root, 'elsewhere-'));
    mkdirSync(path.join(elsewhere, 'rec-victim'));
    writeFileSync(path.join(elsewhere, 'rec-victim', 'recording.json'), '{"endedAt":"2026-01-01T00:00:00Z"}');
    rmSync(path.join(project, 'recordings'), { recursive: true, force: true });
    symlinkSync(elsewhere, path.join(project, 'recordings'));
    const r = await rb(['gc', '--yes']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('recordings is a link, not a folder: gc does not follow it');
    expect(existsSync(path.join(elsewhere, 'rec-victim'))).toBe(true);
    rmSync(path.join(project, 'recordings'));

    writeFileSync(
      path.join(project, 'config.yaml'),
      'version: 2\nflows:\n  shell: { runner: command }\nretention:\n  maxAge: 30 days\n',
    );
    const bad = await rb(['gc']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('retention.maxAge');
    expect(bad.stderr).toContain('expected an age such as 12h, 30d or 8w (got "30 days")');
  });
});
