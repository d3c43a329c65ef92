/**
 * No run counted twice (docs/soak.md, invariant 4; the soak's c0139, c0146 and c0536 each ran twice,
 * both runs succeeded, in a window where the disk holding the board's state was full). A card queued
 * once gets one run, however its launch is repeated: the launch carries the card's queue generation as
 * a key (host/src/core/scheduler-launch-key.ts) that the supervisor records before it spawns anything
 * (supervisor/src/node/launch-keys.ts), and a second launch with that key gets the first run.
 *
 * Real parts: a supervisor (the harness's) and a real `runboard serve` with its own, the board's ledger
 * on a small tmpfs filled to the last byte, serve killed with SIGKILL.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { digestOf } from '@runboard/supervisor/ledger';
import { BoardServer, shellCard, shellConfig, waitUntil } from '../e2e/helpers/board.ts';
import { Harness } from '../helpers/harness.ts';
import { ownDisk, type OwnDisk } from '../helpers/disk.ts';

let server: BoardServer | undefined;
let mounted: string | undefined;
afterEach(async () => {
  if (mounted) execFileSync('umount', ['-l', mounted]);
  mounted = undefined;
  await server?.stop();
  server = undefined;
});

/** The board's ledger folder on a 1 MiB tmpfs of its own (tests/helpers/disk.ts), unmounted after. */
function ledgerDisk(dir: string): OwnDisk {
  const disk = ownDisk(dir);
  mounted = dir;
  return disk;
}

