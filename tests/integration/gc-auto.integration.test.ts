// Retention applied by the supervisor itself (issue 34 item 4; soak 3's state root filled with run logs
// and stayed full: no card could leave that state). The state root is a small tmpfs of its own, filled
// by real runs of a registered project; when a run's log write fails ENOSPC the supervisor prunes at
// once, past the policy, until `retention.minFree` is free: the disk frees by itself, a launch then
// succeeds, and a run still going, a run a card names and the run that hit the full disk stay.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statfsSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listGrants } from '@runboard/supervisor/grants';
import { statePaths, type StatePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { diskUsageView } from '../../host/src/core/gc.ts';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { type CliOutcome, processesMentioning, runboardCli, waitUntil } from '../helpers/harness.ts';

const MIN_FREE = 6 * 1024 * 1024;
let root: string;
let home: string;
let project: string;
let paths: StatePaths;
let env: NodeJS.ProcessEnv;
let mounted = false;
let client: SupervisorClient;

const rb = (args: string[]): Promise<CliOutcome> => runboardCli(args, { env, cwd: project });

const free = (): number => {
  const s = statfsSync(home);
  return s.bavail * s.bsize;
};

function card(id: string, extra = ''): string {
  const file = path.join(project, 'cards', `${id}.md`);
  writeFileSync(file, `---\nid: ${id}\ntitle: ${id}\nflow: shell\n${extra}---\n# Task\n${id}\n`);
  return file;
}

/** Launches a run of card `id`; resolves with its id and when it ends. */
async function launch(
  id: string,
  command: string,
  key?: string,
  proj = project,
): Promise<{ runId: string; logDir: string; ended: Promise<RunResult> }> {
  const { runId, logDir } = await client.launch({
    card: { path: path.join(proj, 'cards', `${id}.md`), project: proj, id, title: id },
    flow: { name: 'shell', runner: 'command' },
    workspace: proj,
    grant: listGrants(paths).find((g) => g.path === realpathSync(proj))!,
    command,
    ...(key ? { key } : {}),
  });
  const ended = new Promise<RunResult>((resolve, reject) => {
    client.attach(runId, { onEnd: resolve }).catch(reject);
  });
  return { runId, logDir, ended };
}

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-gcauto-'));
  home = path.join(root, 'home');
  project = path.join(root, 'project');
  mkdirSync(home);
  mkdirSync(project);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m,mode=0700', 'tmpfs', home]);
  mounted = true;
  // the minute's look at the free space is left out: the full disk itself is what starts the pass here
  env = { ...process.env, RUNBOARD_HOME: home, RUNBOARD_RETENTION_TICK_MS: '3600000' };
  delete env.NODE_EXTRA_CA_CERTS;
  paths = statePaths({ RUNBOARD_HOME: home });
  const init = await rb(['init', project]);
  expect(init.code, init.stderr).toBe(0);
  writeFileSync(
    path.join(project, 'config.yaml'),
    `${readFileSync(path.join(project, 'config.yaml'), 'utf8')}\nretention:\n  keepPerCard: 0\n  minFree: 6m\n`,
  );
  client = await SupervisorClient.connect(paths);
});

// Each test ends the runs it started on its way; one that fails half-way leaves them going (the first
// test's `live` run waits for a file), and the next test's 'supervisor stop' then met that run (CI,
// session 16: two failures for one). Whatever is still going after a test, passed or failed, is
// cancelled and waited for here; a test that closed its client (a supervisor restart) gets a new one.
afterEach(async () => {
  if (client?.isClosed) client = await SupervisorClient.connect(paths).catch(() => client);
  if (!client || client.isClosed) return; // no supervisor: nothing can be going
  const going = async (): Promise<string[]> =>
    (await client.list({ activeOnly: true })).runs.map((r) => r.runId);
  for (const runId of await going()) await client.cancel(runId);
  await waitUntil('the runs a test left going to end', async () => (await going()).length === 0, 30_000);
});

afterAll(async () => {
  client?.close();
  await rb(['supervisor', 'stop', '--force']);
  for (const pid of processesMentioning(home)) process.kill(pid, 'SIGKILL');
  if (mounted) execFileSync('umount', ['-l', home]);
  rmSync(root, { recursive: true, force: true });
});

