import { describe, expect, it } from 'vitest';
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
