/**
 * Settings → Disk in Debian's Chromium against a real `runboard serve`: the space the project's run
 * logs, their artifacts and its recordings take (what `runboard gc` prunes), after a real run and with
 * a recording on disk. Screenshot in test-results/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ARTIFACTS, BoardServer, launchBrowser } from './helpers/board.ts';
import { savePicture } from '../helpers/picture.ts';

let server: BoardServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  server = await BoardServer.start(
    'version: 2\nflows:\n  shell: { runner: command, cap: 2 }\nretention:\n  keepPerCard: 3\n  maxSize: 2g\n',
    { 'hello.md': '---\ntitle: Hello\nflow: shell\nworkspace: ./workspace\ncommand: seq 1 1000\n---\n' },
  );
  const rec = path.join(server.project, 'recordings', 'rec-20261127-120000-abc123');
  mkdirSync(rec, { recursive: true });
  writeFileSync(path.join(rec, 'video.mp4'), Buffer.alloc(3 * 1024 * 1024));
  writeFileSync(path.join(rec, 'recording.json'), JSON.stringify({ endedAt: '2026-11-27T12:01:00Z' }));
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
  await page.goto(server.url);
  await page.waitForSelector('li[data-card-id="hello"]');
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('Settings → Disk', () => {
  it('shows the run logs, artifacts and recordings of the project and the retention policy', async () => {
    await server.api('POST', '/api/cards/hello/move', { to: 'queued', index: 0 });
    await page.waitForSelector('ul.cards[data-column="done"] li[data-card-id="hello"]', { timeout: 60_000 });
    await page.getByRole('button', { name: 'Settings' }).click();
    const disk = page.getByRole('region', { name: 'Disk' });
    await disk.waitFor();
    const text = await disk.innerText();
    expect(text).toMatch(/Run logs\s+[\d.]+ KiB \(1 run\)/);
    expect(text).toMatch(/Artifacts\s+[\d.]+ (B|KiB)/);
    expect(text).toMatch(/Recordings\s+3\.0 MiB \(1\)/);
    expect(text).toContain('Retention: maxAge 30d, maxSize 2.0 GiB, keepPerCard 3.');
    expect(text).toMatch(/Workspace copies\s+0 B \(0 not kept or discarded\)/);
    expect(text).toContain(
      'Retention is applied by the supervisor every 1h, and at once when the disk holding the state has less than 2% free',
    );
    await disk.scrollIntoViewIfNeeded();
    await savePicture(page, path.join(ARTIFACTS, 'settings-disk.png'));
  });
});
