/**
 * Asks that wait at the tool call (issue 28), from inside real runs: a tool asks the worker's ask socket
 * for a path outside the sandbox before the act, the run waits, and the person's answer reaches it.
 * Deny: the tool gets the denial in words and the run goes on (its own choice to continue). No answer
 * within the flow's askTimeoutMs: a denial. A never-offered path (Runboard's state, ~/.ssh): denied at
 * once, no ask. Allow: the same run gains the folder (its jail mounts it below a grant slot) and goes
 * on; a sibling, the parent and a link planted to get out stay refused. Where the run cannot gain it
 * (the folder's place in the run is the run's own /tmp), the fallback: the run ends needs-input with
 * the ask, and the next run (its `allow`) writes there.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, waitUntil } from '../helpers/harness.ts';

let h: Harness;
let out: string;

let elsewhere: string;

beforeAll(async () => {
  // a command run gets a Node worker (and so the ask socket), as agent runs do
  h = await Harness.start({ env: { RUNBOARD_COMMAND_WORKER: 'node' } });
  mkdirSync(path.join(h.root, 'out'));
  out = realpathSync(path.join(h.root, 'out'));
  for (const d of ['sibling', 'data', 'out2']) mkdirSync(path.join(h.root, d));
  writeFileSync(path.join(h.root, 'sibling', 'secret.txt'), 'sibling secret\n');
  writeFileSync(path.join(h.root, 'parent.txt'), 'parent file\n');
  writeFileSync(path.join(h.root, 'data', 'in.txt'), 'data to read\n');
  // a folder right in /tmp: in the run, its place is the run's own /tmp (which the run writes)
  elsewhere = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'rb-live-')));
  // asks (kind, path) on the ask socket and prints the answer
  writeFileSync(
    path.join(h.workspace, 'ask.cjs'),
    `const [kind, p] = process.argv.slice(2);
const s = require('net').connect(process.env.RUNBOARD_ASK_SOCKET);
s.write(JSON.stringify({ kind, path: p, tool: 'Write' }) + '\\n');
s.on('data', (d) => { const a = JSON.parse(d); console.log('ANSWER', a.decision, a.message, a.at ?? ''); s.end(); });
`,
  );
}, 30_000);
afterAll(async () => {
  rmSync(elsewhere, { recursive: true, force: true });
  await h?.stop();
});

/** A command that asks (kind, path) on the ask socket, prints the answer, then writes go-on.txt. */
const asking = (kind: string, p: string): string =>
  `node -e "const s=require('net').connect(process.env.RUNBOARD_ASK_SOCKET);` +
  `s.write(JSON.stringify({kind:'${kind}',path:'${p}',tool:'Write'})+'\\n');` +
  `s.on('data',d=>{const a=JSON.parse(d);console.log('ANSWER',a.decision,a.message);s.end()})" ` +
  `&& echo went-on > go-on.txt`;

