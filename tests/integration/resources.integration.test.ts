/**
 * Attacks on the machine's resources, made from inside real runs (supervisor → jail → command): memory
 * a run takes past its limit, /tmp (a tmpfs, so memory) filled past it. Each failed on the main before
 * its fix (docs/security-model.md, Resources).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { totalmem } from 'node:os';
import { jailPath } from '@runboard/native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';

/** Allocates and touches `mib` MiB (a bytearray is zero-filled: every page is written), then says so. */
const allocate = (mib: number): string[] => [
  'python3',
  '-c',
  `b = bytearray(${mib} << 20)\nprint("allocated", len(b) >> 20, flush=True)`,
];

/** Prints `free` when the folder argv[1] can be flock'ed at once (no jail holds that slot). */
const FLOCK_FREE = `
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("free")
except OSError:
    print("held")
`;

describe('resources', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await Harness.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('a run that allocates past its memory limit is killed, with a clear end', async () => {
    const rec = await h.run(allocate(512), { sandbox: { memory: '128m' } });
    expect(rec.stdout).not.toContain('allocated');
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination).toEqual({
      reason: 'memory-limit',
      detail: 'killed: memory limit (128 MiB), raise sandbox.memory in the flow if the run needs more',
    });
    expect(processesMentioning(h.root)).toEqual([h.supervisor.pid]);
  });

  it('a run under its memory limit is not touched', async () => {
    const rec = await h.run(allocate(32), { sandbox: { memory: '256m' } });
    expect(rec.stdout).toBe('allocated 32\n');
    expect(rec.result.status).toBe('succeeded');
  });

  it('every run has a memory limit, half the machine by default, held by a cgroup', async () => {
    const rec = await h.run(['true']);
    const started = rec.events.find((e) => e.type === 'started');
    expect(started?.data).toMatchObject({
      memoryLimit: 'cgroup',
      memoryBytes: Math.floor(totalmem() / 2),
      memoryError: '',
    });
  });

  // A memory cgroup removed at a run's end stayed in the kernel, dying, while page cache the run was
  // charged for was in memory (~380 after a CI suite): the runs' cgroups are slots kept from run to run.
  it('runs take cgroup slots that outlive them: two at once hold two, and one that wrote a file leaves none dying', async () => {
    const memoryCgroup = (out: string): string => {
      const v1 = /^\d+:memory:(\S+)$/m.exec(out);
      const v2 = /^0::(\S+)$/m.exec(out);
      return v1 ? `/sys/fs/cgroup/memory${v1[1]}` : `/sys/fs/cgroup${v2![1]}`;
    };
    const first = await h.launch(
      'cat /proc/self/cgroup; head -c 1000000 /dev/urandom > page-cache.bin; touch held; ' +
        'while [ ! -e release ]; do sleep 0.02; done',
    );
    const firstRec = h.collect(first.runId);
    await waitUntil('the first run to hold its slot', () => existsSync(path.join(h.workspace, 'held')));
    const second = await h.run('cat /proc/self/cgroup');
    writeFileSync(path.join(h.workspace, 'release'), '');
    const a = memoryCgroup((await firstRec).stdout);
    const b = memoryCgroup(second.stdout);
    expect(a).toMatch(/\/runboard-slot-\d+$/);
    expect(b).toMatch(/\/runboard-slot-\d+$/);
    expect(b).not.toBe(a);
    // both ended: their slots are still there (not removed, so not dying), empty, for the next runs
    for (const dir of [a, b]) expect(readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')).toBe('');
  });

  it('a jail killed with SIGKILL strands no slot: its lock goes with it, and its run leaves the slot empty', async () => {
    const jail = spawn(
      jailPath(),
      [
        '--max-procs',
        '64',
        '--memory',
        String(256 << 20),
        '--',
        '/bin/sh',
        '-c',
        'cat /proc/self/cgroup; sleep 300',
      ],
      { cwd: '/', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    jail.stdout.on('data', (d: Buffer) => (out += d.toString()));
    await waitUntil('the run to print its cgroups', () => /:memory:|^0::/m.test(out));
    // the slot is locked in the first hierarchy the jail takes it in: v1's pids, or v2's one
    const pids = /^\d+:pids:(\S+)$/m.exec(out)?.[1];
    const memory = /^\d+:memory:(\S+)$/m.exec(out)?.[1];
    const dir = pids ? `/sys/fs/cgroup/pids${pids}` : `/sys/fs/cgroup${/^0::(\S+)$/m.exec(out)![1]}`;
    expect(dir).toMatch(/\/runboard-slot-\d+$/);
    if (memory) expect(memory).toMatch(new RegExp(`/${path.basename(dir)}$`)); // the same slot number
    const free = (): boolean =>
      spawnSync('python3', ['-c', FLOCK_FREE, dir], { encoding: 'utf8' }).stdout.trim() === 'free';
    expect(free()).toBe(false); // held while the run lives
    const exited = new Promise((r) => jail.once('exit', r));
    jail.kill('SIGKILL');
    await exited;
    await waitUntil(
      'the run to leave the slot',
      () => readFileSync(path.join(dir, 'cgroup.procs'), 'utf8') === '',
    );
    // The lock goes when the last process holding it has closed its files. The slot's processes may be
    // gone from cgroup.procs a moment before that on a busy machine (CI, load 23: held at the first look):
    // what a user relies on is that it goes, not that it is gone at the same instant.
    await waitUntil("the slot's lock to go with the jail", free);
    expect(readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')).toBe('');
  });

  // setpriv needs root to become nobody.
  it.skipIf(process.getuid?.() !== 0)(
    'a jail that can make no memory cgroup says so, and why (no other limit stands in)',
    () => {
      // As nobody, no cgroup of root's can be written: the run starts, its started line says there is no
      // memory limit and why (the supervisor puts it in the run's log as a warning).
      const r = spawnSync(
        'setpriv',
        ['--reuid', '65534', '--regid', '65534', '--clear-groups', jailPath(), '--status-fd', '1'].concat([
          '--memory',
          String(128 << 20),
          '--',
          '/bin/true',
        ]),
        { encoding: 'utf8', cwd: '/' },
      );
      expect(r.status).toBe(0);
      const started = JSON.parse(r.stdout.split('\n')[0]!) as Record<string, unknown>;
      expect(started).toMatchObject({ event: 'started', memoryLimit: 'none', memoryBytes: 128 << 20 });
      // a slot of root's (kept from run to run) cannot be written, nor can a cgroup of its own be made
      expect(String(started.memoryError)).toMatch(
        /^(mkdir .*runboard-run-\d+|.*runboard-slot-\d+\/memory\.[a-z_.]+): Permission denied$/,
      );
    },
  );

  it("a run's /tmp is 1 GiB by default, and what it writes there counts in its memory limit", async () => {
    const size = await h.run(['sh', '-c', "df -k --output=size /tmp | tail -1 | tr -d ' '"]);
    expect(Number(size.stdout)).toBe(1024 * 1024);
    // /tmp is a tmpfs: its pages are memory the run holds, which no kill of a process gives back.
    const rec = await h.run(['sh', '-c', 'head -c 400M /dev/zero > /tmp/fill && echo filled'], {
      sandbox: { memory: '128m' },
    });
    expect(rec.stdout).not.toContain('filled');
    expect(rec.result.termination?.reason).toBe('memory-limit');
  });
});
