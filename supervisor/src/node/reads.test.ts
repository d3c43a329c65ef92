import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { outermost, rootOnlyEntries } from './reads.ts';

describe('outermost', () => {
  it('keeps the trees that lie in no other, once each, in their order', () => {
    expect(
      outermost(['/usr', '/usr/bin', '/etc', '/work/app', '/work/app/dist', '/usr', '/work/application']),
    ).toEqual(['/usr', '/etc', '/work/app', '/work/application']);
  });

  it('keeps a tree whose name only starts like another', () => {
    expect(outermost(['/usr/lib64', '/usr/lib'])).toEqual(['/usr/lib64', '/usr/lib']);
  });

  it('takes / as holding everything', () => {
    expect(outermost(['/opt', '/'])).toEqual(['/']);
  });
});

describe('rootOnlyEntries', () => {
  it('lists what others may not read, a folder once, and follows no link', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-etc-'));
    try {
      writeFileSync(path.join(dir, 'passwd'), 'x', { mode: 0o644 });
      writeFileSync(path.join(dir, 'shadow'), 'x', { mode: 0o640 });
      mkdirSync(path.join(dir, 'ssh'), { mode: 0o755 });
      writeFileSync(path.join(dir, 'ssh', 'ssh_host_ed25519_key'), 'k', { mode: 0o600 });
      writeFileSync(path.join(dir, 'ssh', 'ssh_host_ed25519_key.pub'), 'k', { mode: 0o644 });
      mkdirSync(path.join(dir, 'private'), { mode: 0o700 });
      writeFileSync(path.join(dir, 'private', 'key.pem'), 'k', { mode: 0o600 });
      symlinkSync(path.join(dir, 'shadow'), path.join(dir, 'link'));
      expect(rootOnlyEntries(dir).sort()).toEqual(
        ['private', 'shadow', 'ssh/ssh_host_ed25519_key'].map((p) => path.join(dir, p)),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
