import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoardStore } from './board-store.ts';
import { cardText, duplicateText, parseTrashName, slugOf, trashName } from './card-edit.ts';
import { writeBoundFile } from './card-files.ts';

const CONFIG = 'version: 1\nflows:\n  shell: { runner: command, cap: 2 }\n';

describe('card files written from the board', () => {
  let dir: string;
  let store: BoardStore;
  const cards = (): string => path.join(dir, 'cards');
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-cards-'));
    mkdirSync(path.join(dir, 'cards'));
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
    store = new BoardStore(dir);
    store.load();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('a new card is a readable markdown file named after its title, never replacing one', () => {
    const front = { title: 'Fix: the "login" bug', flow: 'shell', workspace: './ws', command: 'npm test' };
    const a = store.create(front, '# Task\nMake login work.\n');
    expect(path.basename(a.file)).toBe('fix-the-login-bug.md');
    expect(readFileSync(a.file, 'utf8')).toBe(
      '---\ntitle: \'Fix: the "login" bug\'\nflow: shell\nworkspace: ./ws\ncommand: npm test\nid: fix-the-login-bug\nstatus: backlog\n---\n# Task\nMake login work.\n',
    );
    const b = store.create(front, 'again');
    expect(path.basename(b.file)).toBe('fix-the-login-bug-2.md');
    expect(b.front.id).toBe('fix-the-login-bug-2');
    expect(b.body).toBe('again\n');
    expect(readdirSync(cards()).sort()).toEqual(['fix-the-login-bug-2.md', 'fix-the-login-bug.md']);
  });

  it('a copy keeps comments and the body, drops the run state, and is a card of its own', () => {
    writeFileSync(
      path.join(cards(), 'nightly.md'),
      '---\ntitle: Nightly # the big one\nflow: shell\nid: nightly\nstatus: failed\nlastRun: r1\nfailures: 2\nlastError: boom\nrank: 3\n---\n# Task\nDo it.\n',
    );
    store.load();
    const copy = store.duplicate('nightly');
    expect(path.basename(copy.file)).toBe('nightly-copy.md');
    expect(readFileSync(copy.file, 'utf8')).toBe(
      '---\ntitle: Nightly (copy) # the big one\nflow: shell\nid: nightly-copy\nstatus: backlog\n---\n# Task\nDo it.\n',
    );
    expect(store.get('nightly')!.front.status).toBe('failed');
    expect(path.basename(store.duplicate('nightly').file)).toBe('nightly-copy-2.md');
  });

  it('a deleted card goes to the trash and comes back as it was; a taken name gets a new one', () => {
    const a = store.create({ title: 'Alpha', flow: 'shell', command: 'true' }, 'body\n');
    const text = readFileSync(a.file, 'utf8');
    const t = store.trash(a.file);
    expect(store.get('alpha')).toBeUndefined();
    expect(readdirSync(cards())).toEqual(['.trash']);
    expect(store.trashed()).toEqual([t]);
    expect(t.file).toBe('alpha.md');
    const back = store.restore(t.name);
    expect(back).toBe(a.file);
    expect(readFileSync(back, 'utf8')).toBe(text);
    expect(store.get('alpha')!.front.title).toBe('Alpha');
    expect(store.trashed()).toEqual([]);
    // trashed again, and meanwhile a new alpha.md: the old one comes back beside it
    const t2 = store.trash(a.file);
    store.create({ title: 'Alpha', flow: 'shell', command: 'true' }, 'new\n');
    expect(path.basename(store.restore(t2.name))).toBe('alpha-restored.md');
    expect(() => store.restore('../config.yaml')).toThrow(/not a trashed card/);
    expect(() => store.restore(t2.name)).toThrow(/ENOENT/);
  });

  it("a card's folder (its workflow) goes with it to the trash and back, and a copy gets its own", () => {
    const a = store.create({ title: 'Flow', flow: 'shell', command: 'true' }, 'body\n');
    const folder = path.join(cards(), 'flow');
    mkdirSync(folder);
    writeFileSync(path.join(folder, 'schema.json'), '{"steps":[]}\n');
    symlinkSync(path.join(dir, 'config.yaml'), path.join(folder, 'link.yaml'));
    const copy = store.duplicate('flow');
    expect(readdirSync(path.join(cards(), 'flow-copy')).sort()).toEqual(['schema.json']);
    expect(readFileSync(path.join(cards(), 'flow-copy', 'schema.json'), 'utf8')).toBe('{"steps":[]}\n');
    writeFileSync(path.join(cards(), 'flow-copy', 'schema.json'), 'changed');
    expect(readFileSync(path.join(folder, 'schema.json'), 'utf8')).toBe('{"steps":[]}\n');

    const t = store.trash(a.file);
    expect(readdirSync(cards()).sort()).toEqual(['.trash', 'flow-copy', 'flow-copy.md']);
    expect(store.trashed()).toEqual([t]); // the folder is not listed as a trashed card of its own
    expect(store.restore(t.name)).toBe(a.file);
    expect(readFileSync(path.join(folder, 'schema.json'), 'utf8')).toBe('{"steps":[]}\n');
    expect(readdirSync(path.join(cards(), '.trash'))).toEqual([]);
    store.trash(copy.file);
    expect(readdirSync(cards()).sort()).toEqual(['.trash', 'flow', 'flow.md']);
  });

  it('a link in cards/ is a broken card saying so: its target is neither read nor written back', () => {
    const outside = path.join(dir, 'secret.md');
    writeFileSync(outside, '---\ntitle: Secret\nflow: shell\n---\nthe secret\n');
    symlinkSync(outside, path.join(cards(), 'leak.md'));
    store.load();
    expect(store.all()).toEqual([]);
    expect(store.brokenCards()[0]!.error).toMatch(/^a symbolic link, not a regular file/);
    expect(() => store.readText(path.join(cards(), 'leak.md'))).toThrow(/symbolic link/);
    expect(readFileSync(outside, 'utf8')).toBe('---\ntitle: Secret\nflow: shell\n---\nthe secret\n');
  });

  it('names: slugs, trash names round-trip, text of a new card', () => {
    expect(slugOf('  Ünïcode — ok?! ')).toBe('unicode-ok');
    expect(slugOf('***')).toBe('card');
    const n = trashName('x.md', new Date('2026-11-23T00:01:02.345Z'));
    expect(n).toBe('20261123T000102345Z-x.md');
    expect(parseTrashName(n)).toEqual({ file: 'x.md', at: '2026-11-23T00:01:02.345Z' });
    expect(parseTrashName('20261123T000102345Z-../x.md')).toBeUndefined();
    expect(parseTrashName('20261123T000102345Z-.x.md')).toBeUndefined();
    expect(cardText({ title: 'T', flow: 'f', command: undefined }, 'no newline')).toBe(
      '---\ntitle: T\nflow: f\n---\nno newline\n',
    );
    expect(() => duplicateText('no front', 'T')).toThrow(/no front matter/);
  });
});

