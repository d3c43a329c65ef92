// Soak 3's last supervisor (docs/soak.md, invariant 2): its state root (and with it its own log,
// supervisor/supervisor.log, where `runboard supervisor start` sends its stderr) stayed full; every
// launch failed, its memory grew 295 → 1330 MiB in 6 minutes, and `runboard supervisor stop --force`
// did not end it. Here the state root is a small tmpfs filled to its last block, the supervisor is
// started as a user starts it, and launches fail on the full disk.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths, type StatePaths } from '@runboard/supervisor/paths';
import type { Grant } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import {
  type CliOutcome,
  pidAlive,
  processesMentioning,
  runboardCli,
  waitUntil,
} from '../helpers/harness.ts';
import { fillDisk } from '../helpers/disk.ts';

const HOLD = 16 * 1024;
let root: string;
let home: string;
let paths: StatePaths;
let env: NodeJS.ProcessEnv;
let grant: Grant;
let mounted = false;

const rb = (args: string[]): Promise<CliOutcome> => runboardCli(args, { env, cwd: root });

const rssKiB = (pid: number): number =>
  Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

async function startSupervisor(): Promise<{ pid: number; client: SupervisorClient }> {
  const started = await rb(['supervisor', 'start', '--json']);
  expect(started.code, started.stderr).toBe(0);
  const { pid } = JSON.parse(started.stdout) as { pid: number };
  return { pid, client: await SupervisorClient.connect(paths) };
}

/** Launches that the full disk refuses; returns how many were refused. */
async function failedLaunches(client: SupervisorClient, n: number): Promise<number> {
  let refused = 0;
  for (let i = 0; i < n; i++) {
    try {
      await client.launch({
        card: { path: path.join(root, `card-${i}.md`), title: `card ${i}` },
        flow: { name: 'shell', runner: 'command' },
        workspace: path.join(root, 'ws'),
        grant,
        command: 'echo hello',
      });
    } catch {
      refused++;
    }
  }
  return refused;
}

beforeAll(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-fullsv-'));
  home = path.join(root, 'home');
  mkdirSync(home);
  mkdirSync(path.join(root, 'ws'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', home]);
  mounted = true;
  env = { ...process.env, RUNBOARD_HOME: home, RUNBOARD_LOG_HOLD_BYTES: String(HOLD) };
  delete env.NODE_EXTRA_CA_CERTS;
  paths = statePaths({ RUNBOARD_HOME: home });
  grant = createGrant(paths, path.join(root, 'ws'));
});

afterAll(async () => {
  for (const pid of processesMentioning(home)) process.kill(pid, 'SIGKILL');
  if (mounted) execFileSync('umount', ['-l', home]);
  rmSync(root, { recursive: true, force: true });
});

describe('a supervisor whose state root stays full', () => {
  it('holds a bounded log, keeps its memory, and `stop --force` ends it', async () => {
    const { pid, client } = await startSupervisor();
    const free = fillDisk(home);
    try {
      // warm: the first refusals (the log fails from here on)
      expect(await failedLaunches(client, 20)).toBe(20);
      const rss0 = rssKiB(pid);
      const N = 400;
      const refused = await failedLaunches(client, N);
      expect(refused).toBe(N);
      const s = await client.status();
      // what it holds of its log is bounded, and the lines past the bound were dropped, not kept
      expect(s.log?.failing).toBe('ENOSPC');
      expect(s.log!.buffered).toBeLessThanOrEqual(HOLD);
      expect(s.log!.dropped).toBeGreaterThan(0);
      // and its memory stayed near where it was (a bound, not the proof: the old logger grew ~5 MB/s
      // whatever the launches did; the held log above is the bounded structure)
      expect(rssKiB(pid) - rss0).toBeLessThan(64 * 1024);
      const status = await rb(['supervisor', 'status']);
      expect(status.stdout).toContain('its log: cannot be written (ENOSPC)');
      client.close();
      // the disk is still full: asked to stop with --force, it ends by itself (no SIGKILL needed; the
      // grace is long so that only a supervisor that never ends is killed)
      const stop = await rb(['supervisor', 'stop', '--force', '--grace', '45', '--json']);
      expect(stop.code, stop.stderr).toBe(0);
      expect(JSON.parse(stop.stdout)).toEqual({ stopped: true, pid, killed: false });
      expect(pidAlive(pid)).toBe(false);
    } finally {
      free();
    }
  });

  it('`stop --force` ends a supervisor that does not answer (SIGKILL after the grace, said)', async () => {
    const { pid, client } = await startSupervisor();
    client.close();
    const free = fillDisk(home);
    try {
      process.kill(pid, 'SIGSTOP'); // answers nothing from here on; the kernel still accepts connections
      const stop = await rb(['supervisor', 'stop', '--force', '--grace', '1']);
      expect(stop.code, stop.stderr).toBe(0);
      expect(stop.stdout).toContain(
        `the supervisor (pid ${pid}) did not answer within 1 s: killed it (SIGKILL)`,
      );
      await waitUntil('the supervisor to be gone', () => !pidAlive(pid));
      // bad input says what to do
      const bad = await rb(['supervisor', 'stop', '--force', '--grace', 'soon']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--grace takes the seconds to wait before SIGKILL');
    } finally {
      free();
    }
  });
});
