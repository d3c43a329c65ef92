import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BoardStore } from './board-store.ts';
import { CardParseCache } from './card-parse-cache.ts';

const stored = (file: string): Record<string, string> =>
  (JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, string> }).entries;

describe('CardParseCache', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-parse-cache-'));
    file = CardParseCache.fileFor(path.join(dir, 'state'), path.join(dir, 'project'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives in the state root, one file per project', () => {
    expect(file.startsWith(path.join(dir, 'state', 'cache', 'cards') + path.sep)).toBe(true);
    expect(CardParseCache.fileFor(path.join(dir, 'state'), path.join(dir, 'other'))).not.toBe(file);
  });

  it('answers a front matter parsed at an earlier start from its file, a copy each time', () => {
    const first = new CardParseCache(file);
    expect(first.parse('a.md', 'title: A\ntags: [x]')).toEqual({ title: 'A', tags: ['x'] });
    first.save();
    // What the file says is what a later start gets for that text (which is why it is kept where no
    // run can write): put a different value there and the next cache answers with it.
    writeFileSync(
      file,
      JSON.stringify({
        format: 1,
        entries: { 'title: A\ntags: [x]': '{"title":"from the cache","tags":["x"]}' },
      }),
    );
    const next = new CardParseCache(file);
    const hit = next.parse('a.md', 'title: A\ntags: [x]') as { title: string; tags: string[] };
    expect(hit.title).toBe('from the cache');
    hit.tags.push('changed by the caller');
    expect(next.parse('a.md', 'title: A\ntags: [x]')).toEqual({ title: 'from the cache', tags: ['x'] });
  });

  it('keeps only each card file’s latest front matter, and none of a card that is gone', () => {
    const c = new CardParseCache(file);
    c.parse('a.md', 'title: A1');
    c.parse('a.md', 'title: A2'); // the card was edited
    c.parse('b.md', 'title: B');
    c.parse('gone.md', 'title: Gone');
    c.forget('gone.md');
    c.save();
    expect(Object.keys(stored(file)).sort()).toEqual(['title: A2', 'title: B']);
    // a later start that sees only b.md drops a.md's entry
    const later = new CardParseCache(file);
    later.parse('b.md', 'title: B');
    later.save();
    expect(Object.keys(stored(file))).toEqual(['title: B']);
  });

  it('throws on invalid YAML as YAML.parse does, and never caches it', () => {
    const c = new CardParseCache(file);
    expect(() => c.parse('bad.md', 'title: [unclosed')).toThrow(/flow sequence|Missing|closing/i);
    c.parse('ok.md', 'title: Ok');
    c.save();
    expect(Object.keys(stored(file))).toEqual(['title: Ok']);
  });

  it('does not cache values JSON would change (.inf, .nan), and parses them right every time', () => {
    const c = new CardParseCache(file);
    expect(c.parse('a.md', 'title: T\nn: .inf')).toEqual({ title: 'T', n: Infinity });
    c.save();
    const next = new CardParseCache(file);
    expect(next.parse('a.md', 'title: T\nn: .inf')).toEqual({ title: 'T', n: Infinity });
    expect(Number.isNaN((next.parse('b.md', 'n: .nan') as { n: number }).n)).toBe(true);
  });

  it('treats a malformed, foreign or unreadable file as empty, and writes a good one', () => {
    mkdirSync(path.dirname(file), { recursive: true });
    for (const bad of [
      '{not json',
      '[]',
      '{"format":99,"entries":{"title: A":"{\\"title\\":\\"old\\"}"}}',
      '',
    ]) {
      writeFileSync(file, bad);
      const c = new CardParseCache(file);
      expect(c.parse('a.md', 'title: A')).toEqual({ title: 'A' });
      c.save();
      expect(stored(file)).toEqual({ 'title: A': '{"title":"A"}' });
    }
  });

  it('a save that cannot write (no room, no permission) is no error: the cache only makes starts faster', () => {
    const blocked = path.join(dir, 'blocked');
    writeFileSync(blocked, 'a file where the cache folder would go');
    const c = new CardParseCache(path.join(blocked, 'cards', 'x.json'));
    c.parse('a.md', 'title: A');
    expect(() => c.save()).not.toThrow();
    if (process.getuid?.() !== 0) {
      const ro = path.join(dir, 'ro');
      mkdirSync(ro);
      chmodSync(ro, 0o500);
      const d = new CardParseCache(path.join(ro, 'x.json'));
      d.parse('a.md', 'title: A');
      expect(() => d.save()).not.toThrow();
    }
  });

  it('a board opened twice reads its cards the same with the cache as without it', () => {
    const project = path.join(dir, 'project');
    mkdirSync(path.join(project, 'cards'), { recursive: true });
    writeFileSync(path.join(project, 'config.yaml'), 'version: 1\nflows:\n  shell: { runner: command }\n');
    for (let i = 0; i < 5; i++)
      writeFileSync(
        path.join(project, 'cards', `c${i}.md`),
        `---\nid: c${i}\ntitle: Card ${i}\nflow: shell\nstatus: ${i % 2 ? 'done' : 'backlog'}\ntags: [t${i}]\n---\n# Task\n${i}\n`,
      );
    writeFileSync(path.join(project, 'cards', 'broken.md'), '---\ntitle: [unclosed\n---\n');
    const plain = new BoardStore(project);
    plain.load();
    const cached = (): BoardStore => {
      const s = new BoardStore(project, { cache: new CardParseCache(file) });
      s.load();
      return s;
    };
    const first = cached();
    void first.close(); // saves the cache
    expect(Object.keys(stored(file))).toHaveLength(5);
    const second = cached();
    expect(second.all()).toEqual(plain.all());
    expect(second.brokenCards()).toEqual(plain.brokenCards());
    void second.close();
  });
});
