/**
 * A card's attempts (config `attempts: N`, issue 33): the board (`runboard serve`) runs the card as N
 * real computer-use runs at once, each on its own private display in its own git worktree of the
 * workspace, against the scripted model server (the one double; each attempt's conversation plays its
 * own variant, a barrier proves they are in flight together); then a judge run (the flow's provider,
 * through the supervisor's proxy) picks one, the winner's worktree is merged, the others discarded.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startModelServer,
  type Episode,
  type ModelServer,
  type ScriptedTurn,
  type TurnFn,
} from '../fixtures/model-server/server.ts';
import { git } from '../agents/agent-harness.ts';
import type { Browser } from 'playwright-core';
import { ARTIFACTS, BoardServer, gitWorkspace, launchBrowser, waitUntil } from '../e2e/helpers/board.ts';
import { processesMentioning } from '../helpers/harness.ts';
import { formApp } from '../cu/cu-harness.ts';
import { toolOutputs } from '../fixtures/model-server/server.ts';
import { desktopFlow, exec, final, resultCard } from '../fixtures/attempts-board.ts';
import { savePicture } from '../helpers/picture.ts';

const CONFIG = `version: 1
scheduler: { maxConcurrency: 3 }
flows:
${desktopFlow('desktop', { cap: 3, attempts: 3, timeout: '2m', maxSteps: 3 })}${desktopFlow('bounded', { cap: 2, attempts: 2, judgeAfter: '1s', timeout: '2m' })}${desktopFlow('capped', { cap: 2, timeout: '2m' })}`;
const card = resultCard;
/** The first turn of every attempt waits at a barrier until `count` attempts are waiting there. */
const barrier = (t: ScriptedTurn, name: string, count: number): ScriptedTurn => ({
  ...t,
  barrier: { name, count },
});

/** The judge's text request: the model server answers with the attempt whose summary is `winner`. */
const JUDGE_MATCH = 'You are the judge of';
const judgeRequests: string[] = [];
const judge =
  (winnerSummary: string | null): TurnFn =>
  ({ body }) => {
    const raw = JSON.stringify(body);
    judgeRequests.push(raw);
    const m = new RegExp(`## Attempt (\\d+)\\\\nEnded: succeeded — ${winnerSummary}`).exec(raw);
    return {
      text: JSON.stringify({
        winner: winnerSummary && m ? Number(m[1]) : null,
        reasons: winnerSummary ? `its result.txt says ${winnerSummary}` : 'none did it',
      }),
    };
  };
const judgeEpisode = (winner: string | null): Episode => ({
  name: 'judge',
  match: JUDGE_MATCH,
  requireTools: false,
  indexBy: 'requests',
  turns: Array.from({ length: 4 }, () => judge(winner)),
});

/** The card's setup: where it ran, then the form app, waited for until its window is there. */
const SETUP =
  `pwd > "$HOME/setup-cwd.txt"; /usr/bin/python3 ${formApp} --title 'Setup app' & ` +
  `until xwininfo -root -tree | grep -q 'Setup app'; do sleep 0.05; done`;

let model: ModelServer;
let server: BoardServer;
let browser: Browser;

beforeAll(async () => {
  model = await startModelServer();
  server = await BoardServer.start(
    CONFIG,
    {
      'three.md': card('ATT-THREE', 'desktop'),
      'two.md': card('ATT-TWO', 'desktop'),
      'capped.md': card('ATT-CAPPED', 'capped', 'attempts: 3\n'),
      'bounded.md': card('ATT-BOUNDED', 'bounded'),
      'setup.md': card('ATT-SETUP', 'desktop', `attempts: 2\nsetup: ${JSON.stringify(SETUP)}\n`),
    },
    BoardServer.withModel('openai', model.url, gitWorkspace),
  );
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  await model?.close();
});

const idOf = async (title: string): Promise<string> =>
  (await server.board()).cards.find((c) => c.title === title)!.id;
const front = (file: string): Record<string, unknown> =>
  YAML.parse(readFileSync(server.cardFile(file), 'utf8').split('---')[1]!) as Record<string, unknown>;

