// The soak's "run left running for good" (docs/soak.md): result.json is what every later reader
// (`runboard runs`, a board, a restarted supervisor) takes as the truth, so a run's end must reach it
// when the disk holding it is full as the run ends (the runs' log folders are on a small tmpfs of their
// own here, filled to the last byte), and when its supervisor died before the run's crash marker was
// written.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunResult } from '@runboard/supervisor/protocol';
import { Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';
import { fillDisk } from '../helpers/disk.ts';

let h: Harness;
let logs: string;
beforeAll(async () => {
  h = await Harness.start();
  logs = h.paths.logsDir;
  mkdirSync(logs, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', logs]);
});
afterAll(async () => {
  if (logs) execFileSync('umount', ['-l', logs]);
  await h?.stop();
});

describe('a full state disk', () => {
  it('a run that ends while the disk is full still records its end (result.json, marker gone)', async () => {
    const go = path.join(h.workspace, `go-${Date.now()}`);
    const { runId, logDir } = await h.launch(`echo started; while [ ! -e ${go} ]; do sleep 0.05; done`);
    const done = h.collect(runId);
    const result = (): RunResult =>
      RunResult.parse(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')));
    await waitUntil(
      'the run to be going',
      () =>
        existsSync(path.join(logDir, 'stdout.log')) &&
        readFileSync(path.join(logDir, 'stdout.log'), 'utf8').includes('started'),
    );
    const free = fillDisk(logs);
    try {
      writeFileSync(go, '');
      const rec = await done;
      expect(rec.result.status).toBe('succeeded');
      // on disk, at once (no space was freed): the end, not `running`
      const onDisk = result();
      expect(onDisk.status).toBe('succeeded');
      expect(onDisk.endedAt).not.toBeNull();
      const active = path.join(h.paths.supervisorDir, 'active');
      await waitUntil('the active-run marker to be removed', () => !existsSync(path.join(active, runId)));
      expect(readdirSync(active)).not.toContain(runId);
      // what a person sees
      const { runs } = await h.client.list({});
      expect(runs.find((r) => r.runId === runId)?.status).toBe('succeeded');
    } finally {
      free();
    }
  });

  it('a run whose supervisor died before its crash marker was written is closed, not left running', async () => {
    const local = await Harness.start();
    try {
      const { runId, logDir } = await local.launch('echo started; sleep 300');
      await waitUntil('the run to be going', async () =>
        (await local.client.list({ activeOnly: true })).runs.some((r) => r.runId === runId),
      );
      const svPid = local.supervisor.pid!;
      local.client.close();
      process.kill(svPid, 'SIGKILL');
      await waitUntil(
        'the run to be gone',
        () => processesMentioning(`RUNBOARD_RUN_ID=${runId}`).length === 0,
      );
      // As when the kill came between the launch (result.json written, `running`) and the marker's
      // first write, which goes off the event loop.
      rmSync(path.join(local.paths.supervisorDir, 'active', runId), { force: true });
      await local.startSupervisor();
      const { runs } = await local.client.list({});
      const listed = runs.find((r) => r.runId === runId);
      expect(listed?.status).toBe('failed');
      expect(listed?.termination?.reason).toBe('supervisor-died');
      expect(listed?.termination?.detail).toContain(`pid ${svPid}`);
      const { run } = await local.client.getRun(runId);
      expect(run.status).toBe('failed');
      const onDisk = RunResult.parse(JSON.parse(readFileSync(path.join(logDir, 'result.json'), 'utf8')));
      expect(onDisk.termination?.reason).toBe('supervisor-died');
    } finally {
      await local.stop();
    }
  });
});
