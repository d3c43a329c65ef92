// The run jail's mount mode (`--fs-mounts`, flows with sandbox.agentSandbox): the filesystem policy of
// the Landlock mode enforced by a private mount namespace, so that an agent's own bubblewrap sandbox can
// run inside. The real jail binary, real processes; each property checked from inside a run.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jailPath } from '@runboard/native';
import { packageFile } from '../../worker/src/runners/agent-cli.ts';

let root: string;
let ws: string; // the run's workspace (writable)
let state: string; // stands for Runboard's state root (hidden)
let scratch: string; // the run's scratch dir, inside the hidden state root (writable)
let server: net.Server;
let port: number;

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'rb-jail-mounts-'));
  ws = path.join(root, 'ws');
  state = path.join(root, 'state');
  scratch = path.join(state, 'scratch', 'run1');
  for (const d of [ws, path.join(state, 'keys'), scratch]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(state, 'keys', 'grant.key'), 'secret\n');
  server = net.createServer((s) => s.end('hello\n'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
  rmSync(root, { recursive: true, force: true });
});

/** Runs `script` (bash) in the jail in mount mode; what it printed and the jail's status lines. */
async function jailed(script: string, extra: string[] = [], mode = '--fs-mounts') {
  const args = ['--status-fd', '3', mode, '--write', ws, '--write', scratch, '--hide', state];
  const child = spawn(jailPath(), [...args, ...extra, '--', 'bash', '-c', script], {
    cwd: ws,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, HOME: scratch },
  });
  const text = (i: 1 | 2 | 3) => {
    let t = '';
    child.stdio[i]!.on('data', (d: Buffer) => (t += d.toString('utf8')));
    return () => t;
  };
  const [stdout, stderr, statusText] = [text(1), text(2), text(3)];
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const status = statusText()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, stdout: stdout(), stderr: stderr(), status };
}

/**
 * Replaces `file` by renames (a temp written, renamed over it), as the board saves a card, in a thread of
 * its own until stopped; a stop lets the rename under way finish, so no temp is left behind.
 */
function renameLoop(file: string): { stop: () => Promise<void> } {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const thread = new Worker(
    `const { workerData } = require('node:worker_threads');
     const fs = require('node:fs');
     const stop = new Int32Array(workerData.flag);
     while (Atomics.load(stop, 0) === 0) {
       fs.writeFileSync(workerData.file + '.t', 'v\\n');
       fs.renameSync(workerData.file + '.t', workerData.file);
       // a rename every half millisecond, far more often than a board writes a card, and well inside
       // the jail's setup (its first clone to its move); not a rename storm that wins the jail's
       // re-clone back to back 50 times (it did, on a quiet 2-core CI machine)
       Atomics.wait(stop, 0, 0, 0.5);
     }`,
    { eval: true, workerData: { file, flag: flag.buffer } },
  );
  return {
    stop: async () => {
      Atomics.store(flag, 0, 1);
      await new Promise((r) => thread.once('exit', r));
    },
  };
}