describe('attempts', () => {
  it('three attempts, one succeeds and two fail differently: Done with the winner’s workspace', async () => {
    model.setEpisodes([
      judgeEpisode('wrote three'),
      {
        name: 'three',
        match: 'ATT-THREE',
        turns: [],
        variants: [
          // gives up, saying why
          [
            barrier(exec('echo one > result.txt'), 'three', 3),
            final({ status: 'FAILED', summary: 'no button', error: 'the button was not there' }),
          ],
          // does it
          [
            barrier(exec('echo three > result.txt'), 'three', 3),
            final({ status: 'SUCCESS', summary: 'wrote three' }),
          ],
          // never ends: its step budget (maxSteps 3) stops it
          [barrier(exec('echo loop > result.txt'), 'three', 3), exec('true'), exec('true'), exec('true')],
        ],
      },
    ]);
    judgeRequests.length = 0;
    const id = await idOf('ATT-THREE');
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil('the card is Done', async () => (await server.card(id))?.column === 'done', 150_000);

    // the winner's change is merged into the user's branch; the others' worktrees and branches are gone
    expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('three\n');
    expect(git(server.workspace, 'status', '--porcelain')).toBe('');
    expect(git(server.workspace, 'branch', '--list', 'runboard/*')).toBe('');
    expect(git(server.workspace, 'worktree', 'list').trim().split('\n')).toHaveLength(1);

    const f = front('three.md');
    const runs = f.attemptRuns as string[];
    expect(runs).toHaveLength(3);
    expect(new Set(runs).size).toBe(3);
    expect(f.lastRun).toBe(runs[(f.winner as number) - 1]);
    expect(String(f.verdict)).toMatch(/^attempt \d of 3 won: its result.txt says wrote three/);
    expect(f.judgeRun).toEqual(expect.any(String));

    // the judge's one request shows all three attempts: how each ended, its report, its final screenshot
    expect(judgeRequests).toHaveLength(1);
    const req = judgeRequests[0]!;
    for (const n of [1, 2, 3]) expect(req).toContain(`## Attempt ${n}`);
    expect(req).toContain('Ended: succeeded — wrote three');
    expect(req).toMatch(/Ended: failed — [^"]*no button/);
    expect(req).toMatch(/Ended: failed[^"]*(budget|steps)/i);
    expect(req).toContain('result.txt says what was asked'); // the task's success criteria
    expect(req.match(/data:image\/jpeg;base64,/g)?.length).toBe(3);

    // the inspector shows the three attempts side by side, the winner marked, and the verdict
    const page = await browser.newPage({ viewport: { width: 1500, height: 1000 } });
    await page.goto(server.url);
    await page.click(`li[data-card-id="${id}"]`);
    const region = page.getByRole('region', { name: 'Attempts' });
    await region.getByText(/won: its result.txt says wrote three/).waitFor();
    for (const n of [1, 2, 3]) await region.getByRole('listitem', { name: `Attempt ${n}` }).waitFor();
    const winner = region.getByRole('listitem', { name: `Attempt ${String(f.winner)}` });
    await winner.getByText('winner').waitFor();
    await winner.getByRole('img', { name: /final screenshot/ }).waitFor();
    await expect(region.locator('.attempt .status.bad').count()).resolves.toBe(2);
    // each attempt's own tokens and cost, and the judge's (the scripted server reports usage)
    for (const n of [1, 2, 3])
      await region
        .getByRole('listitem', { name: `Attempt ${n}` })
        .getByText(/^[\d,]+ tokens · /)
        .waitFor();
    await region
      .getByTitle('Model tokens and cost of the judge')
      .getByText(/^[\d,]+ tokens · /)
      .waitFor();
    await savePicture(page, path.join(ARTIFACTS, 'inspector-attempts.png'));
    await page.close();
  }, 200_000);

  it('two successes: the judge’s choice is the one kept', async () => {
    model.setEpisodes([
      judgeEpisode('wrote beta'),
      {
        name: 'two',
        match: 'ATT-TWO',
        turns: [],
        variants: [
          [exec('echo alpha > result.txt'), final({ status: 'SUCCESS', summary: 'wrote alpha' })],
          [exec('echo beta > result.txt'), final({ status: 'SUCCESS', summary: 'wrote beta' })],
          [exec('echo gamma > result.txt'), final({ status: 'FAILED', summary: 'gave up' })],
        ],
      },
    ]);
    judgeRequests.length = 0;
    const id = await idOf('ATT-TWO');
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil('the card is Done', async () => (await server.card(id))?.column === 'done', 150_000);
    expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('beta\n');
    expect(git(server.workspace, 'branch', '--list', 'runboard/*')).toBe('');
    expect(judgeRequests).toHaveLength(1);
    expect(String(front('two.md').verdict)).toContain('its result.txt says wrote beta');
  }, 200_000);

  it("setup: runs on each attempt's display, in its worktree, before the agent's first step", async () => {
    const seen: TurnFn = ({ api, body }) => {
      const [tree, cwd] = toolOutputs(api, body);
      const ok = /Setup app/.test(tree ?? '') && /\.runboard\/worktrees\//.test(cwd ?? '');
      return final(
        ok
          ? { status: 'SUCCESS', summary: 'setup seen' }
          : { status: 'FAILED', summary: `not seen: ${tree} ${cwd}` },
      );
    };
    model.setEpisodes([
      judgeEpisode('setup seen'),
      {
        name: 'setup',
        match: 'ATT-SETUP',
        turns: [
          { toolCalls: [{ name: 'desktop_read', arguments: { title: 'Setup app' } }] },
          exec('cat "$HOME/setup-cwd.txt"'),
          seen,
        ],
      },
    ]);
    judgeRequests.length = 0;
    const id = await idOf('ATT-SETUP');
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil('the card is Done', async () => (await server.card(id))?.column === 'done', 150_000);
    // both attempts saw the app on their display at their first step, and ran setup in their worktree
    expect(judgeRequests).toHaveLength(1);
    expect(judgeRequests[0]!.match(/Ended: succeeded — setup seen/g)).toHaveLength(2);
  }, 200_000);

  it('judgeAfter: once one succeeded and the bound passed, the attempt still going is stopped and the judge decides', async () => {
    model.setEpisodes([
      judgeEpisode('wrote quick'),
      {
        name: 'bounded',
        match: 'ATT-BOUNDED',
        turns: [],
        variants: [
          [exec('echo quick > result.txt'), final({ status: 'SUCCESS', summary: 'wrote quick' })],
          [exec('echo slow > result.txt'), { hang: true }],
        ],
      },
    ]);
    judgeRequests.length = 0;
    const id = await idOf('ATT-BOUNDED');
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil('the card is Done', async () => (await server.card(id))?.column === 'done', 150_000);
    expect(readFileSync(path.join(server.workspace, 'result.txt'), 'utf8')).toBe('quick\n');
    expect(judgeRequests).toHaveLength(1);
    expect(judgeRequests[0]).toContain('Ended: succeeded — wrote quick');
    expect(judgeRequests[0]).toMatch(/Ended: cancelled/);
    expect(git(server.workspace, 'branch', '--list', 'runboard/*')).toBe('');
  }, 200_000);

  it('within the caps (flow cap 2, 3 attempts: never 3 at once); cancel stops every attempt', async () => {
    // the attempts' first requests wait at a barrier of 3: only a third attempt in flight would open it
    model.setEpisodes([
      {
        name: 'capped',
        match: 'ATT-CAPPED',
        turns: [
          barrier(exec('echo x > result.txt'), 'capped', 3),
          final({ status: 'SUCCESS', summary: 'x' }),
        ],
      },
    ]);
    const id = await idOf('ATT-CAPPED');
    await server.api('POST', `/api/cards/${id}/move`, { to: 'queued', index: 0 });
    await waitUntil(
      'two attempts wait for the model, the third for the cap',
      async () => {
        const c = await server.card(id);
        const waiting = model.requests.filter((r) => r.episode === 'capped').length;
        return (
          c?.column === 'running' &&
          waiting === 2 &&
          /attempt 3 of 3 waits: flow "capped" is at its cap \(2\/2\)/.test(c.waiting ?? '')
        );
      },
      90_000,
    );
    const going = (await server.supervisorRuns()).filter((r) => r.status === 'running');
    expect(going).toHaveLength(2);

    await server.api('POST', `/api/cards/${id}/cancel`, {});
    await waitUntil(
      'the card is back in Backlog',
      async () => (await server.card(id))?.column === 'backlog',
      30_000,
    );
    const runs = await server.supervisorRuns();
    expect(runs.filter((r) => r.status === 'running')).toHaveLength(0);
    for (const r of going) expect(runs.find((x) => x.runId === r.runId)?.status).toBe('cancelled');
    expect(model.requests.filter((r) => r.episode === 'capped')).toHaveLength(2); // the third never started
    expect(front('capped.md').lastError).toBe('cancelled');
    expect(git(server.workspace, 'branch', '--list', 'runboard/*')).toBe('');
    // no display stack or worker of the attempts is left
    await waitUntil('no process of the attempts is left', () =>
      going.every((r) => processesMentioning(r.runId).length === 0),
    );
  }, 200_000);
});
