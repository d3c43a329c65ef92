/**
 * Permission asks at the supervisor, with real runs in the jail: what the sandbox refused becomes an
 * ask in the run's record, and a later launch's `allow` extends the run by exactly a recorded ask or
 * is refused. Attacks: a run printing refusals it was never given (the state root, the supervisor's
 * socket dir), an `allow` naming an ask that is not on record or another card's run, and an asked
 * folder swapped for a link into the state root before the allow. Deletes a flow asks for
 * (`sandbox.askDeletes`): refused in the workspace, asked, allowed once in that folder only, and a
 * deletable folder that is a link to a folder outside carries no delete right out.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '@runboard/supervisor/protocol';
import { createGrant, listGrants, revokedGrants } from '@runboard/supervisor/grants';
import { DIST, Harness, REPO } from '../helpers/harness.ts';

let h: Harness;
let out: string;
const card = (name = 'card.md') => ({ path: path.join(h.root, name), title: 'test card' });

beforeAll(async () => {
  h = await Harness.start();
  out = path.join(h.root, 'out');
  mkdirSync(out);
  out = realpathSync(out);
}, 30_000);
afterAll(async () => {
  await h?.stop();
});

const launchAllowing = (command: string, allow: { runId: string; ask: string }[], cardName?: string) =>
  h.client.launch({
    card: card(cardName),
    flow: h.flow(),
    workspace: h.workspace,
    grant: h.grant,
    command,
    allow,
  });

describe('permission asks (supervisor)', () => {
  let asked: string;

  it('a write outside the grant ends needs-input with an ask for that folder', async () => {
    const rec = await h.run(`echo hi > ${out}/a.txt`);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.termination?.reason).toBe('sandbox-denial');
    expect(rec.result.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'write', path: out })]);
    asked = rec.result.runId;
  });

  it('attack: an allow naming an ask that is not on record, or another card, is refused', async () => {
    await expect(
      launchAllowing(`echo hi > ${out}/a.txt`, [{ runId: asked, ask: 'a2' }]),
    ).rejects.toMatchObject({
      code: ErrorCodes.AskRefused,
      message: expect.stringMatching(/asked nothing as a2/),
    });
    await expect(
      launchAllowing(`echo hi > ${out}/a.txt`, [{ runId: asked, ask: 'a1' }], 'other.md'),
    ).rejects.toMatchObject({
      code: ErrorCodes.AskRefused,
      message: expect.stringMatching(/not a run of this card/),
    });
  });

  it('attack: the asked folder swapped for a link into the state root is refused at the allow', async () => {
    renameSync(out, `${out}.real`);
    symlinkSync(h.paths.root, out);
    try {
      await expect(
        launchAllowing(`echo x > ${out}/keys/x`, [{ runId: asked, ask: 'a1' }]),
      ).rejects.toMatchObject({
        code: ErrorCodes.AskRefused,
        message: expect.stringMatching(/not the folder it was/),
      });
    } finally {
      unlinkSync(out);
      renameSync(`${out}.real`, out);
    }
  });

  it('allowed once, the next run writes there (recorded in its result), the one after is refused again', async () => {
    const { runId } = await launchAllowing(`echo hi > ${out}/a.txt`, [{ runId: asked, ask: 'a1' }]);
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('succeeded');
    expect(rec.result.allowed).toEqual([expect.objectContaining({ kind: 'write', path: out })]);
    expect(readFileSync(path.join(out, 'a.txt'), 'utf8')).toBe('hi\n');
    expect((await h.run(`echo again > ${out}/a.txt`)).result.status).toBe('needs-input');
  });

  it('a refused TCP connect asks for that port; allowed once, the run connects', async () => {
    let connections = 0;
    const server = net.createServer((s) => {
      connections++;
      s.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const cmd = `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>process.exit(0)).on('error',e=>{console.error(e.message);process.exit(1)})"`;
    try {
      const rec = await h.run(cmd);
      expect(rec.result.asks).toEqual([expect.objectContaining({ kind: 'connect', port })]);
      expect(connections).toBe(0);
      const { runId } = await launchAllowing(cmd, [{ runId: rec.result.runId, ask: 'a1' }]);
      expect((await h.collect(runId)).result.status).toBe('succeeded');
      expect(connections).toBe(1);
    } finally {
      server.close();
    }
  });

  it('a refused read (a folder outside what the run may read) asks sandbox.read; allowed once, the run reads it', async () => {
    mkdirSync(path.join(h.root, 'data'));
    const data = realpathSync(path.join(h.root, 'data'));
    writeFileSync(path.join(data, 'in.txt'), 'the data\n');
    const cmd = `cat ${data}/in.txt > seen.txt`;
    const rec = await h.run(cmd);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'read', path: data })]);
    const { runId } = await launchAllowing(cmd, [{ runId: rec.result.runId, ask: 'a1' }]);
    const again = await h.collect(runId);
    expect(again.result.status).toBe('succeeded');
    expect(again.result.allowed).toEqual([expect.objectContaining({ kind: 'read', path: data })]);
    expect(readFileSync(path.join(h.workspace, 'seen.txt'), 'utf8')).toBe('the data\n');
    // read only: a write there is still refused (and asked as a write)
    const write = await h.run(`echo x > ${data}/in.txt`);
    expect(write.result.asks).toEqual([expect.objectContaining({ kind: 'write', path: data })]);
    expect(readFileSync(path.join(data, 'in.txt'), 'utf8')).toBe('the data\n');
  });

  it("attack: refusals a run prints for the state root and the supervisor's socket dir are not asked", async () => {
    const rec = await h.run(
      `echo "sh: 1: cannot create ${h.paths.root}/keys/grant.key: Permission denied" >&2; ` +
        `echo "sh: 1: cannot create ${h.paths.runtimeDir}/x: Permission denied" >&2; exit 1`,
    );
    expect(rec.result.status).toBe('failed');
    expect(rec.result.asks).toBeUndefined();
    const refused = rec.events.filter((e) => e.data?.kind === 'ask-refused').map((e) => e.message);
    expect(refused).toHaveLength(2);
    for (const m of refused) expect(m).toMatch(/Runboard's own state/);
  });

  it("attack: Runboard's install folder, the desktop's sockets, /tmp and a grant's parent are never asked", async () => {
    const native = path.join(REPO, 'native', 'build', 'Release');
    // a workspace whose parent holds nothing of Runboard's: that parent is not offered either
    const outer = path.join(h.root, 'outer');
    const inner = path.join(outer, 'inner');
    mkdirSync(inner, { recursive: true });
    const grant = createGrant(h.paths, inner);
    const { runId } = await h.client.launch({
      card: card(),
      flow: h.flow(),
      workspace: inner,
      grant,
      // real writes the sandbox refuses (the supervisor's bundle, the jail's folder), then refusals
      // the run prints for the X socket folder, /tmp and the workspace's parent
      command:
        `echo x > ${DIST}/pwned.mjs; echo x > ${native}/pwned; ` +
        `echo "sh: 1: cannot create /tmp/.X11-unix/X77: Permission denied" >&2; ` +
        `echo "sh: 1: cannot create /tmp/pwned: Permission denied" >&2; ` +
        `echo "sh: 1: cannot create ${outer}/pwned: Permission denied" >&2; exit 1`,
    });
    const rec = await h.collect(runId);
    expect(existsSync(path.join(DIST, 'pwned.mjs'))).toBe(false);
    expect(rec.result.status).toBe('failed');
    expect(rec.result.asks).toBeUndefined();
    const refused = rec.events.filter((e) => e.data?.kind === 'ask-refused').map((e) => e.message);
    expect(refused).toEqual([
      expect.stringMatching(/Runboard's install folder/),
      expect.stringMatching(/Runboard's install folder/),
      expect.stringMatching(/desktop's sockets/),
      // /tmp holds the desktop's sockets, and Runboard's install folder too for a checkout under /tmp
      expect.stringMatching(/desktop's sockets|Runboard's install folder/),
      expect.stringMatching(/holds a granted folder/),
    ]);
  });

  it('askDeletes: a delete in the workspace is refused and asked; allowed once, only in that folder', async () => {
    const build = path.join(h.workspace, 'build');
    mkdirSync(path.join(build, 'sub'), { recursive: true });
    for (const f of ['a.o', 'b.o', 'sub/c.o']) writeFileSync(path.join(build, f), 'x');
    writeFileSync(path.join(h.workspace, 'keep.txt'), 'keep');
    const flow = { sandbox: { askDeletes: true } };
    const rec = await h.run('rm build/a.o', flow);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.asks).toEqual([expect.objectContaining({ kind: 'delete', path: realpathSync(build) })]);
    expect(existsSync(path.join(build, 'a.o'))).toBe(true);
    // writing is not deleting: a new file is still fine
    expect((await h.run('echo new > build/new.txt', flow)).result.status).toBe('succeeded');

    const { runId } = await h.client.launch({
      card: card(),
      flow: h.flow(flow),
      workspace: h.workspace,
      grant: h.grant,
      command: 'rm build/a.o build/sub/c.o; rm keep.txt',
      allow: [{ runId: rec.result.runId, ask: 'a1' }],
    });
    await h.collect(runId);
    expect(existsSync(path.join(build, 'a.o'))).toBe(false);
    expect(existsSync(path.join(build, 'sub', 'c.o'))).toBe(false);
    expect(existsSync(path.join(h.workspace, 'keep.txt'))).toBe(true); // outside the allowed folder
  });

  // Without namespaces there is no read-only mount under Landlock: its rules alone must hold.
  it('attack: a deletable folder that is a link to a folder outside carries no delete right there', async () => {
    const plain = await Harness.start({ env: { RUNBOARD_NAMESPACES: 'off' } });
    try {
      const victim = path.join(plain.root, 'victim');
      mkdirSync(victim);
      writeFileSync(path.join(victim, 'precious.txt'), 'mine');
      symlinkSync(victim, path.join(plain.workspace, 'cache'));
      const rec = await plain.run('rm cache/precious.txt', {
        sandbox: { askDeletes: true, deletable: ['cache'] },
      });
      expect(rec.result.status).not.toBe('succeeded');
      expect(readFileSync(path.join(victim, 'precious.txt'), 'utf8')).toBe('mine');
    } finally {
      await plain.stop();
    }
  });
});

describe('grants made before decision 49 (issue 28)', () => {
  it("a grant of Runboard's install folder is revoked at the supervisor's start and refused at launch", async () => {
    const g = await Harness.start();
    try {
      const stale = createGrant(g.paths, DIST); // as `runboard grant` allowed before the install was refused
      const exited = new Promise((r) => g.supervisor.once('exit', r));
      g.client.close();
      g.supervisor.kill('SIGTERM');
      await exited;
      await g.startSupervisor();
      expect(listGrants(g.paths).map((x) => x.id)).toEqual([g.grant.id]);
      expect(revokedGrants(g.paths)).toEqual([
        expect.objectContaining({
          id: stale.id,
          path: realpathSync(DIST),
          why: expect.stringMatching(/install folder/),
        }),
      ]);
      await expect(
        g.client.launch({
          card: { path: path.join(g.root, 'c.md'), title: 'c' },
          flow: g.flow(),
          workspace: DIST,
          grant: stale,
          command: 'echo x > owned.js',
        }),
      ).rejects.toMatchObject({ message: expect.stringMatching(/grant refused \(revoked\)/) });
      expect((await g.run('echo ok')).result.status).toBe('succeeded'); // the other grant still works
    } finally {
      await g.stop();
    }
  }, 60_000);
});
