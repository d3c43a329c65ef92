// Coding-agent runs under stress: parallel runs on one repository, a stalled model, a cancel in the
// middle of a command, and a missing key. Real codex CLI, real supervisor; only the model is scripted.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeProviderKey } from '../../supervisor/src/common/secrets.ts';
import { pidAlive, processesMentioning, waitUntil } from '../helpers/harness.ts';
import { agentEvents, AgentHarness, git } from './agent-harness.ts';

let a: AgentHarness;
beforeAll(async () => {
  a = await AgentHarness.start();
});
afterAll(async () => {
  await a.stop();
});

const ok = (summary: string): string => `RUNBOARD_RESULT: ${JSON.stringify({ status: 'SUCCESS', summary })}`;

describe('coding-agent runs', () => {
  it('two implement runs on one repository in parallel each get their own worktree and diff', async () => {
    const episode = (tag: string, line: string, other: string) => ({
      name: tag,
      match: `EPISODE:${tag}`,
      turns: [
        {
          after: other, // answered only once the other run asked too: both are in flight at once
          toolCalls: [{ name: 'exec_command', arguments: { cmd: `printf '${line}\\n' >> app.txt` } }],
        },
        { text: ok(`added ${line}`) },
      ],
    });
    a.episodes([episode('par-a', 'alpha', 'par-b'), episode('par-b', 'beta', 'par-a')]);
    const before = git(a.workspace, 'rev-parse', 'HEAD');
    const [ra, rb] = await Promise.all([
      a.run(a.card('A', 'EPISODE:par-a'), a.flow('codex')),
      a.run(a.card('B', 'EPISODE:par-b'), a.flow('codex')),
    ]);
    for (const [rec, line] of [
      [ra, 'alpha'],
      [rb, 'beta'],
    ] as const) {
      expect(rec.result.status, rec.result.summary).toBe('succeeded');
      const wt = rec.result.worktree!;
      expect(wt.diff?.files).toEqual([{ path: 'app.txt', added: 1, removed: 0 }]);
      expect(git(a.workspace, 'show', `${wt.branch}:app.txt`)).toBe(`one\ntwo\n${line}`);
    }
    expect(ra.result.worktree!.path).not.toBe(rb.result.worktree!.path);
    // They really overlapped: each run's first turn was answered only after the other run had asked.
    // The user's checkout saw none of it.
    expect(readFileSync(path.join(a.workspace, 'app.txt'), 'utf8')).toBe('one\ntwo\n');
    expect(git(a.workspace, 'rev-parse', 'HEAD')).toBe(before);
    expect(git(a.workspace, 'status', '--porcelain')).toBe('');
    await a.discard(ra.result.runId);
    await a.discard(rb.result.runId);
    expect(git(a.workspace, 'worktree', 'list').split('\n')).toHaveLength(1);
  });

  it('a model that stops answering is killed by the stall timeout and reported as stalled', async () => {
    a.episodes([{ name: 'stall', match: 'EPISODE:stall', turns: [{ hang: true }] }]);
    const started = Date.now();
    const rec = await a.run(a.card('Stall', 'EPISODE:stall'), a.flow('codex', { stallTimeoutMs: 2500 }));
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.reason).toBe('stalled');
    expect(rec.result.termination?.detail).toContain('2500 ms');
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(processesMentioning(rec.result.runId)).toEqual([]);
  });

  it.each([
    ['the jail alone', {}],
    ["codex's own bubblewrap sandbox inside the jail", { sandbox: { agentSandbox: true } }],
  ])('cancel in the middle of a command stops the whole process tree (%s)', async (_, over) => {
    const marker = `rb-cancel-${Date.now()}`;
    a.episodes([
      {
        name: 'cancel',
        match: 'EPISODE:cancel',
        turns: [
          {
            toolCalls: [
              { name: 'exec_command', arguments: { cmd: `sleep 300; echo ${marker}`, yield_time_ms: 30000 } },
            ],
          },
          { text: ok('slept') },
        ],
      },
    ]);
    const { runId } = await a.launch(a.card('Cancel', 'EPISODE:cancel'), a.flow('codex', over));
    const ended = a.h.collect(runId);
    // The command is running: its shell is alive, inside the run.
    await waitUntil('the agent command to run', () => processesMentioning(marker).length > 0, 30_000);
    const tree = processesMentioning(runId);
    expect(tree.length).toBeGreaterThanOrEqual(3); // worker, codex, shell (at least)
    await a.h.client.cancel(runId);
    const rec = await ended;
    expect(rec.result.status).toBe('cancelled');
    expect(rec.result.termination?.reason).toBe('cancelled');
    await waitUntil('every process of the run to be gone', () => tree.every((p) => !pidAlive(p)), 5000);
    expect(processesMentioning(marker)).toEqual([]);
    expect(processesMentioning(runId)).toEqual([]);
    // What the agent had done so far stays inspectable: its worktree is recorded (nothing changed).
    expect(rec.result.worktree?.diff?.files).toEqual([]);
    await a.discard(runId);
  });

  it('a missing key fails the run at once, with where to put the key', async () => {
    writeProviderKey(a.h.paths, 'openai', null);
    try {
      const requestsBefore = a.model.requests.length;
      const rec = await a.run(a.card('No key', 'EPISODE:none'), a.flow('codex'));
      expect(rec.result.status).toBe('failed');
      expect(rec.result.termination?.reason).toBe('missing-key');
      expect(rec.result.summary).toContain('no API key for provider "openai"');
      expect(rec.result.summary).toContain(path.join(a.h.paths.keysDir, 'providers', 'openai.key'));
      expect(rec.result.summary).toContain('runboard key set openai'); // what to do, not just what is wrong
      expect(rec.result.durationMs).toBeLessThan(1000);
      expect(rec.result.pid).toBeNull(); // nothing was started
      expect(a.model.requests.length).toBe(requestsBefore);
      expect(agentEvents(rec)).toEqual([]);
    } finally {
      writeProviderKey(a.h.paths, 'openai', 'sk-test-openai-0123456789');
    }
  });
});
