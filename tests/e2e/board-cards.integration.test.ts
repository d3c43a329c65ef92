/**
 * Writing cards from the board in Debian's Chromium against a real `runboard serve`: create (keyboard
 * only), edit (only what changed is written; an edit made meanwhile outside is never overwritten),
 * duplicate, delete to the trash and undo; a broken card's file shown with its error, fixed in place or
 * trashed, never lost. And the attack: card files crafted by a run (a link to a file outside its grant,
 * an alias bomb, another card's id, markup in a title) leave the board working and the link's target
 * unread. Every view: a screenshot and no serious axe-core violation.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { seriousViolations } from './helpers/axe.ts';
import { ARTIFACTS, BoardServer, launchBrowser, waitUntil } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
flows:
  shell: { runner: command, cap: 2 }
  # a flow that edits the board on purpose: its runs may write cards/
  scribe: { runner: command, cap: 1, sandbox: { projectWritable: true } }
`;

let server: BoardServer;
let browser: Browser;
let page: Page;
let outside: string;

async function tabTo(p: Page, name: string): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await p.keyboard.press('Tab');
    const at = await p.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    if (at === name) return;
  }
  throw new Error(`${name} not reached by Tab`);
}

async function shot(name: string): Promise<void> {
  await savePicture(page, path.join(ARTIFACTS, `${name}.png`));
}

const cardsDir = (): string => path.join(server.project, 'cards');

beforeAll(async () => {
  server = await BoardServer.start(
    CONFIG,
    {
      'notes.md':
        '---\ntitle: Release notes # written by hand\nflow: shell\nworkspace: ./workspace\ncommand: echo notes\n---\n# Task\nCollect the notes.\n',
    },
    // the project folder is granted too (the attack's flow works in it): RUNBOARD_HOME is <root>/home
    { beforeServe: (paths) => createGrant(paths, path.join(paths.root, '..', 'project')) },
  );
  outside = path.join(server.root, 'outside');
  mkdirSync(outside);
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="notes"]');
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('cards written from the board', () => {
  it('creates a card, keyboard only: a readable markdown file in Backlog, opened in the inspector', async () => {
    await tabTo(page, 'New card');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'New card' });
    await dialog.waitFor();
    // the focus is in the title field
    await page.keyboard.type('Check the links');
    await page.keyboard.press('Tab'); // flow: shell (the first)
    await page.keyboard.press('Tab'); // workspace
    await page.keyboard.press('Tab'); // Grant a folder…
    await page.keyboard.press('Tab'); // command
    await page.keyboard.type('echo links ok');
    await page.keyboard.press('Tab'); // task
    await page.keyboard.press('Control+End');
    await page.keyboard.type('Check every link in the docs.');
    expect(await seriousViolations(page)).toEqual([]);
    await shot('cards-new-1440');
    await tabTo(page, 'Create in Backlog');
    await page.keyboard.press('Enter');
    await page.getByRole('complementary', { name: 'Inspector: Check the links' }).waitFor();
    const file = path.join(cardsDir(), 'check-the-links.md');
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^---\ntitle: Check the links\nflow: shell\n/);
    expect(text).toContain('command: echo links ok\n');
    expect(text).toContain('\n---\n# Task\n\nCheck every link in the docs.\n');
    const c = await server.card('check-the-links');
    expect(c?.column).toBe('backlog');
  });

  it('edits a card: only what changed is written, the comment stays', async () => {
    await page.locator('[data-card-handle="notes"]').click();
    const ins = page.getByRole('complementary', { name: 'Inspector: Release notes' });
    await ins.getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit card: Release notes' });
    await dialog.getByLabel('Title').fill('Release notes 2.0');
    await dialog.getByLabel('Task (markdown)').fill('# Task\nCollect the notes of 2.0.\n');
    expect(await seriousViolations(page)).toEqual([]);
    await shot('cards-edit-1440');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('complementary', { name: 'Inspector: Release notes 2.0' }).waitFor();
    expect(readFileSync(path.join(cardsDir(), 'notes.md'), 'utf8')).toBe(
      '---\ntitle: Release notes 2.0 # written by hand\nflow: shell\nworkspace: ./workspace\ncommand: echo notes\nid: notes\nstatus: backlog\n---\n# Task\nCollect the notes of 2.0.\n',
    );
  });

  it('an edit made outside while the editor is open is not overwritten: the editor says so', async () => {
    const ins = page.getByRole('complementary', { name: 'Inspector: Release notes 2.0' });
    await ins.getByRole('button', { name: 'Edit' }).click();
    const dialog = page.getByRole('dialog', { name: /^Edit card/ });
    const file = path.join(cardsDir(), 'notes.md');
    const theirs = readFileSync(file, 'utf8').replace('Collect the notes of 2.0.', 'Their text.');
    writeFileSync(file, theirs);
    await waitUntil('the outside edit seen', async () => {
      // writeFileSync is not atomic: the board may see the file half-written (a broken card, 404) first
      const d = await server.api<{ body: string }>('GET', '/api/cards/notes').catch(() => undefined);
      return d?.body.includes('Their text.');
    });
    await dialog.getByLabel('Task (markdown)').fill('# Task\nMine.\n');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog
      .getByRole('alert')
      .getByText(/changed since you opened it/)
      .waitFor();
    expect(readFileSync(file, 'utf8')).toBe(theirs);
    await shot('cards-edit-conflict-1440');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  it('an edit of the task made outside shows in the open inspector, though the card looks the same on the board', async () => {
    const ins = page.getByRole('complementary', { name: 'Inspector: Release notes 2.0' });
    const file = path.join(cardsDir(), 'notes.md');
    await ins.getByText('Their text.').waitFor();
    // An editor's save (write, then rename over): title, column and everything the board shows stay.
    const tmp = `${file}.saving`;
    writeFileSync(tmp, readFileSync(file, 'utf8').replace('Their text.', 'Edited in their editor.'));
    renameSync(tmp, file);
    await ins.getByText('Edited in their editor.').waitFor();
    // Twice in a row, back to the text before (a change undone within the board's coalescing of
    // updates): what the inspector shows is still the file's.
    writeFileSync(tmp, readFileSync(file, 'utf8').replace('Edited in their editor.', 'Undone.'));
    renameSync(tmp, file);
    writeFileSync(tmp, readFileSync(file, 'utf8').replace('Undone.', 'Edited in their editor.'));
    renameSync(tmp, file);
    await waitUntil('both edits seen by the board', async () => {
      const d = await server.api<{ body: string }>('GET', '/api/cards/notes');
      return d.body.includes('Edited in their editor.');
    });
    await ins.getByText('Edited in their editor.').waitFor();
  });

  it('duplicates a card, then deletes the copy to the trash and undoes that', async () => {
    const ins = page.getByRole('complementary', { name: 'Inspector: Release notes 2.0' });
    await ins.getByRole('button', { name: 'Duplicate' }).click();
    const copy = page.getByRole('complementary', { name: 'Inspector: Release notes 2.0 (copy)' });
    await copy.waitFor();
    const copyFile = path.join(cardsDir(), 'notes-copy.md');
    const text = readFileSync(copyFile, 'utf8');
    expect(text).toContain('title: Release notes 2.0 (copy) # written by hand\n');
    await copy.getByRole('button', { name: 'Delete' }).click();
    const undo = page.getByRole('status').filter({ hasText: 'to the trash' });
    await undo.waitFor();
    await waitUntil('the copy off the board', async () => !(await server.card('notes-copy')));
    expect(existsSync(copyFile)).toBe(false);
    const trashed = readdirSync(path.join(cardsDir(), '.trash'));
    expect(trashed).toHaveLength(1);
    expect(readFileSync(path.join(cardsDir(), '.trash', trashed[0]!), 'utf8')).toBe(text);
    expect(await seriousViolations(page)).toEqual([]);
    await shot('cards-trash-undo-1440');
    await undo.getByRole('button', { name: 'Undo' }).click();
    await page.getByRole('complementary', { name: 'Inspector: Release notes 2.0 (copy)' }).waitFor();
    expect(readFileSync(copyFile, 'utf8')).toBe(text);
    // deleted again: Settings → Trash lists it and restores it too
    await page
      .getByRole('complementary', { name: 'Inspector: Release notes 2.0 (copy)' })
      .getByRole('button', { name: 'Delete' })
      .click();
    await waitUntil('the copy off the board again', async () => !(await server.card('notes-copy')));
    await page.getByRole('button', { name: 'Settings' }).click();
    const trash = page.getByRole('region', { name: /^Trash/ });
    await trash.getByRole('heading', { name: 'Trash (1)' }).waitFor();
    await trash.getByRole('button', { name: 'Restore notes-copy.md' }).click();
    await page.getByRole('complementary', { name: 'Inspector: Release notes 2.0 (copy)' }).waitFor();
    await trash.getByText('No deleted cards.').waitFor();
    expect(readFileSync(copyFile, 'utf8')).toBe(text);
    await page.keyboard.press('Escape'); // Settings
    await page.keyboard.press('Escape'); // the inspector, if the focus is there
  });

  it('a broken card shows what is wrong with its file; fixed in place it becomes a card', async () => {
    server.writeCard('half.md', '---\ntitle: Half written\nflow: shell\ncommand: [unclosed\n---\nbody\n');
    const handle = page.locator('[data-card-handle="broken:cards/half.md"]');
    await handle.waitFor();
    await handle.click();
    const dialog = page.getByRole('dialog', { name: 'Broken card: cards/half.md' });
    await dialog.getByText(/front matter is not valid YAML/).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await shot('cards-broken-1440');
    const area = dialog.getByLabel("The file's text");
    expect(await area.inputValue()).toContain('command: [unclosed');
    await area.fill('---\ntitle: Half written\nflow: shell\ncommand: echo fixed\n---\nbody\n');
    await dialog.getByRole('button', { name: 'Save the file' }).click();
    await page.getByRole('complementary', { name: 'Inspector: Half written' }).waitFor();
    expect(readFileSync(path.join(cardsDir(), 'half.md'), 'utf8')).toContain('command: echo fixed');
    await page.keyboard.press('Escape');
  });

  it('attack: cards crafted by a run leave the board working, and a link to a file outside is not read', async () => {
    const secret = path.join(outside, 'secret.md');
    writeFileSync(secret, '---\ntitle: The secret\nflow: shell\n---\nsecret text\n');
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...'bcdefghij'
        .split('')
        .map((n, i) => `${n}: &${n} [${Array(10).fill(`*${'abcdefghij'[i]}`).join(', ')}]`),
      'title: *j',
      'flow: shell',
    ].join('\n');
    const script = [
      `ln -s ${JSON.stringify(secret)} cards/leak.md`,
      `printf -- '---\\n${bomb.replace(/\n/g, '\\n')}\\n---\\n' > cards/bomb.md`,
      `printf -- '---\\ntitle: Impostor\\nflow: shell\\nid: notes\\nstatus: backlog\\n---\\n' > cards/impostor.md`,
      `printf -- '---\\ntitle: "<img src=x onerror=alert(1)>"\\nflow: shell\\nstatus: backlog\\n---\\n' > cards/markup.md`,
    ].join(' && ');
    writeFileSync(
      path.join(cardsDir(), 'scribe.md'),
      `---\ntitle: Scribe\nflow: scribe\ncommand: ${JSON.stringify(script)}\n---\n`,
    );
    await waitUntil('the scribe card', () => server.card('scribe'));
    await server.api('POST', '/api/cards/scribe/move', { to: 'queued', index: 0 });
    await waitUntil(
      'the scribe ran',
      async () => (await server.card('scribe'))?.column === 'done',
      30_000,
    ).catch(async (e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(await server.card('scribe'))}`);
    });
    const board = await waitUntil('the crafted cards on the board', async () => {
      const b = await server.board();
      // all four: the board takes the files in as its watcher sees them, in any order
      return b.cards.some((c) => c.id === 'broken:cards/leak.md') &&
        b.cards.some((c) => c.id === 'broken:cards/bomb.md') &&
        b.cards.some((c) => c.title === 'Impostor') &&
        b.cards.some((c) => c.title.startsWith('<img'))
        ? b
        : undefined;
    });
    const byId = Object.fromEntries(board.cards.map((c) => [c.id, c]));
    expect(byId['broken:cards/leak.md']!.broken).toMatch(/^a symbolic link, not a regular file/);
    expect(byId['broken:cards/bomb.md']!.broken).toMatch(/alias/i);
    // the impostor got an id of its own; the card it claimed is untouched
    expect(byId.notes!.title).toBe('Release notes 2.0');
    expect(board.cards.find((c) => c.title === 'Impostor')!.id).toBe('impostor');
    expect(board.cards.some((c) => c.title === 'The secret')).toBe(false);
    // the link is still a link (the host wrote nothing through it or over it), its target unchanged
    expect(lstatSync(path.join(cardsDir(), 'leak.md')).isSymbolicLink()).toBe(true);
    expect(readFileSync(secret, 'utf8')).toBe('---\ntitle: The secret\nflow: shell\n---\nsecret text\n');
    // the page shows the markup as text
    await page.getByText('<img src=x onerror=alert(1)>').waitFor();
    expect(await page.locator('ul.cards img').count()).toBe(0);
    await page.locator('[data-card-handle="broken:cards/leak.md"]').click();
    const dialog = page.getByRole('dialog', { name: 'Broken card: cards/leak.md' });
    await dialog.getByText(/not a card the board can read: a symbolic link/).waitFor();
    await dialog.getByText('Its text cannot be shown (see above).').waitFor();
    expect(await dialog.getByText('secret text').count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await shot('cards-attack-1440');
    await dialog.getByRole('button', { name: 'Move to trash' }).click();
    await waitUntil('the link off the board', async () => !(await server.card('broken:cards/leak.md')));
    expect(readFileSync(secret, 'utf8')).toContain('secret text');
  });
});
