// How runs end: crash, hang, cancel, time limit, and the supervisor itself dying. No process of a run
// may outlive it, whatever it does (double fork, setsid, ignoring SIGTERM).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunResult } from '@runboard/supervisor/protocol';
import { Harness, pidAlive, processesMentioning, sleep, waitUntil } from '../helpers/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

async function workerPid(runId: string, on = h): Promise<number> {
  let pid = 0;
  await waitUntil('the worker to be running', async () => {
    const { runs } = await on.client.list({ activeOnly: true });
    pid = runs.find((r) => r.runId === runId)?.pid ?? 0;
    return pid > 0;
  });
  return pid;
}

/** A process that double-forks, leaves its session and ignores SIGTERM, marked so we can find it. */
function stubbornGrandchild(marker: string): string {
  return `trap '' TERM; (setsid sh -c 'trap "" TERM; exec -a ${marker} sleep 300' &) ; echo spawned; sleep 300`;
}

describe('run endings', () => {
  it('kill -9 of the worker: the run fails as killed with the signal, the supervisor goes on', async () => {
    const { runId } = await h.launch('echo started; sleep 300');
    const done = h.collect(runId);
    const pid = await workerPid(runId);
    process.kill(pid, 'SIGKILL');
    const rec = await done;
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('killed');
    expect(rec.result.signal).toBe('SIGKILL');
    expect(rec.result.termination?.detail).toContain('SIGKILL');
    expect(processesMentioning(`RUNBOARD_RUN_ID=${runId}`)).toEqual([]);
    // still serving
    expect((await h.run('echo still here')).stdout).toBe('still here\n');
  });

  it('kill -9 of a plain command from outside: the run fails as killed, not as a command that finished', async () => {
    const seconds = 900_000 + Math.floor(Math.random() * 90_000); // a command line no other process has
    const { runId } = await h.launch(`echo started; exec sleep ${seconds}`);
    const done = h.collect(runId);
    let pid: number | undefined;
    await waitUntil('the command to be running', () => {
      pid = processesMentioning(`sleep\0${seconds}`).find(
        (p) => readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\0${seconds}\0`,
      );
      return pid !== undefined;
    });
    process.kill(pid!, 'SIGKILL');
    const rec = await done;
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('killed');
    expect(rec.result.termination?.detail).toMatch(/command was killed by SIGKILL from outside/);
  });

  it('kill -9 of the jail: the run fails as killed by SIGKILL from outside, not as a failed spawn', async () => {
    const { runId } = await h.launch('echo started; sleep 300');
    const done = h.collect(runId);
    const worker = await workerPid(runId);
    // The jail is the worker's parent (seen from outside the run's PID namespace).
    const jail = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${worker}/status`, 'utf8'))![1]);
    expect(readFileSync(`/proc/${jail}/cmdline`, 'utf8')).toContain('runboard-jail');
    process.kill(jail, 'SIGKILL');
    const rec = await done;
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('killed');
    expect(rec.result.termination?.detail).toMatch(/jail .*killed by SIGKILL/);
    expect(rec.result.signal).toBe('SIGKILL');
    await waitUntil(
      'the run to leave no process',
      async () => processesMentioning(`RUNBOARD_RUN_ID=${runId}`).length === 0,
    );
  });

  it('a hung worker (stopped, no heartbeats) is killed after the heartbeat timeout', async () => {
    // A worker beats: agent runs have one; a plain command gets one here (else the jail's init runs it).
    const hw = await Harness.start({ env: { RUNBOARD_COMMAND_WORKER: 'node' } });
    try {
      const { runId } = await hw.launch('sleep 300', { heartbeatTimeoutMs: 3000 });
      const done = hw.collect(runId);
      const pid = await workerPid(runId, hw);
      const beatAt = async (): Promise<number | undefined> => {
        const at = (await hw.client.list({ activeOnly: true })).runs.find(
          (r) => r.runId === runId,
        )?.lastHeartbeat;
        return at ? Date.parse(at) : undefined;
      };
      let first: number | undefined;
      await waitUntil('a first heartbeat', async () => (first = await beatAt()) !== undefined);
      // healthy for longer than the timeout: heartbeats keep it alive. The supervisor's own times of the
      // beats show it (a sleep in this process measured only the test's clock)
      await waitUntil('heartbeats for longer than the timeout', async () => {
        const last = await beatAt();
        if (last === undefined) throw new Error('the run ended while its worker was beating');
        return last - first! > 3500;
      });
      process.kill(pid, 'SIGSTOP');
      const rec = await done;
      expect(rec.result.status).toBe('failed');
      expect(rec.result.termination?.reason).toBe('heartbeat-timeout');
      expect(rec.result.termination?.detail).toMatch(/no heartbeat for 3000 ms/);
      expect(rec.result.lastHeartbeat).not.toBeNull();
      expect(pidAlive(pid)).toBe(false);
    } finally {
      await hw.stop();
    }
  });

  it("a plain command's init stopped from outside: the command goes on and its end is still reported", async () => {
    const { runId } = await h.launch('sleep 1; echo done', { heartbeatTimeoutMs: 500 });
    const done = h.collect(runId);
    const pid = await workerPid(runId);
    process.kill(pid, 'SIGSTOP'); // no heartbeat to miss: the jail's status pipe is the run's liveness
    await sleep(1500);
    process.kill(pid, 'SIGCONT');
    const rec = await done;
    expect(rec.result.status).toBe('succeeded');
    expect(rec.stdout).toBe('done\n');
  });

  // How long the stop takes (the kill grace, 1 s by default, then SIGKILL) is a figure of
  // `node bench/run.mjs bench/cancel.ts`, not a pass/fail bound: a loaded machine stretches any duration.
  it('cancel is idempotent and stops a run with a stubborn double-forked grandchild', async () => {
    const marker = `rb-stubborn-${process.pid}-${Date.now()}`;
    const { runId } = await h.launch(stubbornGrandchild(marker));
    const done = h.collect(runId);
    await waitUntil('the grandchild', () => processesMentioning(marker).length > 0);
    const first = await h.client.cancel(runId);
    const second = await h.client.cancel(runId);
    expect(first).toEqual({ runId, alreadyEnded: false, status: 'running' });
    // The second cancel may arrive while the run is still being stopped, or after it ended (a fast stop on a
    // quiet machine): either way it is a no-op that says so, never a second cancel or another status.
    if (second.alreadyEnded) expect(second).toEqual({ runId, alreadyEnded: true, status: 'cancelled' });
    else expect(second.status).toBe('running');
    const rec = await done;
    expect(rec.result.status).toBe('cancelled');
    expect(rec.result.termination?.reason).toBe('cancelled');
    expect(rec.result.exitCode).toBeNull(); // the command was killed, it did not exit
    expect(processesMentioning(marker)).toEqual([]); // gone by the time the run is marked ended
    const third = await h.client.cancel(runId);
    expect(third).toEqual({ runId, alreadyEnded: true, status: 'cancelled' });
    expect(rec.events.filter((e) => e.type === 'cancel')).toHaveLength(1);
  });

  it('a run that leaves a background process behind on success still leaves nothing running', async () => {
    const marker = `rb-leftover-${process.pid}-${Date.now()}`;
    const rec = await h.run(`(setsid sh -c 'trap "" TERM HUP; exec -a ${marker} sleep 300' &); echo done`);
    expect(rec.result.status).toBe('succeeded');
    expect(processesMentioning(marker)).toEqual([]);
  });

  it('the flow time limit ends a run as timed-out', async () => {
    const rec = await h.run('echo working; sleep 300', { timeoutMs: 500, killGraceMs: 200 });
    expect(rec.result.status).toBe('timed-out');
    expect(rec.result.termination?.reason).toBe('timeout');
    expect(rec.stdout).toBe('working\n');
  });

  it('cancelling an unknown run is a clear error', async () => {
    await expect(h.client.cancel('20000101-000000-abcdef')).rejects.toMatchObject({
      code: 1010,
      message: 'no run 20000101-000000-abcdef',
    });
  });
});

