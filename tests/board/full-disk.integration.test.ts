/**
 * The board when the disk holding its state (the confirm ledger) is full as a run ends (the soak's
 * c0133, docs/soak.md): the run's end cannot be saved on the card for a while. It must be saved once
 * there is room, and the card must run no more than its retries allow meanwhile. And when the whole
 * state root is full as a card launches (the soak's c0178): the launch is refused and the card must
 * settle once there is room, never wait for a Confirm. Through a real `runboard serve` and
 * supervisor; the ledger's folder (or the whole state root) is a small tmpfs of its own, filled to the
 * last byte.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { digestOf } from '@runboard/supervisor/ledger';
import { runLogDir, statePaths } from '@runboard/supervisor/paths';
import { BoardServer, DIST, shellCard, shellConfig, waitUntil } from '../e2e/helpers/board.ts';
import { ownDisk as ownDiskOf, type OwnDisk } from '../helpers/disk.ts';

let server: BoardServer | undefined;
let mounted: string | undefined;
afterEach(async () => {
  // serve and its supervisor stop before their state's disk goes (the supervisor's socket is on it)
  if (server && mounted) await stopProcesses(server);
  if (mounted) execFileSync('umount', ['-l', mounted]);
  mounted = undefined;
  await server?.stop();
  server = undefined;
});

/** Stops serve (SIGTERM) and its supervisor. */
async function stopProcesses(s: BoardServer): Promise<void> {
  if (s.proc.exitCode === null && s.proc.signalCode === null) {
    const exited = new Promise((r) => s.proc.once('exit', r));
    s.proc.kill('SIGTERM');
    await exited;
  }
  try {
    execFileSync(process.execPath, [path.join(DIST, 'runboard.mjs'), 'supervisor', 'stop', '--force'], {
      env: { ...process.env, RUNBOARD_HOME: s.home },
      stdio: 'ignore',
    });
  } catch {
    // none running
  }
}

/** `dir` on a small tmpfs of its own (tests/helpers/disk.ts), unmounted after the test. */
function ownDisk(dir: string, size = '1m'): OwnDisk {
  const disk = ownDiskOf(dir, size, 512);
  mounted = dir;
  return disk;
}

