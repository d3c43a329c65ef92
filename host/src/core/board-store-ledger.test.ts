/**
 * The confirmed ledger as the board store uses it (issue 27): what a person opened, confirmed or the
 * board wrote runs; what changed outside the board and would run by itself waits for a confirm.
 */
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { digestOf, Ledger } from '@runboard/supervisor/ledger';
import { BoardStore } from './board-store.ts';

const CONFIG = `version: 2
flows:
  shell: { runner: command, cap: 2 }
`;
const card = (title: string, extra = ''): string =>
  `---\nid: ${title.toLowerCase()}\ntitle: ${title}\nflow: shell\ncommand: "true"\n${extra}---\n# Task\n`;

describe('BoardStore with a ledger', () => {
  let dir: string;
  let state: string;
  let stores: BoardStore[];
  const open = (): BoardStore => {
    const s = new BoardStore(dir, { ledger: Ledger.open(state, dir) });
    s.load();
    stores.push(s);
    return s;
  };
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-'));
    state = path.join(dir, '.state');
    mkdirSync(path.join(dir, 'cards'));
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
    stores = [];
  });
  afterEach(async () => {
    for (const s of stores) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const cardFile = (name: string): string => path.join(dir, 'cards', name);

  it('a project opened for the first time is confirmed as it is; what is written outside later is not', () => {
    writeFileSync(cardFile('a.md'), card('A', 'status: queued\n'));
    writeFileSync(cardFile('s.md'), card('S', 'schedule: every day at 8:00\n'));
    const first = open();
    expect(first.confirmation(first.get('a')!)).toBeUndefined();
    expect(first.confirmation(first.get('s')!)).toBeUndefined();
    writeFileSync(cardFile('b.md'), card('B', 'status: queued\n'));
    writeFileSync(cardFile('s.md'), card('S', 'schedule: every day at 9:00\n'));
    writeFileSync(cardFile('c.md'), card('C')); // backlog, no schedule: nothing to confirm
    const again = open();
    expect(again.confirmation(again.get('a')!)).toBeUndefined();
    expect(again.confirmation(again.get('b')!)?.reason).toMatch(
      /changed outside the board: Confirm to run it/,
    );
    expect(again.confirmation(again.get('s')!)?.reason).toMatch(/for its schedule to fire/);
    expect(again.confirmation(again.get('c')!)).toBeUndefined();
  });

  it("the board's own writes keep a card as confirmed as it was; a person's act confirms it", () => {
    open();
    writeFileSync(cardFile('b.md'), card('B', 'status: queued\n'));
    const s = open();
    // run state the scheduler writes does not launder a card changed outside the board
    s.update('b', { status: 'running', lastRun: 'r1' });
    s.update('b', { status: 'queued', lastRun: 'r1' });
    expect(s.confirmation(s.get('b')!)).toBeDefined();
    // a drag to Queued (a person's act)
    s.update('b', { status: 'queued', rank: 5 }, undefined, { confirm: true });
    expect(s.confirmation(s.get('b')!)).toBeUndefined();
    s.update('b', { lastError: 'x' });
    expect(s.confirmation(s.get('b')!)).toBeUndefined();
    expect(open().confirmation(s.get('b')!)).toBeUndefined(); // kept in the state root
  });

  it('a write the ledger cannot take changes nothing: the card file is never left unconfirmed', () => {
    writeFileSync(cardFile('b.md'), card('B'));
    const s = open();
    const before = readFileSync(cardFile('b.md'), 'utf8');
    const ledger = Ledger.open(state, dir);
    // the ledger's log cannot be appended to (as on a full disk): here it is a folder
    rmSync(ledger.file);
    mkdirSync(ledger.file);
    expect(() => s.update('b', { status: 'queued', rank: 5 }, undefined, { confirm: true })).toThrow();
    expect(readFileSync(cardFile('b.md'), 'utf8')).toBe(before);
    // once it can, the same act is written and confirmed: the queued card may run
    rmSync(ledger.file, { recursive: true });
    const again = open();
    again.update('b', { status: 'queued', rank: 5 }, undefined, { confirm: true });
    expect(readFileSync(cardFile('b.md'), 'utf8')).toMatch(/status: queued/);
    expect(again.confirmation(again.get('b')!)).toBeUndefined();
  });

  it('a confirm names the text shown: a card changed again after it was shown is refused', () => {
    open();
    writeFileSync(cardFile('b.md'), card('B', 'status: queued\n'));
    const s = open();
    const shown = s.confirmation(s.get('b')!)!;
    expect(shown.digest).toBe(digestOf(readFileSync(cardFile('b.md'), 'utf8')));
    writeFileSync(cardFile('b.md'), card('B', 'status: queued\nworkspace: /\n'));
    expect(() => s.confirmCard('b', shown.digest)).toThrow(/changed again since the board showed it/);
    const other = open(); // reads the new text
    other.confirmCard('b', other.confirmation(other.get('b')!)!.digest);
    expect(other.confirmation(other.get('b')!)).toBeUndefined();
    expect(s.isConfirmed(cardFile('b.md'), readFileSync(cardFile('b.md'), 'utf8'))).toBe(true); // seen by another store
  });

  it('a config.yaml changed outside the board waits: the confirmed flows stay until a person confirms it', () => {
    open();
    writeFileSync(
      path.join(dir, 'config.yaml'),
      CONFIG.replace('cap: 2 }', 'cap: 2, sandbox: { writable: [/] } }') + '  more: { runner: command }\n',
    );
    const s = open();
    expect(s.config.flows.shell!.sandbox).toBeUndefined();
    expect(Object.keys(s.config.flows)).toEqual(['shell']);
    expect(s.configChange?.changes).toEqual([
      'flow "shell": sandbox changed',
      'new flow "more" (runner command)',
    ]);
    expect(() => s.updateConfig((t) => t)).toThrow(/waits for your confirm/); // Settings cannot launder it
    expect(() => s.confirmConfig(digestOf(CONFIG))).toThrow(/changed again/);
    s.confirmConfig(s.configChange!.digest);
    expect(s.configChange).toBeUndefined();
    expect(s.config.flows.shell!.sandbox?.writable).toEqual(['/']);
    expect(open().configChange).toBeUndefined();
  });

  it('a trashed card is forgotten: the same text put back later is confirmed anew', () => {
    writeFileSync(cardFile('a.md'), card('A', 'status: queued\n'));
    const s = open();
    const text = readFileSync(cardFile('a.md'), 'utf8');
    s.trash(cardFile('a.md'));
    writeFileSync(cardFile('a.md'), text);
    const again = open();
    expect(again.confirmation(again.get('a')!)).toBeDefined();
  });
});

