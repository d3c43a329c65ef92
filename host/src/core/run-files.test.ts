import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runLogDir, statePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '../shared/board-types.ts';
import { RunFiles } from './run-files.ts';

const RUN = '20261123-053426-39bc65';
const SECRET = 'the person’s private key';

let dir: string;
let files: RunFiles;
let secret: string;
/** Folders made by a test, removed after it. */
const made: string[] = [];
const tempDir = (prefix: string): string => {
  const d = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(d);
  return d;
};
afterEach(() => {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
});
beforeEach(() => {
  const root = tempDir('rb-run-files-');
  const paths = statePaths({ RUNBOARD_HOME: path.join(root, 'home') });
  dir = runLogDir(paths, RUN);
  mkdirSync(path.join(dir, 'artifacts'), { recursive: true });
  secret = path.join(root, 'id_ed25519');
  writeFileSync(secret, SECRET);
  files = new RunFiles(paths, async () => ({ status: 'running' }) as RunResult);
});

/** The names and texts in an export (.tar.gz), read with the system's tar. */
async function exported(): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  await files.exporter(RUN)(
    new Writable({
      write(c: Buffer, _e, cb) {
        chunks.push(c);
        cb();
      },
    }),
  );
  const out = tempDir('rb-export-');
  const tarFile = path.join(out, 'run.tar');
  writeFileSync(tarFile, gunzipSync(Buffer.concat(chunks)));
  const names = execFileSync('tar', ['-tf', tarFile], { encoding: 'utf8' }).trim().split('\n');
  return Object.fromEntries(
    names.map((n) => [n, execFileSync('tar', ['-xOf', tarFile, n], { encoding: 'utf8' })]),
  );
}

describe("a run's files, which the run itself wrote (artifacts/)", () => {
  it('serves the live frame only when it is a regular file, never through a link the run put there', async () => {
    symlinkSync(secret, path.join(dir, 'artifacts', 'live.jpg'));
    await expect(files.liveFrame(RUN)).rejects.toThrow(/no live frame/);
    writeFileSync(path.join(dir, 'artifacts', 'frame.jpg'), 'JPEG');
    renameSync(path.join(dir, 'artifacts', 'frame.jpg'), path.join(dir, 'artifacts', 'live.jpg'));
    expect((await files.liveFrame(RUN)).toString()).toBe('JPEG');
  });

  it('serves a screenshot by name only when it is one, and as a regular file', async () => {
    writeFileSync(path.join(dir, 'artifacts', 'step-1.png'), 'PNG');
    symlinkSync(secret, path.join(dir, 'artifacts', 'step-2.png'));
    expect((await files.list(RUN)).screenshots).toEqual(['artifacts/step-1.png']);
    expect((await files.screenshot(RUN, 'artifacts/step-1.png')).toString()).toBe('PNG');
    await expect(files.screenshot(RUN, 'artifacts/step-2.png')).rejects.toThrow(/no screenshot/);
  });

  it('exports the run dir without what the run linked to outside it', async () => {
    writeFileSync(path.join(dir, 'stdout.log'), 'out\n');
    writeFileSync(path.join(dir, 'artifacts', 'notes.txt'), 'mine');
    symlinkSync(secret, path.join(dir, 'artifacts', 'leak.txt'));
    symlinkSync(path.dirname(secret), path.join(dir, 'artifacts', 'home'));
    const tar = await exported();
    expect(tar[`${RUN}/stdout.log`]).toBe('out\n');
    expect(tar[`${RUN}/artifacts/notes.txt`]).toBe('mine');
    expect(Object.keys(tar).filter((n) => /leak|home/.test(n))).toEqual([]);
    expect(Object.values(tar).join('')).not.toContain(SECRET);
  });
});
