import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendQuestions } from './board-questions.ts';
import { BoardStore, patchFrontMatter, questionsOf } from './board-store.ts';
import { setYamlValues } from './config-edit.ts';

const CONFIG = `# my board
version: 1
scheduler:
  maxConcurrency: 3 # all flows
flows:
  shell: { runner: command, cap: 2 } # keep me
`;

describe('BoardStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rb-store-'));
    mkdirSync(path.join(dir, 'cards'));
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads only regular files: a directory, a FIFO and a socket named *.md are broken cards saying what they are', async () => {
    const cards = path.join(dir, 'cards');
    mkdirSync(path.join(cards, 'dir.md'));
    execFileSync('mkfifo', [path.join(cards, 'fifo.md')]);
    const sock = net.createServer().listen(path.join(cards, 'sock.md'));
    await new Promise((r) => sock.once('listening', r));
    writeFileSync(path.join(cards, 'ok.md'), '---\ntitle: Ok\nflow: shell\n---\n');
    const store = new BoardStore(dir);
    store.load(); // neither throws (EISDIR) nor blocks (the FIFO has no writer)
    sock.close();
    const broken = Object.fromEntries(store.brokenCards().map((b) => [path.basename(b.file), b.error]));
    expect(broken['dir.md']).toMatch(/^a directory, not a regular file/);
    expect(broken['fifo.md']).toMatch(/^a FIFO \(named pipe\), not a regular file/);
    expect(broken['sock.md']).toMatch(/^a socket, not a regular file/);
    expect(store.all().map((c) => c.front.title)).toEqual(['Ok']);
  });

  it('writes state and appended questions in one atomic write, keeping comments and the rest of the body', () => {
    const file = path.join(dir, 'cards', 'ask.md');
    writeFileSync(
      file,
      '---\ntitle: Ask # keep\nflow: shell\nid: ask\nstatus: running\n---\n# Task\nDo.\n\n## Questions\n- None.\n\n## Notes\nn\n',
    );
    const store = new BoardStore(dir);
    store.load();
    store.update('ask', { status: 'needs-input', lastRun: 'r1' }, (b) => appendQuestions(b, ['Which one?']));
    expect(readFileSync(file, 'utf8')).toBe(
      '---\ntitle: Ask # keep\nflow: shell\nid: ask\nstatus: needs-input\nlastRun: r1\n---\n# Task\nDo.\n\n## Questions\n- [ ] Which one?\n\n## Notes\nn\n',
    );
    expect(store.get('ask')!.front.status).toBe('needs-input');
    expect(questionsOf(store.get('ask')!.body)).toBe('- [ ] Which one?');
    // no temp file left beside the card
    expect(readdirSync(path.join(dir, 'cards'))).toEqual(['ask.md']);
  });

  it("a person's save between the host's read and write is kept: the host's change is made again on it", () => {
    const file = path.join(dir, 'cards', 'race.md');
    writeFileSync(file, '---\ntitle: Race\nflow: shell\nid: race\nstatus: queued\n---\n# Task\nold text\n');
    const store = new BoardStore(dir);
    store.load();
    let saves = 0;
    store.update('race', { status: 'running', lastRun: 'r9' }, (body) => {
      // the person's editor saves right after the host read the file (once)
      if (saves++ === 0)
        writeFileSync(
          file,
          '---\ntitle: Race\nflow: shell\nid: race\nstatus: queued\n---\n# Task\nnew text\n',
        );
      return body;
    });
    expect(saves).toBe(2); // read again after the conflict
    expect(readFileSync(file, 'utf8')).toBe(
      '---\ntitle: Race\nflow: shell\nid: race\nstatus: running\nlastRun: r9\n---\n# Task\nnew text\n',
    );
    expect(readdirSync(path.join(dir, 'cards'))).toEqual(['race.md']);
  });

  it('assigns a missing id and status and writes them back, keeping the rest of the file', () => {
    const file = path.join(dir, 'cards', 'Run Tests.md');
    writeFileSync(
      file,
      '---\ntitle: Run the tests # why\nflow: shell\ncommand: npm test\n---\n# Task\nRun.\n',
    );
    const store = new BoardStore(dir);
    store.load();
    const [card] = store.all();
    expect(card!.front.id).toBe('run-tests');
    expect(card!.front.status).toBe('backlog');
    const text = readFileSync(file, 'utf8');
    expect(text).toContain('title: Run the tests # why');
    expect(text).toMatch(/id: run-tests\nstatus: backlog\n---\n# Task\nRun.\n$/);
  });

  it('a card that does not parse is a broken card with its error; the others load', () => {
    writeFileSync(path.join(dir, 'cards', 'ok.md'), '---\ntitle: ok\nflow: shell\n---\n');
    writeFileSync(path.join(dir, 'cards', 'bad.md'), '---\ntitle: [unclosed\n---\n');
    writeFileSync(path.join(dir, 'cards', 'none.md'), 'just text\n');
    const store = new BoardStore(dir);
    store.load();
    expect(store.all().map((c) => c.front.id)).toEqual(['ok']);
    const broken = store.brokenCards();
    expect(broken.map((b) => path.basename(b.file)).sort()).toEqual(['bad.md', 'none.md']);
    expect(broken.find((b) => b.file.endsWith('none.md'))!.error).toMatch(/no front matter/);
  });

  it('a copied card with a taken id gets its own', () => {
    const text = '---\nid: same\ntitle: t\nflow: shell\nstatus: backlog\n---\n';
    writeFileSync(path.join(dir, 'cards', 'a.md'), text);
    writeFileSync(path.join(dir, 'cards', 'b.md'), text);
    const store = new BoardStore(dir);
    store.load();
    expect(
      store
        .all()
        .map((c) => c.front.id)
        .sort(),
    ).toEqual(['b', 'same']);
  });

  it('updates front matter atomically; an invalid config keeps the last good one', () => {
    writeFileSync(
      path.join(dir, 'cards', 'a.md'),
      '---\nid: a\ntitle: t\nflow: shell\nstatus: backlog\n---\nbody\n',
    );
    const store = new BoardStore(dir);
    store.load();
    store.update('a', { status: 'queued', rank: 5 });
    expect(readFileSync(path.join(dir, 'cards', 'a.md'), 'utf8')).toBe(
      '---\nid: a\ntitle: t\nflow: shell\nstatus: queued\nrank: 5\n---\nbody\n',
    );
    store.updateConfig((text) => setYamlValues(text, [{ path: ['flows', 'shell', 'cap'], value: 1 }]));
    const cfg = readFileSync(path.join(dir, 'config.yaml'), 'utf8');
    expect(cfg).toContain('# my board');
    expect(cfg).toMatch(/^version: 2$/m); // the version 1 file was upgraded when the board opened
    expect(cfg).toContain('maxConcurrency: 3 # all flows');
    expect(cfg).toMatch(/cap: 1 ?\} # keep me/);
    expect(store.config.flows.shell!.cap).toBe(1);
    expect(() => store.updateConfig((text) => text.replace('version: 2', 'version: one'))).toThrow(/version/);
    expect(store.config.flows.shell!.cap).toBe(1);
  });

  it('a change of the user config is a change of the effective config', async () => {
    const userFile = path.join(dir, 'user-config.yaml');
    const before = process.env.RUNBOARD_USER_CONFIG;
    process.env.RUNBOARD_USER_CONFIG = userFile;
    try {
      writeFileSync(userFile, 'version: 2\nscheduler: { maxConcurrency: 5 }\n');
      const store = new BoardStore(dir);
      store.load();
      expect(store.config.scheduler.maxConcurrency).toBe(3); // config.yaml's own value wins
      expect(store.config.scheduler.backoff.base).toBe(2000);
      await store.watch();
      const changed = new Promise<void>((r) => store.once('config', () => r()));
      writeFileSync(userFile, 'version: 2\nscheduler: { backoff: { base: 5s } }\n');
      await changed;
      expect(store.config.scheduler.backoff.base).toBe(5000);
      await store.close();
    } finally {
      if (before === undefined) delete process.env.RUNBOARD_USER_CONFIG;
      else process.env.RUNBOARD_USER_CONFIG = before;
    }
  });

  it('what changed between load and the watcher being ready is read when it is: edits, new cards, removals, config', async () => {
    const cards = path.join(dir, 'cards');
    writeFileSync(path.join(cards, 'a.md'), '---\nid: a\ntitle: A\nflow: shell\nstatus: backlog\n---\n');
    writeFileSync(path.join(cards, 'b.md'), '---\nid: b\ntitle: B\nflow: shell\nstatus: backlog\n---\n');
    writeFileSync(
      path.join(cards, 'same.md'),
      '---\nid: same\ntitle: Same\nflow: shell\nstatus: backlog\n---\n',
    );
    writeFileSync(path.join(cards, 'fixed.md'), '---\ntitle: [unclosed\n---\n');
    const store = new BoardStore(dir);
    store.load();
    expect(store.brokenCards().map((b) => path.basename(b.file))).toEqual(['fixed.md']);
    const seen: string[] = [];
    store.on('cards', (c) => seen.push(path.basename(c.file)));
    // a person's edits while the board starts, before the watcher would report anything
    writeFileSync(
      path.join(cards, 'a.md'),
      '---\nid: a\ntitle: A edited\nflow: shell\nstatus: backlog\n---\n',
    );
    rmSync(path.join(cards, 'b.md'));
    writeFileSync(
      path.join(cards, 'new.md'),
      '---\nid: new\ntitle: New\nflow: shell\nstatus: backlog\n---\n',
    );
    writeFileSync(
      path.join(cards, 'fixed.md'),
      '---\nid: fixed\ntitle: Fixed\nflow: shell\nstatus: backlog\n---\n',
    );
    writeFileSync(path.join(dir, 'config.yaml'), CONFIG.replace('cap: 2', 'cap: 1'));
    await store.watch();
    expect(store.get('a')?.front.title).toBe('A edited');
    expect(store.get('b')).toBeUndefined();
    expect(store.get('new')?.front.title).toBe('New');
    expect(store.get('fixed')?.front.title).toBe('Fixed');
    expect(store.brokenCards()).toEqual([]);
    expect(store.config.flows.shell!.cap).toBe(1);
    expect(seen.sort()).toEqual(['a.md', 'b.md', 'fixed.md', 'new.md']); // not same.md: it did not change
    await store.close();
  });
});

describe('card text', () => {
  it('patches and removes fields', () => {
    expect(patchFrontMatter('---\na: 1\nb: 2\n---\nx', { a: undefined, c: 'q' })).toBe(
      '---\nb: 2\nc: q\n---\nx',
    );
  });
  it('finds the Questions section', () => {
    expect(questionsOf('# Task\nDo it.\n\n## Questions\n- Which branch?\n\n## Notes\nn')).toBe(
      '- Which branch?',
    );
    expect(questionsOf('# Task\nDo it.')).toBeUndefined();
  });
});