describe('config.yaml is written in place (runs keep their read-only mount of it)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'rb-bound-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the inode, shorter or longer, and refuses a file changed meanwhile', () => {
    const file = path.join(dir, 'config.yaml');
    writeFileSync(file, 'a much longer first text\n');
    const ino = statSync(file).ino;
    expect(writeBoundFile(file, 'short\n')).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('short\n');
    expect(writeBoundFile(file, 'longer than short\n', 'short\n')).toBe(true);
    expect(writeBoundFile(file, 'x\n', 'not what it holds')).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('longer than short\n');
    expect(statSync(file).ino).toBe(ino);
    expect(readdirSync(dir)).toEqual(['config.yaml']);
  });

  it('a link or a missing file is written as before (a new file renamed into place)', () => {
    const target = path.join(dir, 'elsewhere.yaml');
    writeFileSync(target, 'theirs\n');
    const link = path.join(dir, 'config.yaml');
    symlinkSync(target, link);
    expect(writeBoundFile(link, 'mine\n')).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('theirs\n'); // the link's target is not written
    expect(readFileSync(link, 'utf8')).toBe('mine\n');
    const fresh = path.join(dir, 'new.yaml');
    expect(writeBoundFile(fresh, 'new\n')).toBe(true);
    expect(readFileSync(fresh, 'utf8')).toBe('new\n');
  });
});
