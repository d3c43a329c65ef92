import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Card } from './project.ts';
import { cardFileIdentity, launchKey } from './scheduler-launch-key.ts';

const card = (front: Partial<Card['front']> = {}, body = '# Task\n'): Card => ({
  file: '/p/cards/a.md',
  front: { id: 'a', title: 'A', flow: 'shell', status: 'queued', ...front },
  body,
  workspace: '/p',
});

describe('launchKey: one queueing of a card, one key', () => {
  it('is the same for what the board writes while the card waits (rank, failures cleared, needs)', () => {
    const k = launchKey(card({ lastRun: 'r1' }));
    expect(launchKey(card({ lastRun: 'r1', rank: -2048, needs: 'x', lastError: 'y' }))).toBe(k);
    expect(launchKey(card({ rank: 5 }))).toBe(launchKey(card({ rank: -5 })));
  });

  it('changes with each run the card had (its next queueing) and with the card file', () => {
    const k = launchKey(card({ lastRun: 'r1' }));
    expect(launchKey(card({ lastRun: 'r2' }))).not.toBe(k);
    expect(launchKey(card())).not.toBe(k);
    expect(launchKey({ ...card({ lastRun: 'r1' }), file: '/p/cards/b.md' })).not.toBe(k);
  });

  it('a card that never ran: a new card at the same path with other work is another launch', () => {
    expect(launchKey(card({}, '# Task\nother'))).not.toBe(launchKey(card()));
    expect(launchKey(card({ command: 'echo b' }))).not.toBe(launchKey(card({ command: 'echo a' })));
  });
});

describe('launchKey: the card file on disk', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rb-launch-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const text = '---\nid: a\ntitle: A\nflow: shell\nstatus: queued\n---\n# Task\n';
  const onDisk = (front: Partial<Card['front']> = {}): Card => ({
    ...card(front),
    file: path.join(dir, 'a.md'),
  });

  it('is the same while the file is the one the first launch read (a board restarted, a lost answer)', () => {
    writeFileSync(path.join(dir, 'a.md'), text);
    const k = launchKey(onDisk());
    expect(launchKey(onDisk())).toBe(k);
    expect(launchKey(onDisk({ lastRun: 'r1' }))).toBe(launchKey(onDisk({ lastRun: 'r1' })));
  });

  it('a file written anew at the path with the same text (deleted and made again, from git or the trash) is another queueing', () => {
    const file = path.join(dir, 'a.md');
    writeFileSync(file, text);
    const first = launchKey(onDisk());
    const after = launchKey(onDisk({ lastRun: 'r1' }));
    const id = cardFileIdentity(file);
    // a new file put in its place, as the board, git or an editor write one (the old inode still
    // held meanwhile, so it cannot be reused: the change time alone would tell them apart too)
    writeFileSync(path.join(dir, 'new.md'), text);
    renameSync(path.join(dir, 'new.md'), file);
    expect(cardFileIdentity(file)).not.toBe(id);
    expect(launchKey(onDisk())).not.toBe(first);
    expect(launchKey(onDisk({ lastRun: 'r1' }))).not.toBe(after);
  });

  it('a card file that is gone has a key of its own', () => {
    expect(cardFileIdentity(path.join(dir, 'none.md'))).toBe('gone');
  });
});