const events = (logDir: string): { data?: Record<string, unknown>; message?: string }[] =>
  existsSync(path.join(logDir, 'events.jsonl'))
    ? readFileSync(path.join(logDir, 'events.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { data?: Record<string, unknown>; message?: string })
    : [];
const waitingAsk = (logDir: string) =>
  waitUntil('the run to wait at its ask', () =>
    events(logDir).some((e) => e.data?.kind === 'ask' && e.data.live === true),
  );

describe('asks that wait at the tool call', () => {
  it('Deny: the tool gets the denial and the run goes on; the card sat with the exact folder', async () => {
    const { runId, logDir } = await h.launch(asking('write', `${out}/report.md`));
    await waitingAsk(logDir);
    const live = await h.client.getRun(runId);
    expect(live.run.status).toBe('running');
    expect(live.run.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'write', path: out })]);
    await expect(h.client.answerAsk({ runId, ask: 'a7', choice: 'deny' })).rejects.toMatchObject({
      message: expect.stringMatching(/does not wait for an answer to a7/),
    });
    await h.client.answerAsk({ runId, ask: 'a1', choice: 'deny' });
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('succeeded');
    expect(rec.stdout).toContain(`ANSWER deny Runboard: the person denied write ${out}. Go on without it.`);
    expect(readFileSync(path.join(h.workspace, 'go-on.txt'), 'utf8')).toBe('went-on\n');
    expect(existsSync(path.join(out, 'report.md'))).toBe(false);
  }, 60_000);

  it('no answer within the flow’s askTimeoutMs is a denial', async () => {
    const rec = await h.run(asking('read', out), { askTimeoutMs: 300 });
    expect(rec.result.status, rec.stdout + rec.stderr + JSON.stringify(rec.result.termination)).toBe(
      'succeeded',
    );
    expect(rec.stdout).toMatch(/ANSWER deny Runboard: no answer from the person within \d+ s: read /);
    expect(rec.events.some((e) => e.data?.kind === 'ask-answer' && e.data.choice === 'timeout')).toBe(true);
  }, 60_000);

  it("attack: never-offered paths (Runboard's state, ~/.ssh, /) are denied at once, without an ask", async () => {
    for (const p of [path.join(h.paths.root, 'keys', 'x'), path.join(os.homedir(), '.ssh', 'id'), '/x']) {
      const rec = await h.run(asking('write', p));
      expect(rec.result.status).toBe('succeeded');
      expect(rec.stdout).toContain('ANSWER deny Runboard refused this without asking the person');
      expect(rec.result.asks).toBeUndefined();
      expect(rec.events.some((e) => e.data?.kind === 'ask')).toBe(false);
    }
  }, 60_000);

  it('Allow: the same run gains the folder and writes there; its sibling, parent and a planted link stay refused', async () => {
    const sibling = path.join(h.root, 'sibling');
    const { runId, logDir } = await h.launch(
      [
        `node ask.cjs write ${out}/allowed.md`,
        `(echo same-run > ${out}/allowed.md && echo WROTE)`,
        `cat ${out}/allowed.md`,
        `(cat ${sibling}/secret.txt || echo SIBLING-REFUSED)`,
        `(cat ${h.root}/parent.txt || echo PARENT-REFUSED)`,
        `(ls ${sibling} || echo SIBLING-LIST-REFUSED)`,
        // a link in the workspace to the folder's parent, as the run can see it
        `ln -s ${out}/.. esc`,
        `(cat esc/sibling/secret.txt || echo LINK-REFUSED)`,
        `(cat esc/parent.txt || echo LINK-PARENT-REFUSED)`,
        `(touch esc/planted || echo PLANT-REFUSED)`,
        `(touch ${h.root}/planted || echo PARENT-WRITE-REFUSED)`,
        'echo went-on > go-on-allow.txt',
      ].join('; '),
    );
    await waitingAsk(logDir);
    await h.client.answerAsk({ runId, ask: 'a1', choice: 'allow' });
    const rec = await h.collect(runId);
    expect(rec.result.status, rec.stdout + rec.stderr).toBe('succeeded');
    expect(rec.stdout).toContain(
      `ANSWER allow Runboard: the person allowed write ${out}; this run has it now`,
    );
    expect(rec.stdout).toContain('WROTE\nsame-run\n');
    expect(readFileSync(path.join(out, 'allowed.md'), 'utf8')).toBe('same-run\n');
    for (const refused of [
      'SIBLING-REFUSED',
      'PARENT-REFUSED',
      'SIBLING-LIST-REFUSED',
      'LINK-REFUSED',
      'LINK-PARENT-REFUSED',
      'PLANT-REFUSED',
      'PARENT-WRITE-REFUSED',
    ])
      expect(rec.stdout, rec.stdout + rec.stderr).toContain(refused);
    expect(existsSync(path.join(h.root, 'planted'))).toBe(false);
    expect(readFileSync(path.join(h.workspace, 'go-on-allow.txt'), 'utf8')).toBe('went-on\n');
    expect(rec.events.some((e) => e.data?.kind === 'ask-granted' && e.data.path === out)).toBe(true);
    expect(rec.result.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'write', path: out })]);
  }, 60_000);

  it('Allow of a read: the same run reads the folder and cannot write it', async () => {
    const data = realpathSync(path.join(h.root, 'data'));
    const { runId, logDir } = await h.launch(
      [
        `node ask.cjs read ${data}`,
        `cat ${data}/in.txt`,
        `(echo x > ${data}/new.txt || echo WRITE-REFUSED)`,
        `(node ask.cjs read ${data}/in.txt)`,
      ].join('; '),
    );
    await waitingAsk(logDir);
    await h.client.answerAsk({ runId, ask: 'a1', choice: 'allow' });
    const rec = await h.collect(runId);
    expect(rec.result.status, rec.stdout + rec.stderr).toBe('succeeded');
    expect(rec.stdout).toContain(
      `ANSWER allow Runboard: the person allowed read ${data}; this run has it now`,
    );
    expect(rec.stdout).toContain('data to read\n');
    expect(rec.stdout).toContain('WRITE-REFUSED');
    expect(existsSync(path.join(data, 'new.txt'))).toBe(false);
    // a second ask inside the folder it has now: allowed at once, no new ask
    expect(rec.stdout).toMatch(/ANSWER allow Runboard: \S+in\.txt is in /);
    expect(rec.result.asks).toHaveLength(1);
  }, 60_000);

  it('Allow where the run cannot gain the folder (its place is the run’s own /tmp, a link planted there): it ends needs-input and the next run writes there', async () => {
    // attack: the run first plants a link by that folder's name in its own /tmp, to its workspace
    const { runId, logDir } = await h.launch(
      `ln -s ${h.workspace} ${elsewhere} && ${asking('write', `${elsewhere}/allowed.md`)}`,
    );
    await waitingAsk(logDir);
    await h.client.answerAsk({ runId, ask: 'a1', choice: 'allow' });
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.termination?.detail).toMatch(/the person allowed write .* at the tool call/);
    expect(rec.result.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'write', path: elsewhere })]);
    expect(rec.events.some((e) => e.data?.kind === 'ask-not-granted')).toBe(true);
    expect(existsSync(path.join(h.workspace, 'allowed.md'))).toBe(false);
    const next = await h.client.launch({
      card: { path: path.join(h.root, 'card.md'), title: 'test card' },
      flow: h.flow(),
      workspace: h.workspace,
      grant: h.grant,
      command: `echo done > ${elsewhere}/allowed.md`,
      allow: [{ runId, ask: 'a1' }],
    });
    expect((await h.collect(next.runId)).result.status).toBe('succeeded');
    expect(readFileSync(path.join(elsewhere, 'allowed.md'), 'utf8')).toBe('done\n');
  }, 60_000);

  it('a fifth ask is refused at once (at most 4 per run)', async () => {
    const asks = [1, 2, 3, 4, 5].map((n) => `node ask.cjs write ${h.root}/many${n}/x`);
    for (const n of [1, 2, 3, 4, 5]) mkdirSync(path.join(h.root, `many${n}`), { recursive: true });
    const { runId, logDir } = await h.launch(asks.join('; '));
    for (const n of [1, 2, 3, 4]) {
      await waitUntil(`ask a${n}`, () =>
        events(logDir).some(
          (e) =>
            e.data?.kind === 'ask' && e.data.live === true && JSON.stringify(e.data.asks).includes(`"a${n}"`),
        ),
      );
      await h.client.answerAsk({ runId, ask: `a${n}`, choice: 'deny' });
    }
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('succeeded');
    expect(rec.stdout).toContain(
      'ANSWER deny Runboard: a run asks at most 4 permissions; this one is denied.',
    );
    expect(rec.result.asks).toHaveLength(4);
  }, 60_000);
});