describe('retention applied by the supervisor', () => {
  it('frees a state root that real runs filled, and never touches a live or named run', async () => {
    card('live');
    card('named');
    card('often');
    // a run going the whole time: its files must stay as they are
    const go = path.join(project, 'go');
    const live = await launch('live', `echo live; while [ ! -e ${go} ]; do sleep 0.05; done; echo end`);
    await waitUntil('the live run to be going', () => {
      const f = path.join(live.logDir, 'stdout.log');
      return existsSync(f) && readFileSync(f, 'utf8').includes('live');
    });
    // an old run a card names (a replay's basedOn), the oldest of all with keepPerCard 0: kept all the same
    const named = await launch('named', 'head -c 2000000 /dev/zero | tr "\\0" n');
    expect((await named.ended).status).toBe('succeeded');
    card('named', `basedOn: ${named.runId}\n`);

    // runs of one card: eight of 2 MB each (16 MB of the 24), then one of 30 MB, which meets the full disk
    const runs: { runId: string; logDir: string; result: RunResult }[] = [];
    for (let i = 0; i < 9; i++) {
      const bytes = i < 8 ? 2_000_000 : 30_000_000;
      // each with a launch key, as the board's launches have (launch-keys.ts)
      const r = await launch('often', `head -c ${bytes} /dev/zero | tr "\\0" x`, `often-queueing-${i}`);
      runs.push({ ...r, result: await r.ended });
    }
    expect(runs.slice(0, 8).map((r) => r.result.status)).toEqual(Array(8).fill('succeeded'));
    const last = runs.at(-1)!;
    // the run writing when the disk filled ends with a reason a person can read
    expect(last.result.status).toBe('failed');
    expect(last.result.termination?.reason).toBe('log-write-failed');
    expect(last.result.termination?.detail).toContain('the disk holding the run logs is full');

    // the disk frees by itself: minFree is free again
    // (the space is free as soon as the pass removed the runs; its record is written after that)
    const recorded = (): boolean => {
      try {
        return readFileSync(path.join(paths.supervisorDir, 'retention.json'), 'utf8').includes('disk-full');
      } catch {
        return false;
      }
    };
    await waitUntil('the supervisor to free the disk', () => free() >= MIN_FREE && recorded(), 30_000);
    const record = JSON.parse(readFileSync(path.join(paths.supervisorDir, 'retention.json'), 'utf8')) as {
      passes: Record<string, { trigger: string; removedRuns: number; freed: number }>;
    };
    expect(record.passes[project]?.trigger).toBe('disk-full');
    expect(record.passes[project]!.removedRuns).toBeGreaterThan(0);
    // oldest first: the first runs of the card went
    expect(existsSync(runs[0]!.logDir)).toBe(false);
    // never: the run going, the run a card names
    expect(readFileSync(path.join(live.logDir, 'stdout.log'), 'utf8')).toBe('live\n');
    expect(existsSync(path.join(named.logDir, 'result.json'))).toBe(true);
    // the pass in the supervisor's log, in words (the log is written after the record, off the loop)
    const said =
      /retention removed \d+ run log\(s\), 0 workspace copy\(ies\) and 0 recording\(s\) of .*freed \(disk-full\)/;
    const log = (): string => readFileSync(path.join(paths.supervisorDir, 'supervisor.log'), 'utf8');
    await waitUntil('the pass in the supervisor log', () => said.test(log()), 30_000).catch(() => undefined);
    expect(log()).toMatch(said);

    // the launch keys of the runs it removed go too, while the supervisor lives (they were kept until
    // its next start, 30 days at most, before); the others stay
    const keysDir = path.join(paths.supervisorDir, 'launch-keys');
    const keyed = (): string =>
      JSON.stringify(
        readdirSync(keysDir)
          .map((n) => readlinkSync(path.join(keysDir, n)))
          .sort(),
      );
    const kept = (): string =>
      JSON.stringify(
        runs
          .filter((r) => existsSync(r.logDir))
          .map((r) => r.runId)
          .sort(),
      );
    await waitUntil(
      'only the keys of the runs kept',
      () =>
        keyed() === kept() &&
        /pruned \d+ launch key\(s\) no launch can use \(runs removed\)/.test(
          readFileSync(path.join(paths.supervisorDir, 'supervisor.log'), 'utf8'),
        ),
      30_000,
    );

    // work waiting for room then runs
    const after = await launch('often', 'echo after');
    expect((await after.ended).status).toBe('succeeded');
    writeFileSync(go, '');
    expect((await live.ended).status).toBe('succeeded');
    expect(readFileSync(path.join(live.logDir, 'stdout.log'), 'utf8')).toBe('live\nend\n');

    // the board's disk view says what the supervisor removed, and when it applies the policy
    const view = await diskUsageView(paths, project, { keepPerCard: 1, minFree: { bytes: MIN_FREE } });
    expect(view.lastAuto?.trigger).toBe('disk-full');
    expect(view.lastAuto!.removedRuns).toBe(record.passes[project]!.removedRuns);
    expect(view.auto).toBe(
      'applied by the supervisor every 1h, and at once when the disk holding the state has less than 6.0 MiB free (then past the policy, oldest first)',
    );
    const gc = await rb(['gc']);
    expect(gc.code, gc.stderr).toBe(0);
    expect(gc.stdout).toContain('  applied by the supervisor every 1h');
  });

  it('lists a workspace copy never kept or discarded, and removes it by age through the supervisor', async () => {
    card('copied');
    const ws = path.join(project, 'plain');
    mkdirSync(ws, { recursive: true });
    writeFileSync(path.join(ws, 'notes.txt'), 'original\n');
    const { runId, logDir } = await client.launch({
      card: { path: path.join(project, 'cards', 'copied.md'), project, id: 'copied', title: 'copied' },
      flow: { name: 'shell', runner: 'command', copyWorkspace: { maxBytes: 1 << 20 } },
      workspace: ws,
      grant: listGrants(paths).find((g) => g.path === realpathSync(project))!,
      command: 'echo changed > notes.txt',
    });
    const result = await new Promise<RunResult>((resolve, reject) => {
      client.attach(runId, { onEnd: resolve }).catch(reject);
    });
    expect(result.status).toBe('succeeded');
    const copyDir = path.join(paths.supervisorDir, 'copies', runId);
    expect(existsSync(copyDir)).toBe(true);
    // as if it ended 40 days ago (maxAge is 30d)
    const file = path.join(logDir, 'result.json');
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), endedAt: old }));

    const dry = await rb(['gc']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/workspace copies not kept or discarded [\d.]+ (B|KiB) \(1\)/);
    expect(dry.stdout).toMatch(
      new RegExp(`^would remove workspace copies \\(discarded\\): 1, .*\\(runs ${runId}\\)$`, 'm'),
    );
    expect(dry.stdout).toContain('1 run whose worktree or copy is not kept or discarded');
    expect(existsSync(copyDir)).toBe(true);

    const yes = await rb(['gc', '--yes']);
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toMatch(/^removed workspace copies \(discarded\): 1/m);
    expect(existsSync(copyDir)).toBe(false);
    expect(readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('original\n'); // discarded, not kept
    const after = JSON.parse(readFileSync(file, 'utf8')) as RunResult;
    expect(after.copy?.state).toBe('discarded');
    // settled now: its log goes by the policy like any other (here: the last run of its card, kept)
    expect((await rb(['gc'])).stdout).toContain('0 runs whose worktree or copy is not kept or discarded');
  });

  it('refuses a bad retention setting with what to write', async () => {
    const cfg = path.join(project, 'config.yaml');
    const before = readFileSync(cfg, 'utf8');
    writeFileSync(cfg, `${before.replace('  minFree: 6m\n', '')}  interval: 10s\n`);
    try {
      const gc = await rb(['gc']);
      expect(gc.code).not.toBe(0);
      expect(gc.stderr).toContain(
        'retention.interval: expected an interval from 1m to 30d such as 30m, 1h or 1d (got "10s")',
      );
    } finally {
      writeFileSync(cfg, before);
    }
  });

  it('low space that other files caused thins each card to its last run; only a write that failed takes that too (c7f3a12)', async () => {
    // this test's project alone: the first one's runs are left out of its passes
    const cfg = path.join(project, 'config.yaml');
    const before = readFileSync(cfg, 'utf8');
    writeFileSync(cfg, `${before}  auto: false\n`);
    const other = path.join(root, 'other');
    mkdirSync(other, { recursive: true });
    const init = await rb(['init', other]);
    expect(init.code, init.stderr).toBe(0);
    writeFileSync(
      path.join(other, 'config.yaml'),
      `${readFileSync(path.join(other, 'config.yaml'), 'utf8')}\nretention:\n  keepPerCard: 3\n  minFree: 12m\n`,
    );
    const filler = path.join(home, 'filler');
    try {
      // card a ran three times, card b twice: within keepPerCard, the policy alone removes none
      const made: Record<string, string[]> = { a: [], b: [] };
      for (const id of ['a', 'a', 'a', 'b', 'b']) {
        const r = await launch(id, 'head -c 1000000 /dev/zero | tr "\\0" y', undefined, other);
        expect((await r.ended).status).toBe('succeeded');
        made[id]!.push(r.logDir);
      }
      // other files fill the disk: 1.5 MiB free, below minFree even with every run removed; the
      // supervisor started again looks at the free space at once
      client.close();
      expect((await rb(['supervisor', 'stop'])).code).toBe(0);
      writeFileSync(filler, Buffer.alloc(free() - 1.5 * 1024 * 1024));
      expect((await rb(['supervisor', 'start'])).code).toBe(0);
      client = await SupervisorClient.connect(paths);
      const passOf = (): { trigger: string; removedRuns: number } | undefined => {
        try {
          return (
            JSON.parse(readFileSync(path.join(paths.supervisorDir, 'retention.json'), 'utf8')) as {
              passes: Record<string, { trigger: string; removedRuns: number }>;
            }
          ).passes[other];
        } catch {
          return undefined; // not written yet
        }
      };
      await waitUntil('a low-space pass', () => passOf()?.trigger === 'low-space', 30_000);
      // each card keeps its last run though minFree is still not free
      expect(made.a!.map((d) => existsSync(d))).toEqual([false, false, true]);
      expect(made.b!.map((d) => existsSync(d))).toEqual([false, true]);
      expect(passOf()!.removedRuns).toBe(3);
      expect(free()).toBeLessThan(12 * 1024 * 1024);

      // a write that fails (a run's log on the full disk): then the last runs go too
      const c = await launch('c', 'head -c 8000000 /dev/zero | tr "\\0" z', undefined, other);
      const ended = await c.ended;
      expect(ended.termination?.reason).toBe('log-write-failed');
      await waitUntil(
        'a disk-full pass',
        () => passOf()?.trigger === 'disk-full' && !existsSync(made.a![2]!) && !existsSync(made.b![1]!),
        30_000,
      );
    } finally {
      rmSync(filler, { force: true });
      writeFileSync(cfg, before);
    }
  });
});