describe('one queueing, one run', () => {
  it('a launch repeated with its key gets the first run, also from a supervisor started after a kill -9', async () => {
    const h = await Harness.start();
    try {
      const card = { path: path.join(h.root, 'card.md'), title: 'once' };
      const launch = (key: string, cardPath = card.path) =>
        h.client.launch({
          card: { ...card, path: cardPath },
          flow: h.flow(),
          workspace: h.workspace,
          grant: h.grant,
          command: 'echo ran >> runs.txt',
          key,
        });
      const first = await launch('generation-1');
      expect(first.again).toBeUndefined();
      const repeat = await launch('generation-1');
      expect(repeat).toEqual({ runId: first.runId, logDir: first.logDir, again: true });
      await waitUntil(
        'the run ended',
        async () => (await h.client.getRun(first.runId)).run.status !== 'running',
      );
      // the supervisor dies; the one started after it knows the key from its disk
      const exited = new Promise((r) => h.supervisor.once('exit', r));
      h.client.close();
      h.supervisor.kill('SIGKILL');
      await exited;
      await h.startSupervisor();
      expect((await launch('generation-1')).runId).toBe(first.runId);
      // a new generation, or another card with the same key, is a new run
      const next = await launch('generation-2');
      expect(next.runId).not.toBe(first.runId);
      const other = await launch('generation-1', path.join(h.root, 'other.md'));
      expect([first.runId, next.runId]).not.toContain(other.runId);
      for (const id of [next.runId, other.runId])
        await waitUntil('the runs ended', async () => (await h.client.getRun(id)).run.status !== 'running');
      expect(readFileSync(path.join(h.workspace, 'runs.txt'), 'utf8')).toBe('ran\nran\nran\n');
    } finally {
      await h.stop();
    }
  });

  // `upgraded`: config.yaml is found at an older version by the board that comes back, which upgrades
  // it before it loads the cards (board-store.ts load, upgradeConfigFiles): the upgrade writes the
  // config alone (in place), never a card, so the card's launch key (its file's identity) holds.
  it.each([
    ['', false],
    [', with config.yaml upgraded by the board that comes back', true],
  ])(
    "a board killed while its run's start and end could not be saved does not run the card again%s",
    async (_, upgraded) => {
      const config = shellConfig('  backoff: { base: 100ms, retries: 1 }\n');
      server = await BoardServer.start(config, {
        'once.md': shellCard('Once', 'echo ran >> runs.txt'),
      });
      const ledgerDir = path.join(server.home, 'ledger');
      expect(existsSync(ledgerDir)).toBe(true);
      // the ledger's folder moves to a disk of its own while serve is stopped (nothing writes it then)
      const exited = new Promise((r) => server!.proc.once('exit', r));
      server.proc.kill('SIGTERM');
      await exited;
      const disk = ledgerDisk(ledgerDir);
      await server.startServe();
      await waitUntil('the card on the board', () => server!.card('once'));
      // room for the person's move to Queued and nothing more: the run's start and end are not saved
      disk.fill(JSON.stringify({ f: 'cards/once.md', d: digestOf('') }).length + 1);
      await server.api('POST', '/api/cards/once/move', { to: 'queued', index: 0 });
      const [run] = await waitUntil('the run ended', async () => {
        const runs = await server!.supervisorRuns();
        return runs.length && runs.every((r) => r.status !== 'running') ? runs : undefined;
      });
      expect(run!.status).toBe('succeeded');
      await waitUntil('the card waiting to save its run', async () =>
        (await server!.card('once'))?.waiting?.includes('could not be saved'),
      );
      expect(readFileSync(server.cardFile('once.md'), 'utf8')).toMatch(/status: queued/);
      // the board dies with the writes it kept; a new one finds the card queued, as its file says
      const killed = new Promise((r) => server!.proc.once('exit', r));
      server.proc.kill('SIGKILL');
      await killed;
      disk.free();
      const configFile = path.join(server.project, 'config.yaml');
      if (upgraded) {
        expect(readFileSync(configFile, 'utf8')).toMatch(/^version: 2$/m); // the first board upgraded it
        writeFileSync(configFile, config); // version 1 again: the next board upgrades it in the crash window
      }
      await server.startServe();
      const done = await waitUntil('Done', async () => {
        const c = await server!.card('once');
        return c?.column === 'done' ? c : undefined;
      });
      expect(done.runId).toBe(run!.runId);
      expect(readFileSync(path.join(server.workspace, 'runs.txt'), 'utf8')).toBe('ran\n');
      expect((await server.supervisorRuns()).map((r) => r.runId)).toEqual([run!.runId]);
      if (upgraded) expect(readFileSync(configFile, 'utf8')).toMatch(/^version: 2$/m); // it was upgraded
    },
  );

  it('a card deleted and made again with the same work is queued anew: it runs, not takes the old run', async () => {
    server = await BoardServer.start(shellConfig(), {});
    // a card that ran once, then went to the trash and was written again the same (a template card made
    // each day, a card put back from git): its launch is another queueing, though nothing on it differs
    const fields = {
      title: 'Again',
      flow: 'shell',
      workspace: server.workspace,
      command: 'echo ran >> runs.txt',
      body: '# Task\n',
    };
    const settled = () =>
      waitUntil(
        'the card settled',
        async () => {
          const c = await server!.card('again');
          return c?.column === 'done' || c?.column === 'failed' ? c : undefined;
        },
        60_000,
      );
    const made = await server.api<{ id: string }>('POST', '/api/cards', { ...fields, queue: true });
    expect(made.id).toBe('again');
    const first = await settled();
    expect(first.column).toBe('done');
    const text = readFileSync(server.cardFile('again.md'), 'utf8');
    await server.api('POST', '/api/cards/again/trash');
    expect(existsSync(server.cardFile('again.md'))).toBe(false);
    expect((await server.api<{ id: string }>('POST', '/api/cards', { ...fields, queue: true })).id).toBe(
      'again',
    );
    // the same text as the first card's (the board's own state aside: its column, rank and run)
    const work = (t: string): string => t.replace(/(status|rank|lastRun): .*\n/g, '');
    expect(work(readFileSync(server.cardFile('again.md'), 'utf8'))).toBe(work(text));
    const second = await settled();
    expect(second.runId).not.toBe(first.runId);
    expect(readFileSync(path.join(server.workspace, 'runs.txt'), 'utf8')).toBe('ran\nran\n');
  });
});
