/**
 * A card written while the board's watcher is still looking at cards/ after an earlier change, on a
 * slow disk (or a busy machine: the same slowness, from the thread pool's queue). Under load a card
 * written after the page loaded never appeared (session 15, load 27): chokidar answered a change in
 * cards/ with a scan of the folder, held the events that came during the scan for one more scan, and
 * dropped them when the scan took over a second (its hold ends on a 1 s timer). Here one file's lstat
 * is made slow on purpose (strace holds that one system call 3 s), so the scan takes that long every
 * time, and the second card is written just after the scan listed the folder.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { BoardStore } from '../../host/src/core/board-store.ts';
import type { Browser } from 'playwright-core';
import {
  ARTIFACTS,
  BoardServer,
  launchBrowser,
  shellCard,
  shellConfig,
  waitUntil,
} from '../e2e/helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const card = (id: string): string =>
  `---\nid: ${id}\ntitle: ${id}\nflow: shell\nstatus: backlog\n---\n# Task\n`;

let tracer: ChildProcess | undefined;
let writer: ChildProcess | undefined;
let server: BoardServer | undefined;
let browser: Browser | undefined;
let store: BoardStore | undefined;
let dir: string | undefined;
afterEach(async () => {
  if (writer && writer.exitCode === null) writer.kill('SIGKILL');
  if (tracer && tracer.exitCode === null) {
    const gone = new Promise((r) => tracer!.once('exit', r));
    tracer.kill('SIGTERM'); // strace detaches, and the held call goes on
    await gone;
  }
  await store?.close();
  await browser?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
  tracer = writer = server = browser = store = dir = undefined;
});

/** Waits until `ok()` holds, looked at after each change the store announces and each line strace prints. */
function until(what: string, ok: () => boolean, on: (look: () => void) => () => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let off = (): void => undefined;
    const timer = setTimeout(() => {
      off();
      reject(new Error(`never saw ${what}`));
    }, 30_000);
    const look = (): void => {
      if (!ok()) return;
      clearTimeout(timer);
      off();
      resolve();
    };
    off = on(look);
    look();
  });
}

it('a card written while the watcher looks at cards/ on a slow disk appears', async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-card-watch-'));
  const cards = path.join(dir, 'cards');
  mkdirSync(cards);
  writeFileSync(path.join(dir, 'config.yaml'), 'version: 2\nflows:\n  shell: { runner: command }\n');
  const slow = path.join(cards, 'slow.md');
  writeFileSync(slow, card('slow'));
  const s = (store = new BoardStore(dir));
  s.load();
  await s.watch();

  // strace holds every stat of slow.md 3 s; it also prints each listing of cards/ (getdents64)
  let out = '';
  tracer = spawn(
    'strace',
    [
      '-f',
      '-p',
      String(process.pid),
      '-P',
      slow,
      '-P',
      cards,
      '-e',
      'trace=statx,getdents64',
      '-e',
      'inject=statx:delay_enter=3000000',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  tracer.once('error', (err) => {
    out += `strace could not start (${err.message}): install it (scripts/apt-packages.txt)\n`;
  });
  const lines: (() => void)[] = [];
  tracer.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
    for (const l of [...lines]) l();
  });
  const onTrace = (look: () => void): (() => void) => {
    lines.push(look);
    return () => lines.splice(lines.indexOf(look), 1);
  };
  const onStore = (look: () => void): (() => void) => {
    s.on('cards', look);
    return () => s.off('cards', look);
  };
  // strace says so once it holds every thread of this process ("Process N attached with M threads")
  await until(`strace attached to this process (it said: ${out})`, () => /attached/.test(out), onTrace);

  // a first card: the board looks at cards/ (a scan that lists it, then stats each file: 3 s)...
  const listedAt = out.length;
  writeFileSync(path.join(cards, 'a.md'), card('a'));
  await until(
    'the board listing cards/, or taking a.md in',
    () => /getdents64/.test(out.slice(listedAt)) || s.get('a') !== undefined,
    (look) => {
      const offs = [onTrace(look), onStore(look)];
      return () => offs.forEach((o) => o());
    },
  );
  // ...and a second card written once the folder was listed, while that scan goes on
  writeFileSync(path.join(cards, 'b.md'), card('b'));
  await until('a.md and b.md on the board', () => !!s.get('a') && !!s.get('b'), onStore);
  expect(
    s
      .all()
      .map((c) => c.front.id)
      .sort(),
  ).toEqual(['a', 'b', 'slow']);
});

