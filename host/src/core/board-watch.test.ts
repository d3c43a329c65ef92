/**
 * The board's watcher (board-watch.ts) against each way a change made outside the board could be lost:
 * each made to happen on purpose, on real files, and waited for by what the store says (never a sleep).
 */
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  mkdtempSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoardStore } from './board-store.ts';

const CONFIG = 'version: 2\nflows:\n  shell: { runner: command, cap: 2 }\n';
const card = (id: string, title = id): string =>
  `---\nid: ${id}\ntitle: ${title}\nflow: shell\nstatus: backlog\n---\n# Task\n`;

/**
 * Resolves once `ok()` holds, looked at after each change the store announces; fails after `ms` saying
 * what the store holds (a lost change never comes: the bound only ends the wait).
 */
function until(store: BoardStore, what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const look = (): void => {
      if (!ok()) return;
      done();
      resolve();
    };
    const timer = setTimeout(() => {
      done();
      const cards = store.all().map((c) => `${c.front.id}: ${c.front.title}`);
      const broken = store.brokenCards().map((b) => `${path.basename(b.file)}: ${b.error}`);
      reject(new Error(`never saw ${what}; the store holds ${JSON.stringify({ cards, broken })}`));
    }, ms);
    const done = (): void => {
      clearTimeout(timer);
      store.off('cards', look);
      store.off('config', look);
    };
    store.on('cards', look);
    store.on('config', look);
    look();
  });
}

const titleOf = (store: BoardStore, id: string): unknown => store.get(id)?.front.title;

