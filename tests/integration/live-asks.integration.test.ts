/**
 * Asks that wait at the tool call (issue 28), from inside real runs: a tool asks the worker's ask socket
 * for a path outside the sandbox before the act, the run waits, and the person's answer reaches it.
 * Deny: the tool gets the denial in words and the run goes on (its own choice to continue). No answer
 * within the flow's askTimeoutMs: a denial. A never-offered path (Runboard's state, ~/.ssh): denied at
 * once, no ask. Allow: the live jail cannot gain the folder (Landlock only narrows), so the tool is
 * told, the run ends needs-input with the ask, and the next run (its `allow`) writes there.
 */
import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness, waitUntil } from '../helpers/harness.ts';

let h: Harness;
let out: string;

beforeAll(async () => {
  // a command run gets a Node worker (and so the ask socket), as agent runs do
  h = await Harness.start({ env: { RUNBOARD_COMMAND_WORKER: 'node' } });
  mkdirSync(path.join(h.root, 'out'));
  out = realpathSync(path.join(h.root, 'out'));
}, 30_000);
afterAll(async () => {
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

  it('Allow: the run ends needs-input with the ask; the next run (allow once) writes there', async () => {
    const { runId, logDir } = await h.launch(asking('write', `${out}/allowed.md`));
    await waitingAsk(logDir);
    await h.client.answerAsk({ runId, ask: 'a1', choice: 'allow' });
    const rec = await h.collect(runId);
    expect(rec.result.status).toBe('needs-input');
    expect(rec.result.termination?.detail).toMatch(/the person allowed write .* at the tool call/);
    expect(rec.result.asks).toEqual([expect.objectContaining({ id: 'a1', kind: 'write', path: out })]);
    const next = await h.client.launch({
      card: { path: path.join(h.root, 'card.md'), title: 'test card' },
      flow: h.flow(),
      workspace: h.workspace,
      grant: h.grant,
      command: `echo done > ${out}/allowed.md`,
      allow: [{ runId, ask: 'a1' }],
    });
    expect((await h.collect(next.runId)).result.status).toBe('succeeded');
    expect(readFileSync(path.join(out, 'allowed.md'), 'utf8')).toBe('done\n');
  }, 60_000);
});