it('a card a shell rewrites with `>` keeps its last good version on the board while the write goes on', async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rb-card-watch-'));
  const cards = path.join(dir, 'cards');
  mkdirSync(cards);
  writeFileSync(path.join(dir, 'config.yaml'), 'version: 2\nflows:\n  shell: { runner: command }\n');
  const file = path.join(cards, 'a.md');
  writeFileSync(file, card('a'));
  // The FIFO and the new text in a folder of their own, made before the board watches: a write in the
  // project folder is an event that brings a sweep, which could find a.md still truncated and (rightly,
  // the file unchanged) call it broken (a folder in it is not watched inside).
  const aside = path.join(dir, 'aside');
  mkdirSync(aside);
  const go = path.join(aside, 'go');
  execFileSync('mkfifo', [go]);
  const next = path.join(aside, 'next.md');
  writeFileSync(next, card('a').replace('title: a', 'title: rewritten'));
  const s = (store = new BoardStore(dir));
  s.load();
  await s.watch();
  const onStore = (look: () => void): (() => void) => {
    s.on('cards', look);
    return () => s.off('cards', look);
  };
  let vanished = 0; // changes the store announced with the card off the board
  s.on('cards', () => void (s.get('a') ? undefined : vanished++));
  // The shell truncates a.md (`exec 3>`), then holds the rest of its write until the test says go.
  writer = spawn('sh', ['-c', 'exec 3>"$1"; read go < "$2"; cat "$3" >&3', 'sh', file, go, next], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => writer!.once('exit', r));
  await until(
    'the board reading the truncated a.md',
    () => s.brokenCards().length > 0 || s.unreadableReason(file) !== undefined,
    onStore,
  );
  expect(s.brokenCards()).toEqual([]);
  expect(s.get('a')?.front.title).toBe('a');
  writeFileSync(go, 'go\n'); // the shell writes the rest
  await until('the rewritten card', () => s.get('a')?.front.title === 'rewritten', onStore);
  await exited;
  expect(s.unreadableReason(file)).toBeUndefined();
  expect(s.brokenCards()).toEqual([]);
  expect(vanished).toBe(0);
});

