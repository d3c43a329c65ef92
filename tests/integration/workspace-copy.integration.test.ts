/**
 * Runs in a copy of their workspace (flow `copyWorkspace`: the attempts of a card whose workspace is not
 * a git repository, issue 33). From inside real runs: an attempt reaches neither the workspace nor a
 * sibling attempt's copy, by path or by a link it plants; keep applies the winner's changes back, and a
 * file the person changed meanwhile is a conflict that keeps both their file and the run's copy.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Harness } from '../helpers/harness.ts';

let h: Harness;
const COPY = { copyWorkspace: { maxBytes: 64 << 20 } };

beforeAll(async () => {
  h = await Harness.start();
  writeFileSync(path.join(h.workspace, 'notes.txt'), 'original\n');
}, 30_000);
afterAll(async () => {
  await h?.stop();
});

const read = (p: string): string => readFileSync(p, 'utf8');

describe('an attempt in a copy of its workspace', () => {
  it('cannot reach the workspace or a sibling attempt’s copy', async () => {
    const first = await h.run(['sh', '-ec', 'echo first > mine.txt; pwd'], COPY);
    expect(first.result.status).toBe('succeeded');
    const sibling = first.result.copy!.path;
    expect(first.stdout.trim()).toBe(sibling);
    expect(read(path.join(sibling, 'mine.txt'))).toBe('first\n');
    expect(existsSync(path.join(h.workspace, 'mine.txt'))).toBe(false);

    // the second attempt tries the workspace and the sibling's copy by path, and by links it plants
    const ws = h.workspace;
    const attack = await h.run(
      [
        'sh',
        '-c',
        [
          `cat ${ws}/notes.txt && echo READ-WORKSPACE`,
          `echo x > ${ws}/planted && echo WROTE-WORKSPACE`,
          `cat ${sibling}/mine.txt && echo READ-SIBLING`,
          `echo x > ${sibling}/planted && echo WROTE-SIBLING`,
          `ls ${path.dirname(path.dirname(sibling))}`, // at most its own copy's folder
          `ln -s ${sibling} to-sibling; cat to-sibling/mine.txt && echo READ-SIBLING-LINK`,
          `ln -s ${ws} to-ws; echo x > to-ws/planted2 && echo WROTE-WORKSPACE-LINK`,
          'echo ours > result.txt; pwd',
        ].join('\n'),
      ],
      COPY,
    );
    expect(attack.result.status).toBe('succeeded');
    expect(attack.stdout).not.toMatch(/READ-|WROTE-/);
    expect(attack.stdout).not.toContain(first.result.runId);
    expect(attack.stdout).toContain(attack.result.copy!.path);
    expect(attack.result.copy!.path).not.toBe(sibling);
    expect(existsSync(path.join(ws, 'planted'))).toBe(false);
    expect(existsSync(path.join(ws, 'planted2'))).toBe(false);
    expect(existsSync(path.join(ws, 'result.txt'))).toBe(false);
    expect(existsSync(path.join(sibling, 'planted'))).toBe(false);
    expect(read(path.join(ws, 'notes.txt'))).toBe('original\n');

    // the winner's changes go back to the workspace; the other copy goes
    const { run: kept } = await h.client.keepWorktree(attack.result.runId);
    expect(kept.copy).toMatchObject({ state: 'kept' });
    expect(kept.copy!.applied).toEqual(expect.arrayContaining(['result.txt', 'to-sibling', 'to-ws']));
    expect(read(path.join(ws, 'result.txt'))).toBe('ours\n');
    const { run: gone } = await h.client.discardWorktree(first.result.runId);
    expect(gone.copy?.state).toBe('discarded');
    expect(existsSync(sibling)).toBe(false);
    expect(existsSync(path.join(ws, 'mine.txt'))).toBe(false);
  });

  it('keep: a file the person changed meanwhile is a conflict, shown and never overwritten', async () => {
    const rec = await h.run(['sh', '-ec', 'echo run > notes.txt; echo new > added.txt'], COPY);
    expect(rec.result.status).toBe('succeeded');
    writeFileSync(path.join(h.workspace, 'notes.txt'), 'the person’s edit\n');
    await expect(h.client.keepWorktree(rec.result.runId)).rejects.toThrow(
      /changed meanwhile.*nothing was applied: notes\.txt \(the run's copy is kept at/,
    );
    expect(read(path.join(h.workspace, 'notes.txt'))).toBe('the person’s edit\n');
    expect(existsSync(path.join(h.workspace, 'added.txt'))).toBe(false);
    expect(read(path.join(rec.result.copy!.path, 'notes.txt'))).toBe('run\n');
    await h.client.discardWorktree(rec.result.runId);
    expect(existsSync(rec.result.copy!.path)).toBe(false);
  });

  it('a workspace over the size limit: the run fails before it starts, saying what to do', async () => {
    writeFileSync(path.join(h.workspace, 'big.bin'), Buffer.alloc(2 << 20));
    const rec = await h.run(['sh', '-ec', 'true'], { copyWorkspace: { maxBytes: 1 << 20 } });
    expect(rec.result.status).toBe('failed');
    expect(rec.result.termination?.detail).toMatch(
      /could not copy the run's workspace: .*more than 1 MiB \(limits\.workspaceCopy\).*git init/,
    );
  });
});
