/**
 * Files a run wrote that the board reads (docs/security-model.md, Resources): a run of a flow with
 * `projectWritable: true` works in the project folder and plants recordings there. A `recording.json`
 * that is a FIFO hung the whole board (its listing read it on the server's thread); one that links to
 * /dev/zero grew the server without bound; a recording's screenshot that links outside served the
 * person's file. The board now reads them as regular files only, bounded, off its thread.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { BoardServer, waitUntil } from '../e2e/helpers/board.ts';

let server: BoardServer;
const SECRET = 'PNG-of-the-person-0123456789';

const meta = (id: string): string =>
  JSON.stringify({
    id,
    version: 1,
    startedAt: '2026-01-01T00:00:00.000Z',
    startScreenshot: 'screenshots/start.png',
  });

beforeAll(async () => {
  server = await BoardServer.start(
    'version: 1\nflows:\n  plant: { runner: command, sandbox: { projectWritable: true } }\n',
    {},
    { beforeServe: (paths) => createGrant(paths, path.join(path.dirname(paths.root), 'project')) },
  );
  const secret = path.join(server.root, 'secret.png');
  writeFileSync(secret, SECRET);
  const r = 'recordings/rec-20260101-0000';
  const plant = [
    `mkdir -p ${r}01-aaaaaa ${r}02-bbbbbb ${r}03-cccccc/screenshots ${r}04-dddddd`,
    `mkfifo ${r}01-aaaaaa/recording.json && : > ${r}01-aaaaaa/manifest.jsonl`,
    `ln -s /dev/zero ${r}02-bbbbbb/recording.json && : > ${r}02-bbbbbb/manifest.jsonl`,
    `printf '%s' '${meta('rec-20260101-000003-cccccc')}' > ${r}03-cccccc/recording.json`,
    `: > ${r}03-cccccc/manifest.jsonl && ln -s ${secret} ${r}03-cccccc/screenshots/start.png`,
    `printf 'PNG-of-the-run' > ${r}03-cccccc/screenshots/step-1.png`,
    // a folder on the way that is a link: the "screenshot" is the person's file too
    `printf '%s' '${meta('rec-20260101-000004-dddddd')}' > ${r}04-dddddd/recording.json`,
    `: > ${r}04-dddddd/manifest.jsonl && ln -s ${server.root} ${r}04-dddddd/screenshots`,
  ].join(' && ');
  server.writeCard(
    'plant.md',
    `---\ntitle: plant\nflow: plant\nworkspace: .\ncommand: ${JSON.stringify(plant)}\n---\n# Task\nplant\n`,
  );
  await waitUntil('the card', async () => (await server.card('plant')) !== undefined, 10_000);
  await server.api('POST', '/api/cards/plant/move', { to: 'queued', index: 0 });
  await waitUntil('plant done', async () => (await server.card('plant'))?.column === 'done', 30_000);
}, 90_000);

afterAll(async () => {
  await server?.stop();
});

/** A GET that must be answered: a hung board fails here rather than at the test's own timeout. */
async function get(p: string): Promise<Response> {
  return fetch(server.base + p, {
    headers: { authorization: `Bearer ${server.token}` },
    signal: AbortSignal.timeout(20_000),
  });
}

describe('recordings a run planted in the project folder', () => {
  it('the board lists them without hanging or growing: a FIFO or a device is no recording', async () => {
    const res = await get('/api/recordings');
    expect(res.status).toBe(200);
    const view = (await res.json()) as { recordings: { id: string; thumbnails: string[] }[] };
    expect(view.recordings.map((r) => r.id).sort()).toEqual([
      'rec-20260101-000003-cccccc',
      'rec-20260101-000004-dddddd',
    ]);
    // the board answers other requests too
    expect((await get('/api/board')).status).toBe(200);
  });

  it("a recording's screenshot that is a link, or lies behind one, is not served; a regular one is", async () => {
    const ok = await get('/api/recordings/rec-20260101-000003-cccccc/file?name=screenshots/step-1.png');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('PNG-of-the-run');
    for (const id of ['rec-20260101-000003-cccccc', 'rec-20260101-000004-dddddd']) {
      const res = await get(
        `/api/recordings/${id}/file?name=screenshots/${id.endsWith('c') ? 'start' : 'secret'}.png`,
      );
      expect(res.status).toBe(404);
      expect(await res.text()).not.toContain(SECRET);
    }
  });
});