describe('a full state disk', () => {
  it("a launch the full state root refuses settles its card once there is room, never waiting for a Confirm (the soak's c0178)", async () => {
    server = await BoardServer.start(shellConfig('  backoff: { base: 100ms, retries: 1 }\n'), {
      'late.md': shellCard('Late', 'echo ran'),
    });
    // the whole state root moves to a disk of its own while serve and its supervisor are stopped
    await stopProcesses(server);
    const disk = ownDisk(server.home, '16m');
    await server.startServe();
    await waitUntil('the card on the board', () => server!.card('late'));
    // Room in the ledger's last page for the move's line and 10 bytes more, none anywhere else: the
    // person's move to Queued is saved, the launch is refused (the run's files cannot be written),
    // and the card's write of that failure is cut short after 10 bytes.
    const line = JSON.stringify({ f: 'cards/late.md', d: digestOf('') }).length + 1;
    disk.fill(line + 10);
    await server.api('POST', '/api/cards/late/move', { to: 'queued', index: 0 });
    const held = await waitUntil('the card waiting to save its failed launch', async () => {
      const c = await server!.card('late');
      return c?.waiting?.includes('could not be saved') ? c : undefined;
    });
    expect(held.column).toBe('queued');
    disk.free();
    // once there is room: the failure is saved, the card is tried again and runs
    const done = await waitUntil('Done', async () => {
      const c = await server!.card('late');
      expect(c?.confirm, 'the card must not wait for a Confirm').toBeUndefined();
      return c?.column === 'done' ? c : undefined;
    });
    expect(done.lastError ?? '').toBe('');
    const runs = await server.supervisorRuns();
    expect(runs.map((r) => r.status)).toEqual(['succeeded']);
  });

  it('a state root full of old run logs frees by itself and the queued card then runs (soak 3, nobody frees it by hand)', async () => {
    const big = 'head -c 9000000 /dev/zero | tr "\\0" x';
    server = await BoardServer.start(
      `${shellConfig('  backoff: { base: 100ms, retries: 1 }\n')}retention:\n  keepPerCard: 0\n  minFree: 4m\n`,
      { 'big.md': shellCard('Big', big), 'late.md': shellCard('Late', 'echo ran') },
    );
    await stopProcesses(server);
    const disk = ownDisk(server.home, '16m');
    await server.startServe();
    await waitUntil('the card on the board', () => server!.card('big'));
    // a real run leaves 9 MB of logs in the state root
    await server.api('POST', '/api/cards/big/move', { to: 'queued', index: 0 });
    await waitUntil('Big done', async () => (await server!.card('big'))?.column === 'done');
    const paths = statePaths({ RUNBOARD_HOME: server.home });
    const bigRuns = (await server.supervisorRuns()).map((r) => runLogDir(paths, r.runId));
    // the rest of the disk full to its last byte (room in the ledger's last page for the move's line)
    const line = JSON.stringify({ f: 'cards/late.md', d: digestOf('') }).length + 1;
    disk.fill(line + 10);
    await server.api('POST', '/api/cards/late/move', { to: 'queued', index: 0 });
    // the launch fails on the full disk; the supervisor prunes the old runs at once; the card runs
    const done = await waitUntil(
      'Done',
      async () => {
        const c = await server!.card('late');
        expect(c?.confirm, 'the card must not wait for a Confirm').toBeUndefined();
        return c?.column === 'done' ? c : undefined;
      },
      40_000,
    );
    expect(done.lastError ?? '').toBe('');
    const pass = JSON.parse(readFileSync(path.join(server.home, 'supervisor', 'retention.json'), 'utf8')) as {
      passes: Record<string, { trigger: string; removedRuns: number }>;
    };
    expect(Object.values(pass.passes).map((p) => p.trigger)).toContain('disk-full');
    expect(bigRuns).toHaveLength(1);
    expect(existsSync(bigRuns[0]!)).toBe(false); // the old run's log went, Late's run is there
    // nobody freed it by hand: the fillers are still there
    expect(
      existsSync(path.join(server.home, 'filler-1')) || existsSync(path.join(server.home, 'filler-2')),
    ).toBe(true);
  });

  it("a run's end the board could not save is saved once there is room; the card runs retries + 1 times", async () => {
    // Each run counts itself in the workspace; the first waits for the test's go.
    const command =
      'n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count; ' +
      'if [ "$n" = 0 ]; then while [ ! -e go ]; do sleep 0.05; done; fi; exit 3';
    server = await BoardServer.start(shellConfig('  backoff: { base: 100ms, retries: 1 }\n'), {
      'fails.md': shellCard('Fails', command),
    });
    // the ledger's folder moves to a disk of its own while serve is stopped (nothing writes it then)
    const ledgerDir = path.join(server.home, 'ledger');
    expect(existsSync(ledgerDir)).toBe(true);
    const exited = new Promise((r) => server!.proc.once('exit', r));
    server.proc.kill('SIGTERM');
    await exited;
    const disk = ownDisk(ledgerDir);
    await server.startServe();
    await server.api('POST', '/api/cards/fails/move', { to: 'queued', index: 0 });
    const runId = await waitUntil('running', async () => {
      const c = await server!.card('fails');
      return c?.column === 'running' && c.runId;
    });
    disk.fill();
    writeFileSync(path.join(server.workspace, 'go'), '');
    // the run ends (exit 3); its end cannot be saved on the card
    await waitUntil('the run ended', async () =>
      (await server!.supervisorRuns()).some((r) => r.runId === runId && r.status !== 'running'),
    );
    const held = await waitUntil('the card waiting to save its end', async () => {
      const c = await server!.card('fails');
      return c?.waiting?.includes('could not be saved') ? c : undefined;
    });
    expect(held.waiting).toMatch(/disk .* is full/);
    disk.free();
    const failed = await waitUntil('Failed', async () => {
      const c = await server!.card('fails');
      return c?.column === 'failed' ? c : undefined;
    });
    expect(failed.failures).toBe(2);
    // one retry, as configured: two runs in all
    expect(readFileSync(path.join(server.workspace, 'count'), 'utf8').trim()).toBe('2');
    const runs = await server.supervisorRuns();
    expect(runs).toHaveLength(2);
  });
});
