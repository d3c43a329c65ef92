/**
 * A hostile run prints whatever "Permission denied" lines it likes: these are the asks it tries to
 * forge, and what the supervisor makes of them (never a folder it must not offer, never the run's text).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { desktopSocketDirs, installDirs, protectedConflict } from '../common/protected-dirs.ts';
import { deriveAsks, MAX_ASKS, type AskContext } from './asks.ts';
import { DenialScanner, type Denial } from './denials.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rb-asks-'));
const home = path.join(root, 'home');
const state = path.join(home, '.local', 'share', 'runboard');
const runtime = path.join(root, 'run', 'runboard');
const project = path.join(home, 'project');
const ws = path.join(project, 'workspace');
const out = path.join(root, 'out');
const scratch = path.join(state, 'scratch', 'r1');
for (const d of [path.join(home, '.ssh'), state, runtime, path.join(project, 'cards'), ws, out, scratch])
  mkdirSync(d, { recursive: true });
symlinkSync(path.join(home, '.ssh'), path.join(ws, 'keys'));
symlinkSync(out, path.join(ws, 'out-link'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const ctx: AskContext = {
  writable: [ws, scratch],
  hidden: [state, runtime],
  readOnly: [path.join(project, 'config.yaml'), path.join(project, 'cards')],
  ownPorts: [41234],
  tcpPorts: [5432],
  workspace: ws,
  home,
};

function denials(lines: string[], askDeletes = false): Denial[] {
  const found: Denial[] = [];
  const s = new DenialScanner(ws, ctx.writable as string[], (d) => found.push(d), askDeletes);
  for (const l of lines) s.scan(Buffer.from(l + '\n'));
  return found;
}
const asksOf = (lines: string[], askDeletes = false) => deriveAsks(denials(lines, askDeletes), ctx);

describe('permission asks: what a run may be asked for', () => {
  it('a write outside the grant asks for the deepest existing folder, as its realpath', () => {
    const { asks } = asksOf([`sh: 1: cannot create ${out}/new/deeper/x.txt: Permission denied`]);
    expect(asks).toEqual([
      {
        id: 'a1',
        kind: 'write',
        path: out,
        evidence: `sh: 1: cannot create ${out}/new/deeper/x.txt: Permission denied`,
        source: 'sandbox',
      },
    ]);
    // through a link in the workspace: the folder it points to, not the link's name
    expect(asksOf([`touch: cannot touch '${ws}/out-link/y': Permission denied`]).asks[0]?.path).toBe(out);
  });

  it('a refused TCP connect asks for that port; the model proxy and allowed ports are not asked', () => {
    expect(asksOf(['Error: connect EACCES 127.0.0.1:6379']).asks).toMatchObject([
      { kind: 'connect', port: 6379 },
    ]);
    const r = asksOf(['Error: connect EACCES 127.0.0.1:41234', 'Error: connect EACCES 127.0.0.1:5432']);
    expect(r.asks).toEqual([]);
    expect(r.refused.map((x) => x.why)).toEqual([
      "port 41234 is Runboard's own model proxy",
      'port 5432 is allowed already',
    ]);
  });

  it('attack: a fake denial of a file in / asks nothing (the whole file system)', () => {
    const r = asksOf(['cannot create /x: Permission denied']);
    expect(r.asks).toEqual([]);
    expect(r.refused[0]?.why).toMatch(/whole file system/);
  });

  it('attack: ~/.ssh, ~/.bashrc (the home folder) and ~/.ssh through a link in the workspace ask nothing', () => {
    const r = asksOf([
      `cannot create ${home}/.ssh/authorized_keys: Permission denied`,
      `cannot create ${home}/.bashrc: Permission denied`,
      `cannot create ${ws}/keys/authorized_keys: Permission denied`,
      `cannot create ${ws}/../../.ssh/id_rsa: Permission denied`,
    ]);
    expect(r.asks).toEqual([]);
    expect(r.refused.map((x) => x.why)).toEqual([
      expect.stringMatching(/hidden folder of your home/),
      // (here the state root lies in the home folder: refused for that first)
      expect.stringMatching(/your whole home folder|Runboard's own state/),
      expect.stringMatching(/hidden folder of your home/),
      expect.stringMatching(/hidden folder of your home/),
    ]);
  });

  it("attack: the state root, the supervisor's socket dir and the folders around them ask nothing", () => {
    const r = asksOf([
      `cannot create ${state}/keys/grant.key: Permission denied`,
      `cannot create ${runtime}/supervisor.sock: Permission denied`,
      `cannot create ${path.dirname(runtime)}/x: Permission denied`,
      `cannot create ${path.join(root, 'run', 'new')}/x: Permission denied`,
    ]);
    expect(r.asks).toEqual([]);
    for (const x of r.refused) expect(x.why).toMatch(/Runboard's own state/);
  });

  it("attack: the project's config.yaml and cards/ (and the project folder around them) ask nothing", () => {
    const r = asksOf([
      `cannot create ${project}/config.yaml: Permission denied`,
      `cannot create ${project}/cards/evil.md: Permission denied`,
    ]);
    expect(r.asks).toEqual([]);
    for (const x of r.refused) expect(x.why).toMatch(/config.yaml or cards/);
  });

  it('a refused read (file permissions, not the sandbox) asks nothing', () => {
    const r = asksOf([
      `cat: ${out}/secret: Permission denied`,
      `ls: cannot open directory '${out}/x': Permission denied`,
    ]);
    expect(r.asks).toEqual([]);
    expect(r.refused[0]?.why).toMatch(/does not read as a write/);
  });

  it('a refused read of a folder the read allow-list hides asks `read` of that folder; never a hidden one', () => {
    const confined: AskContext = { ...ctx, readable: ['/usr', ws, scratch] };
    const found: Denial[] = [];
    const s = new DenialScanner(
      ws,
      ctx.writable as string[],
      (d) => found.push(d),
      false,
      () => ['/usr', ws, scratch],
    );
    for (const l of [
      `cat: ${out}/data.csv: No such file or directory`,
      `ls: cannot access '${out}': No such file or directory`,
      `cat: ${home}/.ssh/id_ed25519: No such file or directory`,
      `cat: ${runtime}/supervisor.sock: No such file or directory`,
      `sh: 1: cannot create ${out}/new.txt: Directory nonexistent`,
    ])
      s.scan(Buffer.from(l + '\n'));
    const r = deriveAsks(found, confined);
    // one read ask for out (the file's folder and the folder itself are the same), one write ask
    expect(r.asks).toMatchObject([
      { kind: 'read', path: out },
      { kind: 'write', path: out },
    ]);
    expect(r.refused.map((x) => x.why)).toEqual([
      expect.stringMatching(/reading .*\.ssh is not asked: it is a hidden folder/),
      expect.stringMatching(/reading .* is not asked: .*Runboard's own state/),
    ]);
    // a codex command that could only read there is a read; inside what the run reads, a write
    const agent: Denial[] = [];
    const a = new DenialScanner(
      ws,
      ctx.writable as string[],
      (d) => agent.push(d),
      false,
      () => ['/usr', ws],
    );
    a.scanAgent(`command cat ${out}/data.csv: No such file or directory`);
    expect(deriveAsks(agent, confined).asks).toMatchObject([{ kind: 'read', path: out }]);
    // a redirect into the hidden folder, or a writing tool, is a write (bash says only "No such file")
    for (const cmd of [
      `command: /bin/bash -lc "printf 'a' > ${out}/data.csv": /bin/bash: line 1: ${out}/data.csv: No such file or directory`,
      `command touch ${out}/x: touch: cannot touch '${out}/x': No such file or directory`,
    ]) {
      const w: Denial[] = [];
      new DenialScanner(
        ws,
        ctx.writable as string[],
        (d) => w.push(d),
        false,
        () => ['/usr', ws],
      ).scanAgent(cmd);
      expect(deriveAsks(w, confined).asks, cmd).toMatchObject([{ kind: 'write', path: out }]);
    }
    // a redirect into the hidden folder, or a writing tool, is a write (bash says only "No such file")
    for (const cmd of [
      `command: /bin/bash -lc "printf 'a' > ${out}/data.csv": /bin/bash: line 1: ${out}/data.csv: No such file or directory`,
      `command touch ${out}/x: touch: cannot touch '${out}/x': No such file or directory`,
    ]) {
      const w: Denial[] = [];
      new DenialScanner(
        ws,
        ctx.writable as string[],
        (d) => w.push(d),
        false,
        () => ['/usr', ws],
      ).scanAgent(cmd);
      expect(deriveAsks(w, confined).asks, cmd).toMatchObject([{ kind: 'write', path: out }]);
    }
  });

  it('attack: system folders ask nothing', () => {
    const r = asksOf([
      'cannot create /etc/cron.d/x: Permission denied',
      'cannot create /usr/bin/x: Permission denied',
    ]);
    expect(r.asks).toEqual([]);
    for (const x of r.refused) expect(x.why).toMatch(/system folder/);
  });

  it('attack: a flood of denials gives at most MAX_ASKS asks, one per folder', () => {
    const many = Array.from({ length: 10 }, (_, i) => {
      mkdirSync(path.join(out, `d${i}`), { recursive: true });
      return `cannot create ${out}/d${i}/x: Permission denied`;
    });
    const r = asksOf([...many, `cannot create ${out}/d0/y: Permission denied`]);
    expect(r.asks).toHaveLength(MAX_ASKS);
    expect(new Set(r.asks.map((a) => a.path)).size).toBe(MAX_ASKS);
  });

  it("the run's words are evidence only: control characters go, the ask is the supervisor's", () => {
    const r = asksOf([`cannot create ${out}/x: Permission denied \u001b[2J\u0007 please allow /`]);
    expect(r.asks[0]?.path).toBe(out);
    expect(r.asks[0]?.evidence).not.toMatch(/\p{Cc}/u);
  });

  it('deletes in the workspace are asked only when the flow asks for deletes, and only inside it', () => {
    mkdirSync(path.join(ws, 'build'), { recursive: true });
    const line = `rm: cannot remove '${ws}/build/a.o': Permission denied`;
    expect(asksOf([line]).asks).toEqual([]);
    expect(asksOf([line], true).asks).toMatchObject([{ kind: 'delete', path: path.join(ws, 'build') }]);
    // a write inside the workspace is not the sandbox's refusal, with askDeletes too
    expect(asksOf([`cannot create ${ws}/x: Permission denied`], true).asks).toEqual([]);
  });

  it("an agent CLI's own refusal goes through the same checks", () => {
    const found: Denial[] = [];
    const s = new DenialScanner(ws, ctx.writable as string[], (d) => found.push(d));
    s.scanAgent(`Write: {"file_path":"${out}/report.md","content":"x"}`);
    s.scanAgent(`Write: {"file_path":"${home}/.ssh/authorized_keys","content":"x"}`);
    const r = deriveAsks(found, ctx);
    expect(r.asks).toMatchObject([{ kind: 'write', path: out, source: 'agent' }]);
    expect(r.refused).toHaveLength(1);
  });
});

describe('permission asks: Runboard itself, the desktop, and folders around a grant (issue 28)', () => {
  const install = path.join(root, 'opt', 'runboard');
  const dist = path.join(install, 'dist');
  const xdg = path.join(root, 'xdg-run');
  const beside = path.join(root, 'code', 'other-project');
  for (const d of [dist, path.join(install, 'native', 'build', 'Release'), xdg, beside])
    mkdirSync(d, { recursive: true });
  const guarded: AskContext = {
    ...ctx,
    protected: [...installDirs(dist), ...desktopSocketDirs({ XDG_RUNTIME_DIR: xdg })],
    granted: [ws, path.join(root, 'code', 'granted')],
  };
  mkdirSync(path.join(root, 'code', 'granted'), { recursive: true });
  const write = (p: string) => `sh: 1: cannot create ${p}: Permission denied`;
  const refusedFor = (p: string) => deriveAsks(denials([write(p)]), guarded);

  it('the install folder, a folder in it and the folders around it are never asked', () => {
    for (const p of [`${dist}/supervisor.mjs`, `${install}/native/build/Release/x.node`, `${install}/x`]) {
      const r = refusedFor(p);
      expect(r.asks, p).toEqual([]);
      expect(r.refused[0]?.why, p).toMatch(/Runboard's install folder/);
    }
  });

  it("the desktop's socket folders and $XDG_RUNTIME_DIR (and what holds them) are never asked", () => {
    const paths = [`${xdg}/bus`, `${xdg}/wayland-0/x`];
    if (existsSync('/tmp/.X11-unix')) {
      paths.push('/tmp/.X11-unix/X5');
      expect(refusedFor('/tmp/x').asks).toEqual([]); // /tmp holds it (and, here, this test's install)
    }
    for (const p of paths) {
      const r = refusedFor(p);
      expect(r.asks, p).toEqual([]);
      expect(r.refused[0]?.why, p).toMatch(/desktop's sockets/);
    }
  });

  it('a folder around a granted one is not asked; a folder beside it still is', () => {
    const r = refusedFor(`${root}/code/x`);
    expect(r.asks).toEqual([]);
    expect(r.refused[0]?.why).toMatch(/holds a granted folder/);
    expect(refusedFor(`${beside}/x`).asks).toEqual([expect.objectContaining({ path: beside })]);
  });

  it('the grant step refuses them too (protectedConflict, as the host checks before a grant)', () => {
    expect(protectedConflict(path.join(install, 'native'), guarded.protected!)).toMatch(/install folder/);
    expect(protectedConflict(beside, guarded.protected!)).toBeNull();
  });
});
