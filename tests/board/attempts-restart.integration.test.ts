/**
 * A card's attempts on a folder that is not a git repository survive a host restart (issue 33): the board
 * (`runboard serve`) is killed while two real computer-use attempts are in flight, each in its own copy
 * of the workspace (supervisor/src/node/workspace-copy.ts); a new board finds the attempts recorded on
 * the card, follows the runs the supervisor kept going, runs the judge when they end and applies the
 * winner's copy to the workspace. The scripted model server is the one double: the attempts' first
 * answers wait for a request of the episode `release`, which the test sends once the new board is up.
 * Also: attempts wait for the machine's private displays (`limits.displays`), saying so on the card;
 * a judge that fails leaves the successful attempts' copies, kept from the inspector.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../fixtures/model-server/server.ts';
import { BoardServer, launchBrowser, openCard, waitUntil } from '../e2e/helpers/board.ts';
import { desktopFlow, exec, final, NO_VERDICT_JUDGE, resultCard } from '../fixtures/attempts-board.ts';
import { statePaths } from '@runboard/supervisor/paths';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 4 }
limits: { displays: 2 }
flows:
${desktopFlow('desktop', { cap: 3, attempts: 2, timeout: '3m', maxSteps: 4 })}`;
const card = (title: string, extra = ''): string => resultCard(title, 'desktop', extra);

let model: ModelServer;
let server: BoardServer;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(
    CONFIG,
    {
      'restart.md': card('ATT-RESTART'),
      'displays.md': card('ATT-DISPLAYS', 'attempts: 3\n'),
      'judged.md': card('ATT-NOJUDGE'),
    },
    BoardServer.withModel('openai', model.url),
  );
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await model?.close();
});

const front = (): Record<string, unknown> =>
  YAML.parse(readFileSync(server.cardFile('restart.md'), 'utf8').split('---')[1]!) as Record<string, unknown>;

describe('attempts across a host restart', () => {
  it('the board killed mid-attempts and started again: the card ends Done with the judge’s pick', async () => {
    model.setEpisodes([
      {
        name: 'judge',
        match: 'You are the judge of',
        requireTools: false,
        indexBy: 'requests',
        turns: Array.from({ length: 4 }, () => ({ body }: { body: Record<string, unknown> }) => {
          const m = /## Attempt (\d+)\\nEnded: succeeded — wrote two/.exec(JSON.stringify(body));
          return { text: JSON.stringify({ winner: m ? Number(m[1]) : null, reasons: 'it wrote two' }) };
        }),
      },
      { name: 'release', match: 'RELEASE-THE-ATTEMPTS', requireTools: false, turns: [{ text: 'ok' }] },
      {
        name: 'restart',
        match: 'ATT-RESTART',
        turns: [],
        variants: [
          [
            { ...exec('echo one > result.txt'), after: 'release' },
            final({ status: 'FAILED', summary: 'gave up', error: 'not this time' }),
          ],
          [
            { ...exec('echo two > result.txt'), after: 'release' },
            final({ status: 'SUCCESS', summary: 'wrote two' }),
          ],
        ],
      },
    ]);
    const id = (await server.board()).cards.find((c) => c.title === 'ATT-RESTART')!.id;
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    // both attempts are in flight (each waits at the model for the release) and recorded on the card
    await waitUntil(
      'two attempts wait for the model',
      () =>
        model.requests.filter((r) => r.episode === 'restart').length === 2 &&
        (front().attemptRuns as unknown[] | undefined)?.every((r) => typeof r === 'string'),
      120_000,
    );
    const runs = front().attemptRuns as string[];
    expect(new Set(runs).size).toBe(2);

    // the board dies (no shutdown of its own); the supervisor keeps the runs going
    const exited = new Promise((r) => server.proc.once('exit', r));
    server.proc.kill('SIGKILL');
    await exited;
    await server.startServe();
    expect((await server.card(id))?.column).toBe('running');

    const release = await fetch(`${model.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'RELEASE-THE-ATTEMPTS' }] }),
    });
    expect(release.status).toBe(200);
    await waitUntil('the card is Done', async () => (await server.card(id))?.column === 'done', 150_000);

    const f = front();
    expect(f.attemptRuns).toEqual(runs); // the same runs, none started again
    // which attempt plays the winning variant is the order their first requests came in
    expect(f.verdict).toBe(`attempt ${String(f.winner)} of 2 won: it wrote two`);
    expect(f.lastRun).toBe(runs[(f.winner as number) - 1]);
    expect(model.requests.filter((r) => r.episode === 'judge')).toHaveLength(1);
    // the winner's copy applied to the workspace, which is no git repository; both copies gone
    expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('two\n');
    expect(existsSync(path.join(server.workspace, '.git'))).toBe(false);
    const copies = path.join(statePaths({ RUNBOARD_HOME: server.home }).supervisorDir, 'copies');
    expect(existsSync(copies) ? readdirSync(copies) : []).toEqual([]);
  }, 300_000);

  it('attempts count against the machine’s private displays (limits.displays: 2): the third says so', async () => {
    // the first answers wait at a barrier of 3: only a third attempt in flight would open it
    model.setEpisodes([
      {
        name: 'displays',
        match: 'ATT-DISPLAYS',
        turns: [{ ...exec('echo x > result.txt'), barrier: { name: 'displays', count: 3 } }],
      },
    ]);
    const id = (await server.board()).cards.find((c) => c.title === 'ATT-DISPLAYS')!.id;
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil(
      'two attempts wait for the model, the third for a display',
      async () => {
        const c = await server.card(id);
        return (
          model.requests.filter((r) => r.episode === 'displays').length === 2 &&
          /attempt 3 of 3 waits: waiting for a private display: all 2 are in use \(limits.displays\)/.test(
            c?.waiting ?? '',
          )
        );
      },
      120_000,
    );
    await server.api('POST', `/api/cards/${id}/cancel`, {});
    await waitUntil('the card is back in Backlog', async () => (await server.card(id))?.column === 'backlog');
    expect(model.requests.filter((r) => r.episode === 'displays')).toHaveLength(2);
  }, 200_000);

  it('a judge that fails leaves the successful attempts’ copies: the inspector keeps one into the folder', async () => {
    model.setEpisodes([
      NO_VERDICT_JUDGE,
      {
        name: 'nojudge',
        match: 'ATT-NOJUDGE',
        turns: [],
        variants: [
          [exec('echo kept > kept.txt'), final({ status: 'SUCCESS', summary: 'wrote kept' })],
          [exec('echo kept > kept.txt'), final({ status: 'SUCCESS', summary: 'wrote kept too' })],
        ],
      },
    ]);
    const id = (await server.board()).cards.find((c) => c.title === 'ATT-NOJUDGE')!.id;
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil('the card failed', async () => (await server.card(id))?.column === 'failed', 150_000);
    expect(existsSync(path.join(server.workspace, 'kept.txt'))).toBe(false);
    const browser = await launchBrowser();
    try {
      const page = await openCard(server, browser, id, 'ATT-NOJUDGE');
      await page
        .getByRole('region', { name: 'Attempts' })
        .getByRole('button', { name: /^Attempt 1/ })
        .click();
      const copy = page.getByRole('region', { name: 'Workspace copy' });
      await copy.getByText(`Copy of ${server.workspace}`).waitFor();
      await copy.getByRole('button', { name: /^Keep/ }).click();
      await copy.getByText(/kept: \d+ paths? applied/).waitFor();
      expect(readFileSync(path.join(server.workspace, 'kept.txt'), 'utf8')).toBe('kept\n');
    } finally {
      await browser.close();
    }
  }, 250_000);
});
