import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CopyError, createCopy, discardCopy, keepCopy } from './workspace-copy.ts';

let tmp: string;
let ws: string;
let copies: string;
beforeEach(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'rb-copy-'));
  ws = path.join(tmp, 'ws');
  copies = path.join(tmp, 'state', 'copies');
  mkdirSync(path.join(ws, 'sub', 'deep'), { recursive: true });
  writeFileSync(path.join(ws, 'a.txt'), 'a\n');
  writeFileSync(path.join(ws, 'sub', 'b.txt'), 'b\n');
  writeFileSync(path.join(ws, 'sub', 'deep', 'c.txt'), 'c\n');
  writeFileSync(path.join(ws, 'run.sh'), '#!/bin/sh\n');
  chmodSync(path.join(ws, 'run.sh'), 0o755);
  symlinkSync('a.txt', path.join(ws, 'link'));
});
afterEach(() => rmSync(tmp, { recursive: true, force: true }));

const read = (...p: string[]): string => readFileSync(path.join(...p), 'utf8');

describe('a workspace copy per run', () => {
  it('copies files, folders, modes and links (as links); a keep applies what the run changed', async () => {
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20);
    expect(c).toMatchObject({ source: ws, files: 4, state: 'active' });
    expect(read(c.path, 'sub', 'deep', 'c.txt')).toBe('c\n');
    expect(lstatSync(path.join(c.path, 'run.sh')).mode & 0o777).toBe(0o755);
    expect(readlinkSync(path.join(c.path, 'link'))).toBe('a.txt');
    // a copy, not links to the workspace's files
    expect(lstatSync(path.join(c.path, 'a.txt')).ino).not.toBe(lstatSync(path.join(ws, 'a.txt')).ino);

    // the run: changes one file, adds a file in a new folder, removes a file and a folder, relinks
    writeFileSync(path.join(c.path, 'a.txt'), 'A\n');
    mkdirSync(path.join(c.path, 'new'));
    writeFileSync(path.join(c.path, 'new', 'n.txt'), 'n\n');
    unlinkSync(path.join(c.path, 'sub', 'b.txt'));
    rmSync(path.join(c.path, 'sub', 'deep'), { recursive: true });
    unlinkSync(path.join(c.path, 'link'));
    symlinkSync('new/n.txt', path.join(c.path, 'link'));
    writeFileSync(path.join(ws, 'a.txt'.replace('a', 'untouched')), 'the person’s\n'); // beside, not in

    const kept = await keepCopy(c);
    expect(kept.state).toBe('kept');
    expect(kept.applied?.sort()).toEqual(
      ['a.txt', 'link', 'new', 'new/n.txt', 'sub/b.txt', 'sub/deep', 'sub/deep/c.txt'].sort(),
    );
    expect(read(ws, 'a.txt')).toBe('A\n');
    expect(read(ws, 'new', 'n.txt')).toBe('n\n');
    expect(existsSync(path.join(ws, 'sub', 'b.txt'))).toBe(false);
    expect(existsSync(path.join(ws, 'sub', 'deep'))).toBe(false);
    expect(readlinkSync(path.join(ws, 'link'))).toBe('new/n.txt');
    expect(read(ws, 'untouched.txt')).toBe('the person’s\n');
    expect(existsSync(path.dirname(c.path))).toBe(false); // the copy is gone
  });

  it('a file the workspace changed meanwhile is a conflict: nothing applied, the copy kept', async () => {
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20);
    writeFileSync(path.join(c.path, 'a.txt'), 'the run’s\n');
    writeFileSync(path.join(c.path, 'sub', 'b.txt'), 'the run’s b\n');
    writeFileSync(path.join(c.path, 'fresh.txt'), 'the run’s new file\n');
    writeFileSync(path.join(ws, 'a.txt'), 'the person’s edit\n');
    writeFileSync(path.join(ws, 'fresh.txt'), 'the person’s new file\n');
    const err = await keepCopy(c).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CopyError);
    expect((err as Error).message).toMatch(
      /changed meanwhile.*nothing was applied: a\.txt, fresh\.txt \(the run's copy is kept at/,
    );
    expect(read(ws, 'a.txt')).toBe('the person’s edit\n');
    expect(read(ws, 'fresh.txt')).toBe('the person’s new file\n');
    expect(read(ws, 'sub', 'b.txt')).toBe('b\n'); // not applied either: all or nothing
    expect(read(c.path, 'a.txt')).toBe('the run’s\n');
    // the same change made on both sides is no conflict
    writeFileSync(path.join(ws, 'a.txt'), 'the run’s\n');
    rmSync(path.join(ws, 'fresh.txt'));
    const kept = await keepCopy(c);
    expect(read(ws, 'sub', 'b.txt')).toBe('the run’s b\n');
    expect(kept.applied).not.toContain('a.txt');
  });

  it('a conflict names its paths in path order, not in the order the walk met them', async () => {
    // the walk meets a folder's files before what its folders hold, and its files as the thread pool
    // answers their stats (8 at a time): the test above once listed "fresh.txt, a.txt" (CI, loaded)
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20);
    for (const [f, text] of [
      ['z.txt', 'new'],
      ['sub/b.txt', 'changed'],
      ['a.txt', 'changed'],
    ]) {
      writeFileSync(path.join(c.path, f!), `the run’s ${text}\n`);
      writeFileSync(path.join(ws, f!), `the person’s ${text}\n`);
    }
    const err = await keepCopy(c).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CopyError);
    expect((err as Error).message).toContain("nothing was applied: a.txt, sub/b.txt, z.txt (the run's copy");
  });

  it('a symlink put in the workspace after the copy does not lead the keep outside it', async () => {
    const outside = path.join(tmp, 'outside');
    mkdirSync(outside);
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20);
    writeFileSync(path.join(c.path, 'sub', 'deep', 'c.txt'), 'planted\n');
    // another run working in the workspace swaps a folder for a link to elsewhere
    rmSync(path.join(ws, 'sub', 'deep'), { recursive: true });
    symlinkSync(outside, path.join(ws, 'sub', 'deep'));
    await expect(keepCopy(c)).rejects.toThrow(/sub\/deep\/c\.txt/);
    expect(existsSync(path.join(outside, 'c.txt'))).toBe(false);
  });

  it('a link in the workspace is copied as a link, never as what it leads to', async () => {
    writeFileSync(path.join(tmp, 'secret'), 'key\n');
    symlinkSync(path.join(tmp, 'secret'), path.join(ws, 'to-secret'));
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20);
    expect(lstatSync(path.join(c.path, 'to-secret')).isSymbolicLink()).toBe(true);
  });

  it('over the size limit: a clear error saying what to do, nothing left behind', async () => {
    writeFileSync(path.join(ws, 'big.bin'), Buffer.alloc(3 << 20));
    await expect(createCopy(ws, path.join(copies, 'r1'), 2 << 20)).rejects.toThrow(
      /holds more than 2 MiB \(limits\.workspaceCopy\).*git init.*raise limits\.workspaceCopy/,
    );
    expect(existsSync(path.join(copies, 'r1'))).toBe(false);
  });

  it('skips the trees it is told to (the state root in the workspace); discard removes the copy', async () => {
    const state = path.join(ws, 'state');
    mkdirSync(state);
    writeFileSync(path.join(state, 'key'), 'secret\n');
    const c = await createCopy(ws, path.join(copies, 'r1'), 1 << 20, [state]);
    expect(existsSync(path.join(c.path, 'state'))).toBe(false);
    const gone = await discardCopy(c);
    expect(gone.state).toBe('discarded');
    expect(existsSync(path.dirname(c.path))).toBe(false);
    await expect(keepCopy(gone)).rejects.toThrow(/already discarded/);
  });
});