it('on the board (runboard serve): the card being written shows its last good version, marked, and is not moved', async () => {
  const s = (server = await BoardServer.start(shellConfig(), { 'a.md': shellCard('Card A', 'true') }));
  const file = s.cardFile('a.md');
  await waitUntil('card a', () => s.card('a'));
  // outside the project folder (an event there brings a sweep: see the test above)
  const go = path.join(s.root, 'go');
  execFileSync('mkfifo', [go]);
  const next = path.join(s.root, 'next.md');
  writeFileSync(next, shellCard('Card A rewritten', 'true'));
  writer = spawn('sh', ['-c', 'exec 3>"$1"; read go < "$2"; cat "$3" >&3', 'sh', file, go, next], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => writer!.once('exit', r));
  const seen = await waitUntil('the board reading the truncated a.md', async () => {
    const cards = (await s.board()).cards;
    return cards.find((c) => c.broken) ?? cards.find((c) => c.id === 'a' && c.unreadable);
  });
  expect(seen).toMatchObject({
    id: 'a',
    title: 'Card A',
    unreadable: expect.stringMatching(/^cards\/a\.md does not read now \(no front matter/),
  });
  // the page shows the card as it was, saying its file does not read now
  browser = await launchBrowser();
  const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(s.url);
  const tile = page.locator('li[data-card-id="a"]');
  await tile.getByText('its file does not read now: showing its last good version').waitFor();
  expect(await tile.locator('.card-title').innerText()).toBe('Card A');
  await savePicture(page, path.join(ARTIFACTS, 'board-card-being-written-1440.png'));
  // the inspector says why; neither its Run nor Getting started's can be pressed meanwhile (the
  // board would refuse the run: a click did nothing, Getting started's said nothing either)
  await page.locator('[data-card-handle="a"]').click();
  const ins = page.getByRole('complementary', { name: 'Inspector: Card A' });
  await ins.getByText('cards/a.md does not read now').waitFor();
  const run = ins.getByRole('button', { name: 'Run', exact: true });
  expect(await run.isDisabled()).toBe(true);
  expect(await run.getAttribute('title')).toMatch(/being written/);
  // and it does not tell the person to press it
  await ins.getByText('No runs yet: it can run once its file reads again.').waitFor();
  expect(await ins.getByText('press Run').count()).toBe(0);
  const started = page.getByRole('region', { name: 'Getting started' });
  const tryIt = started.getByRole('button', { name: /^Run “/ });
  expect(await tryIt.isDisabled()).toBe(true);
  await started.getByText('its file is being written: it can run once the file reads again').waitFor();
  await savePicture(page, path.join(ARTIFACTS, 'inspector-card-being-written-1440.png'));
  await page.setViewportSize({ width: 800, height: 900 });
  await savePicture(page, path.join(ARTIFACTS, 'inspector-card-being-written-800.png'));
  // no write of it meanwhile: a move would rename half a file over the writer's
  await expect(s.api('POST', '/api/cards/a/move', { to: 'queued', index: 0 })).rejects.toThrow(
    /does not read now/,
  );
  writeFileSync(go, 'go\n'); // the shell writes the rest
  await waitUntil('the rewritten card', async () => (await s.card('a'))?.title === 'Card A rewritten');
  await exited;
  // once it reads, both Runs can be pressed again
  await waitUntil('Run pressable again', async () => (await run.isEnabled()) && (await tryIt.isEnabled()));
  await ins.getByText('No runs yet: press Run (or drag the card into Queued).').waitFor();
  expect(await tryIt.innerText()).toBe('Run “Card A rewritten”');
  const a = await s.card('a');
  expect(a?.unreadable).toBeUndefined();
  expect(a?.column).toBe('backlog');
  expect((await s.board()).cards.filter((c) => c.broken)).toEqual([]);
});

it('a queued card being written does not start when a slot frees: it runs once, as written after', async () => {
  const hold = 'while [ ! -e release ]; do sleep 0.1; done';
  const s = (server = await BoardServer.start(shellConfig('', 1), {
    'a.md': shellCard('A', hold),
    'b.md': shellCard('B', 'echo old > b.txt'),
  }));
  await waitUntil('the cards', async () => (await s.card('a')) && (await s.card('b')));
  await s.api('POST', '/api/cards/a/move', { to: 'queued', index: 0 });
  await waitUntil('a running', async () => (await s.card('a'))?.column === 'running');
  await s.api('POST', '/api/cards/b/move', { to: 'queued', index: 0 }); // waits for a's slot
  await waitUntil('b queued', async () => (await s.card('b'))?.column === 'queued');
  // a person rewrites b (still queued, another command); the shell holds after its truncation
  const file = s.cardFile('b.md');
  const go = path.join(s.root, 'go');
  execFileSync('mkfifo', [go]);
  const next = path.join(s.root, 'next.md');
  writeFileSync(next, shellCard('B', 'echo new > b.txt', 'id: b\nstatus: queued\n'));
  writer = spawn('sh', ['-c', 'exec 3>"$1"; read go < "$2"; cat "$3" >&3', 'sh', file, go, next], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => writer!.once('exit', r));
  await waitUntil('b being written', async () => (await s.card('b'))?.unreadable);
  // a's slot frees: b, half written, must not start from its last good version
  writeFileSync(path.join(s.workspace, 'release'), '');
  await waitUntil('a done', async () => (await s.card('a'))?.column === 'done');
  expect(await s.card('b')).toMatchObject({
    column: 'queued',
    waiting: expect.stringMatching(/does not read now/),
  });
  writeFileSync(go, 'go\n');
  await exited;
  await s.confirmCard('b'); // its new text was written outside the board
  await waitUntil('b done', async () => (await s.card('b'))?.column === 'done', 30_000);
  expect(readFileSync(path.join(s.workspace, 'b.txt'), 'utf8')).toBe('new\n');
  expect((await s.api<{ runs: unknown[] }>('GET', '/api/cards/b')).runs).toHaveLength(1);
});
