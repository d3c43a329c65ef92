/**
 * The board when the disk holding its state (the confirm ledger) is full as a run ends (the soak's
 * c0133, docs/soak.md): the run's end cannot be saved on the card for a while. It must be saved once
 * there is room, and the card must run no more than its retries allow meanwhile. Through a real
 * `runboard serve` and supervisor; the ledger's folder is a small tmpfs of its own, filled to the last
 * byte.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BoardServer, shellCard, shellConfig, waitUntil } from '../e2e/helpers/board.ts';

let server: BoardServer | undefined;
let mounted: string | undefined;
afterEach(async () => {
  if (mounted) execFileSync('umount', ['-l', mounted]);
  mounted = undefined;
  await server?.stop();
  server = undefined;
});

/** Puts `dir` on a small tmpfs of its own, with what it held; returns how to fill it to the last byte. */
function ownDisk(dir: string): { fill: () => void; free: () => void } {
  const saved = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-'));
  cpSync(dir, saved, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', dir]);
  mounted = dir;
  cpSync(saved, dir, { recursive: true });
  rmSync(saved, { recursive: true, force: true });
  const fillers = [path.join(dir, 'filler-1'), path.join(dir, 'filler-2')];
  return {
    fill() {
      // An append that fits in a file's last page takes no space: the logs end on a page boundary
      // first (empty lines, which the ledger skips), so that the next append needs a page.
      for (const name of readdirSync(dir).filter((n) => n.endsWith('.log'))) {
        const size = statSync(path.join(dir, name)).size;
        if (size % 4096) appendFileSync(path.join(dir, name), '\n'.repeat(4096 - (size % 4096)));
      }
      const free = Number(
        execFileSync('df', ['--output=avail', '-B1', dir], { encoding: 'utf8' }).split('\n')[1],
      );
      try {
        if (free > 0) execFileSync('fallocate', ['-l', String(free), fillers[0]!], { stdio: 'ignore' });
      } catch {
        // refused past the free space: dd fills the rest
      }
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${fillers[1]}`, 'bs=512'], { stdio: 'ignore' });
      } catch {
        // ENOSPC: full, as wanted
      }
    },
    free() {
      for (const f of fillers) rmSync(f, { force: true });
    },
  };
}

describe('a full state disk', () => {
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
