// One supervisor per state root, however many are started at once. Two clients that find none (the
// board's reconnect and a launch, after a crash) each start one: both took the dead one's socket for
// stale, the second unlinked the first's new socket, and the first went on serving nobody, with its
// runs and schedules beside the second's, until someone killed it by hand.
import type net from 'node:net';
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { peerIdentity } from '@runboard/native';
import { openConnection } from '../../host/src/core/supervisor-start.ts';
import { commandLine, Harness, pidAlive, processesMentioning, waitUntil } from '../helpers/harness.ts';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The supervisors of this state root: processes of it that run supervisor.mjs. */
const supervisorsOf = (root: string): number[] =>
  processesMentioning(root).filter((pid) => commandLine(pid).includes('supervisor.mjs'));

describe('starting the supervisor', () => {
  it('clients that each start one over a dead supervisor’s socket all reach one, and no other is left', async () => {
    h = await Harness.start();
    const dead = h.supervisor;
    h.client.close();
    const gone = new Promise((r) => dead.once('exit', r));
    dead.kill('SIGKILL');
    await gone;
    expect(existsSync(h.paths.socket)).toBe(true); // what a killed supervisor leaves

    // Ten clients at once: the window is narrow (the old code left a second supervisor 2 runs in 10).
    // The supervisors the clients start take the state root from the environment.
    const home = process.env.RUNBOARD_HOME;
    process.env.RUNBOARD_HOME = h.paths.root;
    let conns: { socket: net.Socket; conn: { dispose(): void } }[];
    try {
      conns = await Promise.all(
        Array.from({ length: 10 }, () => openConnection(h!.paths, { autoStart: true, timeoutMs: 60_000 })),
      );
    } finally {
      if (home === undefined) delete process.env.RUNBOARD_HOME;
      else process.env.RUNBOARD_HOME = home;
    }
    const owners = conns.map(({ socket }) => {
      const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
      return peerIdentity(fd).pid;
    });
    for (const { conn, socket } of conns) {
      conn.dispose();
      socket.destroy();
    }
    expect(new Set(owners).size, `the clients reached ${owners.join(', ')}`).toBe(1);
    const [serving] = owners as [number];
    await waitUntil(
      'the supervisors that gave way have ended',
      () => supervisorsOf(h!.root).length <= 1,
      30_000,
    );
    expect(supervisorsOf(h.root)).toEqual([serving]);

    process.kill(serving, 'SIGTERM');
    await waitUntil('the serving supervisor stopped', () => !pidAlive(serving), 30_000);
  });
});