describe('BoardWatch', () => {
  let dir: string;
  let cards: string;
  let store: BoardStore;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-watch-'));
    cards = path.join(dir, 'cards');
    mkdirSync(cards);
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
    writeFileSync(path.join(cards, 'a.md'), card('a'));
    store = new BoardStore(dir);
    store.load();
    await store.watch();
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('cards/ replaced by another folder (a checkout, a sync tool): its cards are followed, the old ones gone', async () => {
    renameSync(cards, path.join(dir, 'cards.old'));
    await until(store, 'a.md gone with its folder', () => store.get('a') === undefined);
    mkdirSync(cards);
    writeFileSync(path.join(cards, 'b.md'), card('b'));
    await until(store, 'b.md in the new cards/', () => titleOf(store, 'b') === 'b');
    writeFileSync(path.join(cards, 'b.md'), card('b', 'b edited'));
    await until(store, 'the edit of b.md', () => titleOf(store, 'b') === 'b edited');
  });

  it('config.yaml deleted is said, and the file written again is read', async () => {
    unlinkSync(path.join(dir, 'config.yaml'));
    await until(store, 'config.yaml gone', () => /is gone/.test(store.configError ?? ''));
    expect(store.config.flows.shell!.cap).toBe(2); // the last good config stays
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG.replace('cap: 2', 'cap: 1'));
    await until(store, 'the new config.yaml', () => store.config.flows.shell!.cap === 1);
    expect(store.configError).toBeUndefined();
  });

  it("editors' saves: a temp file renamed over, the old file renamed away first, deleted and written anew", async () => {
    // write a temp file, rename it over the card (most editors, `sed -i`)
    writeFileSync(path.join(cards, '.a.md.swp'), card('a', 'renamed over'));
    renameSync(path.join(cards, '.a.md.swp'), path.join(cards, 'a.md'));
    await until(store, 'the rename over a.md', () => titleOf(store, 'a') === 'renamed over');
    // the old file renamed to a backup, then the new one written (vim's default)
    renameSync(path.join(cards, 'a.md'), path.join(cards, 'a.md~'));
    writeFileSync(path.join(cards, 'a.md'), card('a', 'after a backup'));
    await until(store, 'the save after a backup', () => titleOf(store, 'a') === 'after a backup');
    // deleted, then written again (a checkout)
    unlinkSync(path.join(cards, 'a.md'));
    writeFileSync(path.join(cards, 'a.md'), card('a', 'written anew'));
    await until(store, 'the file written anew', () => titleOf(store, 'a') === 'written anew');
  });

  it('a card seen half-written is read again when the rest of it is written', async () => {
    const file = path.join(cards, 'half.md');
    const text = card('half');
    writeFileSync(file, text.slice(0, 20)); // the front matter not closed yet
    await until(store, 'the half-written card', () => store.brokenCards().some((b) => b.file === file));
    appendFileSync(file, text.slice(20));
    await until(store, 'the whole card', () => titleOf(store, 'half') === 'half');
    expect(store.brokenCards()).toEqual([]);
  });

  it('changes made while the board is busy (many at once, one undone) all arrive, once each', async () => {
    // all of it before the store's next turn: the events arrive together, coalesced
    for (let i = 0; i < 40; i++) writeFileSync(path.join(cards, `n${i}.md`), card(`n${i}`));
    writeFileSync(path.join(cards, 'gone.md'), card('gone'));
    unlinkSync(path.join(cards, 'gone.md'));
    writeFileSync(path.join(cards, 'a.md'), card('a', 'first'));
    writeFileSync(path.join(cards, 'a.md'), card('a', 'second'));
    mkdirSync(path.join(cards, 'dir.md'));
    await until(
      store,
      'every new card, the last edit and the directory',
      () =>
        store.all().length === 41 &&
        titleOf(store, 'a') === 'second' &&
        store.brokenCards().some((b) => path.basename(b.file) === 'dir.md'),
    );
    expect(store.get('gone')).toBeUndefined();
    expect(store.brokenCards().map((b) => b.error)).toEqual([expect.stringMatching(/^a directory/)]);
  });
  it("a card written in place (a shell's `>`) keeps its last good version until the rest of the write", async () => {
    const file = path.join(cards, 'a.md');
    let vanished = 0; // each change the store announced with a.md off the board
    store.on('cards', () => void (store.get('a') ? undefined : vanished++));
    const fd = openSync(file, 'w'); // truncated: what `>` and an editor saving in place do first
    try {
      await until(
        store,
        'the truncated a.md read',
        () => store.brokenCards().some((b) => b.file === file) || !!store.unreadableReason(file),
      );
      expect(store.brokenCards()).toEqual([]);
      expect(titleOf(store, 'a')).toBe('a');
      expect(store.unreadableReason(file)).toMatch(/^cards\/a\.md does not read now \(.+\): the board keeps/);
      // the board writes nothing over it meanwhile: a rename would cut off the rest of the write
      expect(() => store.update('a', { status: 'queued' })).toThrow(/does not read now/);
      writeSync(fd, card('a', 'rewritten'));
    } finally {
      closeSync(fd);
    }
    await until(store, 'the whole new text', () => titleOf(store, 'a') === 'rewritten');
    expect(store.unreadableReason(file)).toBeUndefined();
    expect(store.brokenCards()).toEqual([]);
    expect(vanished).toBe(0);
  });

  it('a card that stays unreadable is shown broken at a later sweep that finds its file unchanged', async () => {
    const file = path.join(cards, 'a.md');
    writeFileSync(file, '---\nid: a\ntitle: [unclosed\n---\n');
    await until(store, 'the bad a.md read', () =>
      /front matter is not valid YAML/.test(store.unreadableReason(file) ?? ''),
    );
    expect(titleOf(store, 'a')).toBe('a');
    // Other changes bring sweeps: the first may still name a.md (its write's own events), the second
    // comes after every event of a.md (inotify keeps their order) and finds it as it was.
    writeFileSync(path.join(cards, 'b.md'), card('b'));
    await until(store, 'b.md', () => titleOf(store, 'b') === 'b');
    writeFileSync(path.join(cards, 'c.md'), card('c'));
    await until(store, 'a.md broken', () => store.brokenCards().some((b) => b.file === file));
    expect(store.get('a')).toBeUndefined();
    expect(store.unreadableReason(file)).toBeUndefined();
    // fixed: a card again
    writeFileSync(file, card('a', 'fixed'));
    await until(store, 'a.md fixed', () => titleOf(store, 'a') === 'fixed');
    expect(store.brokenCards()).toEqual([]);
  });
});
