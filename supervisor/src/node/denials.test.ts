import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DenialScanner, type Denial } from './denials.ts';

function scan(lines: string[], writable = ['/ws', '/scratch/r1']): Denial[] {
  const found: Denial[] = [];
  const s = new DenialScanner('/ws', writable, (d) => found.push(d));
  for (const l of lines) s.scan(Buffer.from(l));
  return found;
}

describe('DenialScanner', () => {
  it('names the path a tool was refused, outside the writable set', () => {
    expect(scan(['/bin/sh: 1: cannot create /home/u/x: Permission denied\n'])).toEqual([
      { path: '/home/u/x', line: '/bin/sh: 1: cannot create /home/u/x: Permission denied' },
    ]);
    expect(scan(["touch: cannot touch '/etc/y': Permission denied\n"])[0]?.path).toBe('/etc/y');
    expect(scan(["Error: EACCES: permission denied, open '/opt/z'\n"])[0]?.path).toBe('/opt/z');
  });

  it('normalises the path before deciding it is outside', () => {
    expect(
      scan(["touch: cannot touch '/scratch/r1/home/../../../etc/x': Permission denied\n"])[0]?.path,
    ).toBe('/etc/x');
  });

  it('resolves a relative path against the working directory', () => {
    expect(scan(['/bin/sh: 1: cannot create ../outside.txt: Permission denied\n'])[0]?.path).toBe(
      '/outside.txt',
    );
  });

  it('ignores refusals inside the writable set and lines without a refusal', () => {
    expect(scan(['cannot create /ws/ro.txt: Permission denied\n', 'all good /etc\n'])).toEqual([]);
  });

  it('joins a line split across chunks', () => {
    expect(scan(['mkdir: cannot create directory ‘/va', 'r/x’: Permission denied\n'])[0]?.line).toContain(
      '/var/x',
    );
  });
});

describe('a path the allow-list hides', () => {
  it('counts "no such file" only for a folder that exists here but that the run does not see', () => {
    const found: Denial[] = [];
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-den-'));
    mkdirSync(path.join(root, 'ws'));
    mkdirSync(path.join(root, 'out'));
    const s = new DenialScanner(
      path.join(root, 'ws'),
      [path.join(root, 'ws')],
      (d) => found.push(d),
      false,
      () => [path.join(root, 'ws'), '/usr'],
    );
    s.scan(Buffer.from(`sh: 1: cannot create ${root}/out/a.txt: Directory nonexistent\n`));
    s.scan(Buffer.from(`cat: ${root}/missing.txt: No such file or directory\n`));
    s.scan(Buffer.from('cat: /nonexistent: No such file or directory\nls: x: No such file or directory\n'));
    rmSync(root, { recursive: true });
    expect(found.map((d) => d.path)).toEqual([
      path.join(realpathSync(os.tmpdir()), path.basename(root), 'out', 'a.txt'),
    ]);
  });
});
