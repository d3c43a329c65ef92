// stdout and stderr keep their interleaving: live to an attached client, in a replay, in `runboard logs`
// (text and --json) and after a supervisor restart. The run writes one line, then waits until the test
// has seen it (an ack file in the workspace) before the next, so the order is known without timing.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Offsets, OutputStream, RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import { DIST, Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';

const exec = promisify(execFile);
let h: Harness;
beforeAll(async () => {
  h = await Harness.start();
});
afterAll(async () => {
  await h.stop();
});

/** `out 1`, `err 1`, `out 2`, … each written after the previous one was acknowledged. */
function pingPong(dir: string, pairs: number): string {
  const wait = (name: string): string => `while [ ! -e "${dir}/${name}" ]; do sleep 0.01; done`;
  return `for i in $(seq 1 ${pairs}); do echo "out $i"; ${wait('ack-out-$i')}; echo "err $i" >&2; ${wait('ack-err-$i')}; done`;
}
const expected = (pairs: number): string[] =>
  Array.from({ length: pairs }, (_, i) => [`stdout:out ${i + 1}`, `stderr:err ${i + 1}`]).flat();

/** Collects output as `stream:line` in arrival order, acknowledging each line unless `ack` says no. */
function collector(dir: string, ack: (line: string) => boolean = () => true) {
  const seen: string[] = [];
  const partial = { stdout: '', stderr: '' };
  const onBytes = (stream: OutputStream, bytes: Buffer): void => {
    const lines = (partial[stream] + bytes.toString()).split('\n');
    partial[stream] = lines.pop()!;
    for (const line of lines) {
      seen.push(`${stream}:${line}`);
      if (ack(line)) writeFileSync(path.join(dir, `ack-${line.replace(' ', '-')}`), '');
    }
  };
  return { seen, onBytes };
}

function logsCli(args: string[]): Promise<string> {
  // 2>&1: both streams into one pipe, so what the terminal would show is one ordered text
  const cmd = `exec "$0" "${path.join(DIST, 'runboard.mjs')}" logs ${args.join(' ')} 2>&1`;
  return exec('sh', ['-c', cmd, process.execPath], {
    env: { ...process.env, RUNBOARD_HOME: h.paths.root },
    maxBuffer: 16 * 1024 * 1024,
  }).then((r) => r.stdout);
}

