// Attacks on the run jail's filesystem and process containment, each made from inside a real run
// (supervisor → jail → worker → command). Each case failed before its fix: docs/security-model.md.
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FlowSpec } from '@runboard/supervisor/protocol';
import { BoardStore } from '../../host/src/core/board-store.ts';
import { Harness, processesMentioning, waitUntil } from '../helpers/harness.ts';

/** Exchanges argv[1] and argv[2] (renameat2 RENAME_EXCHANGE) as fast as it can, until killed. */
const SWAP = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.fsencode(p) for p in sys.argv[1:3])
while True:
    libc.renameat2(-100, a, -100, b, 2)
`;

// Both containments: the user + PID (+ mount) namespace, and the subreaper fallback, where Landlock
// alone confines the filesystem.
for (const mode of ['namespaces', 'no namespaces'] as const) {
  describe(`containment (${mode})`, () => {
    let h: Harness;
    beforeAll(async () => {
      h = await Harness.start(mode === 'namespaces' ? {} : { env: { RUNBOARD_NAMESPACES: 'off' } });
    });
    afterAll(async () => {
      await h.stop();
    });

    it('the state root stays hidden through a symlink next to a folder on its way', async () => {
      // `<parent of the state root>/x -> /`: the rule that hides the state root listed that folder's
      // entries and, following the link, allowed reading all of /.
      const link = path.join(path.dirname(h.paths.root), `x-${mode.replace(' ', '-')}`);
      symlinkSync('/', link);
      const key = path.join(h.paths.keysDir, 'grant.key');
      expect(readFileSync(key).length).toBeGreaterThan(0);
      const rec = await h.run(`cat ${path.join(link, key)} >/dev/null && echo READ || echo refused`);
      expect(rec.stdout).toBe('refused\n');
    });

    // Landlock does not cover metadata; the read-only mount namespace does. Without user namespaces
    // there is none (docs/security-model.md, what remains in the fallback).
    it.skipIf(mode !== 'namespaces')(
      'metadata outside the writable trees cannot be changed (chmod, utime, xattr)',
      async () => {
        const outside = path.join(h.root, `outside-${mode.replace(' ', '-')}.txt`);
        writeFileSync(outside, 'x\n');
        const key = path.join(h.paths.keysDir, 'grant.key');
        const before = { key: statSync(key).mode, out: statSync(outside) };
        const rec = await h.run(
          `chmod 0666 ${key} 2>/dev/null; chmod 0777 ${outside}; touch -d 2001-01-01 ${outside}; ` +
            `python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.rb", b"1")' ${outside} || true; ` +
            `echo done`,
        );
        expect(rec.stdout).toBe('done\n');
        expect(statSync(key).mode).toBe(before.key);
        const after = statSync(outside);
        expect(after.mode).toBe(before.out.mode);
        expect(after.mtimeMs).toBe(before.out.mtimeMs);
        expect(lstatSync(outside).isFile()).toBe(true);
        // inside the workspace metadata still changes as it should
        mkdirSync(path.join(h.workspace, 'meta'), { recursive: true });
        writeFileSync(path.join(h.workspace, 'meta', 'f'), '');
        const ok = await h.run('chmod 0700 meta/f && touch -d 2001-01-01 meta/f && echo changed');
        expect(ok.stdout).toBe('changed\n');
        expect(statSync(path.join(h.workspace, 'meta', 'f')).mode & 0o777).toBe(0o700);
      },
    );

    it("a flow's LD_PRELOAD reaches the run, not runboard-jail before it confines itself", async () => {
      // A library that, loaded into any process, leaves a marker named after it where only an
      // unconfined process can write.
      const dir = path.join(h.root, `preload-${mode.replace(' ', '-')}`);
      const markers = path.join(dir, 'markers');
      mkdirSync(markers, { recursive: true });
      writeFileSync(
        path.join(dir, 'mark.c'),
        `#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n#include <string.h>\n` +
          `__attribute__((constructor)) static void mark(void) {\n` +
          `  char comm[64] = {0}, path[512]; FILE* f = fopen("/proc/self/comm", "r");\n` +
          `  if (f) { if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\\n")] = 0; fclose(f); }\n` +
          `  snprintf(path, sizeof path, "${markers}/%s-%d", comm, (int)getpid());\n` +
          `  FILE* m = fopen(path, "w"); if (m) fclose(m);\n}\n`,
      );
      execFileSync('cc', ['-shared', '-fPIC', '-o', path.join(dir, 'mark.so'), path.join(dir, 'mark.c')]);
      const rec = await h.run('echo "$LD_PRELOAD"', { env: { LD_PRELOAD: path.join(dir, 'mark.so') } });
      expect(rec.result.status).toBe('succeeded');
      expect(rec.stdout).toBe(`${path.join(dir, 'mark.so')}\n`); // the run has it
      // No marker at all: the jail never loaded it, and what loaded it in the run could not write there.
      expect(readdirSync(markers)).toEqual([]);
    });

    it.skipIf(mode !== 'namespaces')(
      "a fork bomb stops at the flow's process limit and leaves nothing behind",
      async () => {
        const bomb = [
          'import os, time',
          'n = 0',
          'for i in range(2000):',
          '    try:',
          '        pid = os.fork()',
          '    except OSError as e:',
          '        print("stopped", e.strerror); break',
          '    if pid == 0:',
          '        time.sleep(120); os._exit(0)',
          '    n += 1',
          'print("forked", n)',
        ].join('\n');
        const rec = await h.run(['python3', '-c', bomb], { sandbox: { maxProcesses: 100 } });
        const [stopped, forked] = rec.stdout.trim().split('\n');
        expect(stopped).toBe('stopped Resource temporarily unavailable');
        expect(Number(forked!.split(' ')[1])).toBeLessThan(100);
        expect(rec.result.status).toBe('succeeded');
        const started = rec.events.find((e) => e.type === 'started');
        expect(started?.data?.maxProcs).toBe(100);
        expect(processesMentioning(h.root)).toEqual([h.supervisor.pid]); // the sleeps are gone
      },
    );

    // Without a mount namespace there is no read-only exception inside a writable tree (docs).
    it.skipIf(mode !== 'namespaces')(
      'a run in the project folder cannot add a flow to config.yaml, queue a card or plant a recording',
      async () => {
        const project = h.workspace; // a card without `workspace:` runs in its project folder
        mkdirSync(path.join(project, 'cards'), { recursive: true });
        const config = path.join(project, 'config.yaml');
        writeFileSync(config, 'version: 1\nflows:\n  shell: { runner: command }\n');
        const card = path.join(project, 'cards', 'attack.md');
        writeFileSync(card, '---\ntitle: attack\nflow: shell\n---\n');
        const attack =
          `printf '  evil: { runner: command, sandbox: { writable: [/] } }\\n' >> config.yaml || echo config-refused; ` +
          `printf -- '---\\ntitle: evil\\nflow: evil\\nstatus: queued\\n---\\n' > cards/evil.md || echo card-refused; ` +
          `mv cards cards.old 2>/dev/null || echo move-refused; ` +
          `mkdir -p recordings/rec-planted 2>/dev/null || echo recording-refused; ` +
          `echo ok > other.txt && echo workspace-writable`;
        const launch = (flow: Partial<FlowSpec>) =>
          h.client
            .launch({
              card: { path: card, project, title: 'attack' },
              flow: h.flow(flow),
              workspace: project,
              grant: h.grant,
              command: attack,
            })
            .then(({ runId }) => h.collect(runId));
        const rec = await launch({});
        expect(rec.stdout).toBe(
          'config-refused\ncard-refused\nmove-refused\nrecording-refused\nworkspace-writable\n',
        );
        expect(readdirSync(path.join(project, 'recordings'))).toEqual([]);
        expect(readFileSync(config, 'utf8')).not.toContain('evil');
        expect(readdirSync(path.join(project, 'cards'))).toEqual(['attack.md']);
        // The user can allow it for a flow that edits the board on purpose.
        const allowed = await launch({ sandbox: { projectWritable: true } });
        expect(allowed.stdout).toBe('workspace-writable\n');
        expect(readFileSync(config, 'utf8')).toContain('evil');
        expect(readdirSync(path.join(project, 'cards.old')).sort()).toEqual(['attack.md', 'evil.md']);
      },
    );

    // A read-only mount on a file is detached by the kernel when that file is renamed over from
    // outside (the board used to save config.yaml so): the run could then write the new config.yaml.
    it.skipIf(mode !== 'namespaces')(
      'a run in the project folder cannot write config.yaml after the board saved it during the run',
      async () => {
        const project = path.join(h.workspace, 'saved-project'); // inside the grant
        mkdirSync(path.join(project, 'cards'), { recursive: true });
        const config = path.join(project, 'config.yaml');
        writeFileSync(config, 'version: 1\nflows:\n  shell: { runner: command }\n');
        const card = path.join(project, 'cards', 'attack.md');
        writeFileSync(card, '---\ntitle: attack\nflow: shell\n---\n');
        const board = new BoardStore(project);
        board.load();
        // The run waits until the board has saved config.yaml (the test says `go`), then writes it.
        const attack =
          `touch started; while [ ! -e go ]; do sleep 0.02; done; ` +
          `(printf '  evil: { runner: command, sandbox: { writable: [/] } }\\n' >> config.yaml) 2>/dev/null ` +
          `&& echo config-written || echo config-refused; ` +
          `(echo x > config.yaml.new && mv config.yaml.new config.yaml) 2>/dev/null && echo config-replaced || echo replace-refused`;
        const { runId } = await h.client.launch({
          card: { path: card, project, title: 'attack' },
          flow: h.flow({}),
          workspace: project,
          grant: h.grant,
          command: attack,
        });
        await waitUntil('the run to start', () => existsSync(path.join(project, 'started')));
        board.updateConfig((text) => `${text}# saved on the board\n`);
        writeFileSync(path.join(project, 'go'), '');
        const rec = await h.collect(runId);
        expect(rec.stdout).toBe('config-refused\nreplace-refused\n');
        const saved = readFileSync(config, 'utf8');
        expect(saved).toContain('# saved on the board\n');
        expect(saved).not.toContain('evil');
        await board.close();
      },
    );

    it('a workspace exchanged for a symlink while runs start never gives write access outside', async () => {
      // Another process (a run with the grant's folder writable, in the attack) exchanges the card's
      // workspace with a symlink to an outside folder, in a loop, while runs launch.
      const tag = mode.replace(' ', '-');
      const sub = path.join(h.workspace, `race-${tag}`);
      const link = path.join(h.workspace, `race-link-${tag}`);
      const outside = path.join(h.root, `race-outside-${tag}`);
      mkdirSync(sub);
      mkdirSync(outside);
      symlinkSync(outside, link);
      const swapper = spawn('python3', ['-c', SWAP, sub, link], { stdio: 'ignore' });
      try {
        let launched = 0;
        for (let i = 0; i < 30; i++) {
          // the run writes to the outside folder by name: only a write rule on it lets that through
          const started = await h
            .launch(`echo x > ${outside}/escaped-$RUNBOARD_RUN_ID`, {}, { workspace: sub })
            .then(
              ({ runId }) => h.collect(runId),
              () => null, // refused at the grant check (the path was the symlink then): fine
            );
          if (started) launched++;
        }
        expect(launched).toBeGreaterThan(0);
      } finally {
        swapper.kill('SIGKILL');
      }
      expect(readdirSync(outside)).toEqual([]);
    });

    it.skipIf(mode !== 'no namespaces')('a run cannot use the supervisor socket', async () => {
      // Without a mount namespace the socket is there, but the jail makes the run's connections and the
      // socket is none the run was given: refused (decision 128). Before, the connection was made and
      // the supervisor refused the run's request (1040, its peer is no client); it still would.
      const script = `const s = require('net').connect(${JSON.stringify(h.paths.socket)});
        s.on('error', (e) => console.log(e.code));
        s.on('connect', () => { console.log('connected'); s.end(); });`;
      expect((await h.run(['node', '-e', script])).stdout.trim()).toBe('EACCES');
      expect((await h.client.status()).pid).toBe(h.supervisor.pid);
    });
  });
}