describe('supervisor death', () => {
  it('kill -9 of the supervisor leaves no run process behind; a restarted one records why the run ended', async () => {
    const local = await Harness.start();
    try {
      const marker = `rb-orphan-${process.pid}-${Date.now()}`;
      const { runId, logDir } = await local.launch(stubbornGrandchild(marker));
      await waitUntil('the grandchild', () => processesMentioning(marker).length > 0);
      const stdoutLog = path.join(logDir, 'stdout.log');
      await waitUntil('its output in the log', () => readFileSync(stdoutLog, 'utf8') === 'spawned\n');
      const svPid = local.supervisor.pid!;
      local.client.close();
      process.kill(svPid, 'SIGKILL');
      await waitUntil(
        'every process of the run to be gone',
        () =>
          processesMentioning(marker).length === 0 &&
          processesMentioning(`RUNBOARD_RUN_ID=${runId}`).length === 0,
      );
      const before = RunResult.parse(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')));
      expect(before.status).toBe('running'); // nobody was left to record the end…
      await local.startSupervisor();
      const after = RunResult.parse(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')));
      expect(after.status).toBe('failed'); // …until a supervisor came back
      expect(after.termination?.reason).toBe('supervisor-died');
      expect(after.termination?.detail).toContain(`pid ${svPid}`);
      // the output the log holds, not 0 (the soak found 14 such records, docs/soak.md)
      expect(after.stdoutBytes).toBe(statSync(stdoutLog).size);
      expect(after.stdoutBytes).toBe('spawned\n'.length);
      const { runs } = await local.client.list({});
      expect(runs.find((r) => r.runId === runId)?.termination?.reason).toBe('supervisor-died');
    } finally {
      await local.stop();
    }
  });

  it('a marker the crash cut short (empty, or its next version half-written) still gets the run closed', async () => {
    const local = await Harness.start();
    try {
      const marker = `rb-cut-${process.pid}-${Date.now()}`;
      const { runId, logDir } = await local.launch(stubbornGrandchild(marker));
      await waitUntil('the grandchild', () => processesMentioning(marker).length > 0);
      const svPid = local.supervisor.pid!;
      local.client.close();
      process.kill(svPid, 'SIGKILL');
      await waitUntil('every process of the run to be gone', () => processesMentioning(marker).length === 0);
      // as a kill between a write's truncation and its bytes left it (an older version wrote in place)
      const active = path.join(local.paths.supervisorDir, 'active');
      writeFileSync(path.join(active, runId), '');
      writeFileSync(path.join(active, `.${runId}.tmp`), '{"logDir":');
      await local.startSupervisor();
      const after = RunResult.parse(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')));
      expect(after.status).toBe('failed');
      expect(after.termination?.reason).toBe('supervisor-died');
      expect(after.termination?.detail).toContain(`pid ${svPid}`);
      expect(readdirSync(active)).toEqual([]);
    } finally {
      await local.stop();
    }
  });
});