describe('stdout and stderr interleaving', () => {
  it('live, replayed, resumed mid-way, and printed by `runboard logs`: the order they were written in', async () => {
    const dir = h.workspace;
    const { runId } = await h.launch(['sh', '-c', pingPong(dir, 6)]);
    const live = collector(dir);
    const result = await new Promise<RunResult>((resolve, reject) => {
      h.client.attach(runId, { onBytes: live.onBytes, onEnd: resolve }).catch(reject);
    });
    expect(result.status).toBe('succeeded');
    expect(live.seen).toEqual(expected(6));

    // the record on disk alone gives the same order: a replay from the start…
    const replay = collector(dir, () => false);
    await new Promise<RunResult>((resolve, reject) => {
      h.client.attach(runId, { onBytes: replay.onBytes, onEnd: resolve }).catch(reject);
    });
    expect(replay.seen).toEqual(expected(6));
    // …and from offsets in the middle (after `out 3`): what follows, once, in order
    const mid = collector(dir, () => false);
    await new Promise<RunResult>((resolve, reject) => {
      h.client
        .attach(runId, { onBytes: mid.onBytes, onEnd: resolve }, { stdout: 18, stderr: 12 })
        .catch(reject);
    });
    expect(mid.seen).toEqual(expected(6).slice(5));

    expect(await logsCli([runId])).toBe(
      expected(6)
        .map((l) => l.split(':')[1] + '\n')
        .join(''),
    );
    const json = (await logsCli([runId, '--json']))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(json.filter((l) => l.type === 'output').map((l) => `${l.stream}:${l.data.trim()}`)).toEqual(
      expected(6),
    );
    expect(await logsCli([runId, '-f'])).toBe(
      expected(6)
        .map((l) => l.split(':')[1] + '\n')
        .join(''),
    );
  });

  it('the run holds only pipes: it cannot truncate, seek in or rewrite its recorded output', async () => {
    // The jail moves the output into the files; a run that tries to edit its own record through its
    // stdout/stderr (truncate, a write at offset 0, reopening the fd for writing) finds pipes.
    const script = [
      'echo first; echo first-err >&2',
      'truncate -s 0 /proc/self/fd/1 2>/dev/null',
      'truncate -s 0 /proc/self/fd/2 2>/dev/null',
      'exec 3<>/proc/self/fd/1; printf REWRITTEN >&3; exec 3>&-',
      'python3 -c "import os; os.lseek(1, 0, 0); os.write(1, b\\"XX\\")" 2>/dev/null',
      'readlink /proc/self/fd/1 /proc/self/fd/2 | sed "s/:.*//" >&2',
      'echo second; echo second-err >&2',
    ].join('; ');
    const rec = await h.run(['sh', '-c', script]);
    expect(rec.result.status).toBe('succeeded');
    const stdout = readFileSync(path.join(rec.result.logDir, 'stdout.log'), 'utf8');
    const stderr = readFileSync(path.join(rec.result.logDir, 'stderr.log'), 'utf8');
    expect(stdout.startsWith('first\n')).toBe(true);
    expect(stdout.endsWith('second\n')).toBe(true);
    expect(stderr).toBe('first-err\npipe\npipe\nsecond-err\n');
    expect(rec.result.stdoutBytes).toBe(Buffer.byteLength(stdout));
  });

  it('a stream written in bulk gets a 1 MiB pipe, a quiet one keeps the default; bytes and order exact', async () => {
    // 3 MB in one write fills stdout's pipe (the jail then grows it); stderr carries two lines only.
    // Each step waits until the test has seen the one before (ack files), so the order is known.
    const dir = h.workspace;
    const script = [
      'import fcntl, os, sys, time',
      'def wait(name):',
      `    while not os.path.exists(os.path.join(${JSON.stringify(dir)}, name)): time.sleep(0.01)`,
      'sys.stdout.buffer.write(b"x" * 3_000_000 + b"\\n"); sys.stdout.flush(); wait("ack-bulk")',
      'print("mid", fcntl.fcntl(1, fcntl.F_GETPIPE_SZ), fcntl.fcntl(2, fcntl.F_GETPIPE_SZ), file=sys.stderr, flush=True)',
      'wait("ack-mid"); print("end", flush=True)',
    ].join('\n');
    const { runId } = await h.launch(['python3', '-c', script]);
    const got = { stdout: '', stderr: '' };
    const seen: string[] = [];
    const result = await new Promise<RunResult>((resolve, reject) => {
      h.client
        .attach(runId, {
          onOutput: (stream, data) => {
            got[stream] += data;
            seen.push(stream);
            if (stream === 'stdout' && got.stdout.length === 3_000_001)
              writeFileSync(path.join(dir, 'ack-bulk'), '');
            if (stream === 'stderr' && got.stderr.endsWith('\n'))
              writeFileSync(path.join(dir, 'ack-mid'), '');
          },
          onEnd: resolve,
        })
        .catch(reject);
    });
    expect(result.status).toBe('succeeded');
    expect(got.stderr).toBe(`mid ${1024 * 1024} ${64 * 1024}\n`);
    expect(got.stdout).toBe('x'.repeat(3_000_000) + '\nend\n');
    expect(result.stdoutBytes).toBe(3_000_005);
    // in the record: all of the bulk, then stderr's line, then the rest of stdout
    expect(seen.indexOf('stderr')).toBe(seen.lastIndexOf('stderr'));
    expect(seen.slice(seen.indexOf('stderr') + 1)).toEqual(['stdout']);
    const printed = await logsCli([runId]);
    expect(printed).toBe('x'.repeat(3_000_000) + `\nmid ${1024 * 1024} ${64 * 1024}\nend\n`);
  });

  it('a host that re-attaches after a supervisor restart gets the lines recorded meanwhile, once, in order', async () => {
    const local = await Harness.start();
    try {
      const dir = local.workspace;
      const { runId, logDir } = await local.launch(['sh', '-c', pingPong(dir, 6)]);
      // the first host sees out 1 … out 3, then goes away without acknowledging out 3
      const first = collector(dir, (line) => line !== 'out 3');
      const client = await SupervisorClient.connect(local.paths);
      await client.attach(runId, { onBytes: first.onBytes });
      await waitUntil('out 3', () => first.seen.includes('stdout:out 3'));
      const offsets = (await client.detach(runId)) as Offsets;
      client.close();
      expect(first.seen).toEqual(expected(6).slice(0, 5));

      // the run goes on while nobody is attached: err 3, then out 4
      const onDisk = (file: string, text: string) => () =>
        existsSync(path.join(logDir, file)) && readFileSync(path.join(logDir, file), 'utf8').includes(text);
      writeFileSync(path.join(dir, 'ack-out-3'), '');
      await waitUntil('err 3 recorded', onDisk('stderr.log', 'err 3'));
      writeFileSync(path.join(dir, 'ack-err-3'), '');
      await waitUntil('out 4 recorded', onDisk('stdout.log', 'out 4'));

      // the supervisor dies (and with it the run); a new one comes up
      const svPid = local.supervisor.pid!;
      local.client.close();
      process.kill(svPid, 'SIGKILL');
      await waitUntil(
        'the run to be gone',
        () => processesMentioning(`RUNBOARD_RUN_ID=${runId}`).length === 0,
      );
      await local.startSupervisor();

      const second = collector(dir, () => false);
      const result = await new Promise<RunResult>((resolve, reject) => {
        local.client.attach(runId, { onBytes: second.onBytes, onEnd: resolve }, offsets).catch(reject);
      });
      expect(result.termination?.reason).toBe('supervisor-died');
      expect(second.seen).toEqual(['stderr:err 3', 'stdout:out 4']);
    } finally {
      await local.stop();
    }
  });
});