describe('jail --fs-mounts', async () => {
  it('reports the mode, and keeps Landlock for network and scopes', async () => {
    const r = await jailed('true');
    expect(r.code).toBe(0);
    expect(r.status.find((s) => s.event === 'sandbox')).toMatchObject({ enforced: true, fs: 'mounts' });
    expect(r.status.find((s) => s.event === 'started')).toMatchObject({ containment: 'pid-namespace' });
  });

  it('writes only to the writable trees (relative paths too); everything else is read-only', async () => {
    const outside = path.join(root, 'outside.txt');
    const r = await jailed(
      `echo a > rel.txt && echo ws-ok; echo b > ${scratch}/b.txt && echo scratch-ok; ` +
        `echo c > ${outside} || echo outside-refused; echo d > /tmp/rb-jail-mounts-probe-$$ || echo tmp-refused`,
    );
    expect(r.stdout).toBe('ws-ok\nscratch-ok\noutside-refused\ntmp-refused\n');
    expect(r.stderr).toContain(`${outside}: Read-only file system`);
    expect(readFileSync(path.join(ws, 'rel.txt'), 'utf8')).toBe('a\n');
    expect(readFileSync(path.join(scratch, 'b.txt'), 'utf8')).toBe('b\n');
  });

  it('hides the hidden trees (but the writable tree inside them), and nothing undoes it', async () => {
    const key = path.join(state, 'keys', 'grant.key');
    const r = await jailed(
      `cat ${key} || echo key-hidden; ls ${state}; ` +
        // not with the mount syscalls: no capabilities are left, and a nested user+mount namespace
        // (what bubblewrap makes) gets the jail's mounts locked
        `umount -l ${state} 2>/dev/null; ` +
        `unshare -Urm sh -c 'echo in-nested-ns; umount -l ${state} 2>/dev/null; cat ${key} 2>/dev/null || echo still-hidden'`,
    );
    expect(r.stdout).toBe('key-hidden\nscratch\nin-nested-ns\nstill-hidden\n');
    expect(r.stderr).toContain(`${key}: No such file or directory`);
  });

  it('reads only the --read trees (an allow-list) from mounts alone, as the agent-sandbox mode has no Landlock fs rules', async () => {
    // Outside /tmp, as a home is: a folder with a secret next to one the run may read.
    const home = mkdtempSync('/var/tmp/rb-jail-home-');
    mkdirSync(path.join(home, 'shared'));
    writeFileSync(path.join(home, 'secret'), 'SECRET\n');
    writeFileSync(path.join(home, 'shared', 'notes'), 'NOTES\n');
    const reads = ['/usr', '/bin', '/lib', '/lib64', '/etc', '/proc', path.join(home, 'shared')];
    const r = await jailed(
      `cat ${home}/secret 2>/dev/null || echo secret-hidden; cat ${home}/shared/notes; ` +
        `ls ${home}; ls /tmp | grep -c . ; ls /var; ls -d /tmp/.X11-unix 2>/dev/null || echo no-x11; ` +
        `echo x > ${home}/shared/n 2>/dev/null || echo read-only; cat ${state}/keys/grant.key 2>/dev/null || echo key-hidden`,
      reads.flatMap((t) => ['--read', t]).concat('--private-tmp', '16m'),
    );
    rmSync(home, { recursive: true, force: true });
    expect(r.status.find((s) => s.event === 'sandbox')).toMatchObject({ fs: 'mounts' });
    // /tmp holds the folder on the way to ws and the state's scratch (one name), /var only tmp on the way
    expect(r.stdout).toBe('secret-hidden\nNOTES\nshared\n1\ntmp\nno-x11\nread-only\nkey-hidden\n');
  });

  it('starts while a file it may read is replaced by renames (the board rewrites a card as its run starts)', async () => {
    // A card file, readable by the run, that another process keeps replacing (write a temp, rename it
    // over): the jail's copy of the old file had been unlinked when it was put in place, and the run
    // failed "sandbox-failed: move_mount <card>.md: No such file or directory".
    const project = mkdtempSync('/var/tmp/rb-jail-card-');
    const card = path.join(project, 'card.md');
    writeFileSync(card, 'v0\n');
    const writer = renameLoop(card);
    const reads = ['/usr', '/bin', '/lib', '/lib64', '/etc', '/proc', card];
    const failures: string[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const r = await jailed(
          `cat ${card}`,
          reads.flatMap((t) => ['--read', t]).concat('--private-tmp', '16m'),
        );
        if (r.code !== 0 || !/^v/.test(r.stdout)) failures.push(`${r.code}: ${r.stderr.trim()}`);
      }
    } finally {
      await writer.stop();
      rmSync(project, { recursive: true, force: true });
    }
    expect(failures).toEqual([]);
  });

  it('starts while a read-only file in its workspace is replaced by renames (config.yaml as the board saves it)', async () => {
    const config = path.join(ws, 'config.yaml');
    writeFileSync(config, 'v0\n');
    const writer = renameLoop(config);
    const failures: string[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        // (only that it starts: once a rename from outside replaced the file, the kernel detaches the
        // read-only mount on it, and the run may write the new one — a known gap, see docs/security-model.md)
        const r = await jailed(`cat ${config}`, ['--read-only', config]);
        if (r.code !== 0 || !/^v/.test(r.stdout))
          failures.push(`${r.code}: ${JSON.stringify(r.stdout)} ${r.stderr.trim()}`);
      }
    } finally {
      await writer.stop();
    }
    expect(failures).toEqual([]);
  });

  it('gives the run a /tmp of its own: fixed names can be made, the real /tmp is untouched and read-only', async () => {
    // What codex's sandbox helper does first (mkdir /tmp/codex-daemon-<uid>), under a name no one made.
    const name = `rb-private-tmp-${process.pid}-${Date.now()}`;
    const r = await jailed(
      `mkdir /tmp/${name} && echo made; echo x > /tmp/${name}/f && cat /tmp/${name}/f; ` +
        `ls -d ${ws} >/dev/null && echo ws-visible; echo w > ${ws}/via-tmp.txt && echo ws-writable; ` +
        `echo y > ${root}/outside.txt || echo outside-refused; cat ${state}/keys/grant.key || echo key-hidden; ` +
        // a tmpfs of the size asked for, not more: the run cannot fill the machine's memory through it
        `head -c 2M /dev/zero > /tmp/big 2>/dev/null || echo tmp-full`,
      ['--private-tmp', '1m'],
    );
    expect(r.stdout).toBe('made\nx\nws-visible\nws-writable\noutside-refused\nkey-hidden\ntmp-full\n');
    expect(existsSync(path.join('/tmp', name))).toBe(false); // not in the machine's /tmp
    expect(readFileSync(path.join(ws, 'via-tmp.txt'), 'utf8')).toBe('w\n');
  });

  it('refuses a /tmp size it cannot take as a bound (more than the memory, no number, a unit tmpfs lacks)', async () => {
    for (const bad of ['101%', '300%', '0', '0m', '1.5g', 'm', '2t', '']) {
      const r = await jailed('echo ran', ['--private-tmp', bad]);
      expect(r.code, bad).toBe(2);
      expect(r.stdout, bad).toBe('');
      expect(r.stderr, bad).toContain('at most 100%');
    }
    expect((await jailed('echo ran', ['--private-tmp', '100%'])).stdout).toBe('ran\n');
  });

  it("shows the run only the entries of the machine's /tmp it needs, in either filesystem mode", async () => {
    // Another program's temp files: not the run's to read (and copying every entry cost each launch).
    const other = mkdtempSync(path.join(os.tmpdir(), 'rb-other-'));
    writeFileSync(path.join(other, 'secret.txt'), 'not yours');
    try {
      for (const mode of ['--fs-mounts', '--ro-mounts']) {
        const r = await jailed(
          `cat ${other}/secret.txt || echo unseen; ls -d ${ws} > /dev/null && echo ws-seen; ` +
            `mkdir /tmp/fixed-name && echo own-tmp-writable`,
          ['--private-tmp', '16m'],
          mode,
        );
        expect(r.stdout, `${mode}: ${r.stderr}`).toBe('unseen\nws-seen\nown-tmp-writable\n');
      }
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("has a /proc of the run's own PID namespace and no capabilities to speak of", async () => {
    const r = await jailed(`ls /proc | grep -c '^[0-9]'; grep CapEff /proc/self/status`);
    const [procs, capEff] = r.stdout.trim().split('\n');
    expect(Number(procs)).toBeLessThan(10); // bash, ls, grep: not the machine's processes
    // Root runs keep CAP_SETFCAP only (user namespaces mapping uid 0 need it); others have none.
    expect(capEff).toMatch(process.getuid?.() === 0 ? /CapEff:\s+0000000080000000/ : /CapEff:\s+0{16}/);
  });

  it('has a /dev of the allowed devices only, and terminals of its own', async () => {
    const r = await jailed(
      `ls /dev | tr '\\n' ' '; echo; echo x > /dev/null && echo null-ok; ls /dev/pts | tr '\\n' ' '; echo; ` +
        `python3 -c 'import os; m, s = os.openpty(); print(os.ttyname(s))'`,
    );
    expect(r.stdout).toBe(
      'fd full null ptmx pts random stderr stdin stdout tty urandom zero \nnull-ok\nptmx \n/dev/pts/0\n',
    );
  });

  it('still refuses TCP to ports the flow does not allow', async () => {
    const probe = `exec 3<>/dev/tcp/127.0.0.1/${port} && head -1 <&3 || echo refused`;
    expect((await jailed(probe)).stdout).toBe('refused\n');
    expect((await jailed(probe, ['--tcp', String(port)])).stdout).toBe('hello\n');
  });

  // The codex package ships bubblewrap for this platform only.
  const bwrap =
    process.arch === 'x64'
      ? packageFile('@openai/codex-linux-x64', 'vendor/x86_64-unknown-linux-musl/codex-resources/bwrap')
      : null;
  it.skipIf(!bwrap || !existsSync(bwrap))(
    "lets bubblewrap (codex's) build its own stricter sandbox inside",
    async () => {
      const r = await jailed(
        `${bwrap} --ro-bind / / --dev /dev --unshare-user --unshare-pid --proc /proc --bind ${ws} ${ws} ` +
          `-- bash -c 'echo in > ${ws}/bw.txt && echo bw-ws-ok; echo x > ${scratch}/bw.txt || echo bw-scratch-refused'`,
      );
      expect(r.stderr).toContain(`${scratch}/bw.txt: Read-only file system`);
      expect(r.stdout).toBe('bw-ws-ok\nbw-scratch-refused\n');
    },
  );

  it('the run is told how it is confined; "if possible" falls back to Landlock without namespaces', async () => {
    const say = 'echo "$RUNBOARD_FS_CONFINEMENT"';
    expect((await jailed(say)).stdout).toBe('mounts\n');
    expect((await jailed(say, [], '--fs-mounts-if-possible')).stdout).toBe('mounts\n');
    const without = await jailed(
      `${say}; echo x > ${root}/outside.txt || echo refused`,
      ['--no-namespaces'],
      '--fs-mounts-if-possible',
    );
    expect(without.code).toBe(0);
    expect(without.stdout).toBe('landlock\nrefused\n'); // confined all the same, by Landlock
    expect(without.status.find((s) => s.event === 'sandbox')).toMatchObject({
      enforced: true,
      fs: 'landlock',
    });
    // required, it refuses to run instead
    const required = await jailed(say, ['--no-namespaces']);
    expect(required.code).not.toBe(0);
    expect(required.stdout).toBe('');
  });
});