describe('Ledger', () => {
  it('is shared by processes through its log, and compacts it without losing an entry', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-log-'));
    try {
      const a = Ledger.open(root, '/p');
      const b = Ledger.open(root, '/p');
      expect(a.fresh).toBe(true);
      for (let i = 0; i < 700; i++) a.record([{ file: '/p/cards/x.md', digest: digestOf(String(i)) }]);
      a.record([{ file: '/p/cards/y.md', digest: digestOf('y') }]);
      expect(b.confirmed('/p/cards/x.md', digestOf('699'))).toBe(true);
      expect(b.confirmed('/p/cards/x.md', digestOf('698'))).toBe(false);
      b.record([{ file: '/p/cards/x.md', digest: null }]);
      expect(a.confirmed('/p/cards/x.md', digestOf('699'))).toBe(false);
      expect(a.confirmed('/p/cards/y.md', digestOf('y'))).toBe(true);
      const log = readFileSync(a.file, 'utf8').trim().split('\n');
      expect(log.length).toBeLessThan(700); // compacted
      expect(Ledger.open(root, '/p').fresh).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a compaction the full disk refuses does not fail the record it follows (its lines are in)', () => {
    // The soak's cards left waiting for a Confirm: the append went in, the compaction after it threw
    // ENOSPC, and the board took the whole write as not done while the ledger had the new digest.
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', root]);
    try {
      const a = Ledger.open(root, '/p');
      for (let i = 0; i < 514; i++) a.record([{ file: '/p/cards/x.md', digest: digestOf(String(i)) }]);
      // room in the log's last page for the next line, none anywhere else: the compaction's new file fails
      const size = statSync(a.file).size;
      appendFileSync(a.file, '\n'.repeat((4096 + 1000 - (size % 4096)) % 4096));
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${path.join(root, 'filler')}`, 'bs=4096'], {
          stdio: 'ignore',
        });
      } catch {
        // ENOSPC: full, as wanted
      }
      a.record([{ file: '/p/cards/x.md', digest: digestOf('514') }]); // the 515th line: a compaction is due
      expect(a.confirmed('/p/cards/x.md', digestOf('514'))).toBe(true);
      expect(Ledger.open(root, '/p').confirmed('/p/cards/x.md', digestOf('514'))).toBe(true);
    } finally {
      execFileSync('umount', ['-l', root]);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('an append the full disk cuts short is taken back: the entry recorded once there is room counts', () => {
    // The soak's c0178: the log's last page had room for a few bytes of a line, the append wrote them
    // and failed; the next append's line was glued to them and confirmed nothing, so a card written
    // queued waited for a Confirm for ever.
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-cut-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', root]);
    const filler = path.join(root, 'filler');
    try {
      const a = Ledger.open(root, '/p');
      a.record([{ file: '/p/cards/x.md', digest: digestOf('0') }]);
      // room in the log's last page for 10 bytes of the next line, none anywhere else
      const size = statSync(a.file).size;
      appendFileSync(a.file, '\n'.repeat((4096 - 10 - (size % 4096) + 4096) % 4096));
      const before = readFileSync(a.file, 'utf8');
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=4096'], { stdio: 'ignore' });
      } catch {
        // ENOSPC: full, as wanted
      }
      expect(() => a.record([{ file: '/p/cards/x.md', digest: digestOf('1') }])).toThrow(/ENOSPC/);
      expect(readFileSync(a.file, 'utf8')).toBe(before); // nothing of the failed line is left
      expect(a.confirmed('/p/cards/x.md', digestOf('0'))).toBe(true);
      rmSync(filler);
      a.record([{ file: '/p/cards/y.md', digest: digestOf('y') }]);
      expect(a.confirmed('/p/cards/y.md', digestOf('y'))).toBe(true);
      expect(Ledger.open(root, '/p').confirmed('/p/cards/y.md', digestOf('y'))).toBe(true);
    } finally {
      execFileSync('umount', ['-l', root]);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('a line an older build cut short does not hide the entry appended after it', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'rb-ledger-torn-'));
    try {
      const a = Ledger.open(root, '/p');
      a.record([{ file: '/p/cards/x.md', digest: digestOf('x') }]);
      // the cut: part of a line with no end, then a whole line appended by the next record
      appendFileSync(a.file, '{"f":"cards/z.md","d":"abc');
      appendFileSync(a.file, JSON.stringify({ f: 'cards/y.md', d: digestOf('y') }) + '\n');
      const b = Ledger.open(root, '/p');
      expect(b.confirmed('/p/cards/y.md', digestOf('y'))).toBe(true);
      expect(b.confirmed('/p/cards/x.md', digestOf('x'))).toBe(true);
      expect(b.entry('/p/cards/z.md')).toBeUndefined();
      // and the next append starts a line of its own
      appendFileSync(a.file, '{"f":"cards/z.md","d":"abc');
      b.record([{ file: '/p/cards/w.md', digest: digestOf('w') }]);
      expect(Ledger.open(root, '/p').confirmed('/p/cards/w.md', digestOf('w'))).toBe(true);
      expect(
        readFileSync(a.file, 'utf8').endsWith(
          '"abc\n' + JSON.stringify({ f: 'cards/w.md', d: digestOf('w') }) + '\n',
        ),
      ).toBe(true);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
