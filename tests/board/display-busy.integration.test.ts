/**
 * One computer-use run at a time on the real display: the supervisor refuses a second one
 * (`InvalidState`, `reason: display-busy`). The scheduler must make such a card wait in Queued, saying it
 * waits for the real display, and start it when the display frees up, never counting it as a failure.
 * Real `runboard serve`, its real supervisor, the test desktop as "the real display", and the scripted
 * model server (the one test double): two flows on that display, and a run the board did not start.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGrant } from '@runboard/supervisor/grants';
import { statePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { SupervisorClient } from '../../host/src/core/supervisor-client.ts';
import type { CardDetail } from '../../host/src/shared/board-types.ts';
import { DesktopSession } from '../desktop/session.ts';
import { startModelServer, type Episode, type ModelServer } from '../fixtures/model-server/server.ts';
import { act, final } from '../cu/cu-harness.ts';
import { BoardServer, REPO, waitUntil } from '../e2e/helpers/board.ts';

let session: DesktopSession;
let model: ModelServer;
let server: BoardServer;

const PROMPT = path.join(REPO, 'prompts', 'execution_agent');
const flowYaml = (name: string, env: NodeJS.ProcessEnv): string => `  ${name}:
    runner: computer-use
    provider: openai
    model: gpt-test
    prompt: ${PROMPT}
    cap: 1
    timeout: 2m
    env: { DISPLAY: "${env.DISPLAY}", DBUS_SESSION_BUS_ADDRESS: "${env.DBUS_SESSION_BUS_ADDRESS}" }
    computerUse: { takeover: false, imageMaxWidth: 320 }
`;
const card = (title: string, flow: string): string =>
  `---\ntitle: ${title}\nflow: ${flow}\nworkspace: ./workspace\n---\n# Task\n${title}\n`;

/** A run of a few seconds on the display: a wait, then SUCCESS; the model "thinks" a little each turn. */
const episode = (marker: string, thinkMs: number): Episode => ({
  name: marker,
  match: marker,
  turns: [
    { ...act({ action: 'wait', seconds: 0.3 }), delayMs: thinkMs },
    { ...final({ status: 'SUCCESS', summary: 'done', error: '', questions: [] }), delayMs: thinkMs },
  ],
});

beforeAll(async () => {
  session = await DesktopSession.start();
  model = await startModelServer();
  model.setEpisodes([
    episode('EPISODE-DESK-A', 1200),
    episode('EPISODE-DESK-B', 1200),
    episode('EPISODE-OUTSIDE', 2500),
    episode('EPISODE-DESK-C', 300),
  ]);
  server = await BoardServer.start(
    `version: 1\nscheduler: { maxConcurrency: 4 }\nflows:\n${flowYaml('desk1', session.env)}${flowYaml('desk2', session.env)}`,
    {
      'a.md': card('EPISODE-DESK-A', 'desk1'),
      'b.md': card('EPISODE-DESK-B', 'desk2'),
      'c.md': card('EPISODE-DESK-C', 'desk1'),
    },
    BoardServer.withModel('openai', model.url),
  );
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await model?.close();
  await session?.stop();
});

const runsOf = async (id: string): Promise<RunResult[]> =>
  (await server.api<CardDetail>('GET', `/api/cards/${id}`)).runs;
const front = (name: string): string => readFileSync(server.cardFile(name), 'utf8').split('\n---')[0]!;

describe('computer-use runs on the real display', () => {
  it('two flows on the real display: the second card waits for the display, then runs; no failure', async () => {
    const a = (await server.board()).cards.find((c) => c.title === 'EPISODE-DESK-A')!.id;
    const b = (await server.board()).cards.find((c) => c.title === 'EPISODE-DESK-B')!.id;
    await server.api('POST', `/api/cards/${a}/move`, { to: 'queued', index: 0 });
    await server.api('POST', `/api/cards/${b}/move`, { to: 'queued', index: 1 });
    const waiting = await waitUntil(
      'the second card to wait for the display',
      async () => {
        const cb = await server.card(b);
        return cb?.column === 'queued' && cb.waiting ? cb.waiting : undefined;
      },
      30_000,
    );
    expect(waiting).toMatch(/^waiting for the real display: card .* is using it/);
    expect((await server.card(a))?.column).toBe('running');
    await waitUntil(
      'both to be done',
      async () => (await server.card(a))?.column === 'done' && (await server.card(b))?.column === 'done',
      90_000,
    );
    const [ra] = await runsOf(a);
    const [rb] = await runsOf(b);
    expect(ra!.status).toBe('succeeded');
    expect(rb!.status).toBe('succeeded');
    expect(Date.parse(rb!.startedAt)).toBeGreaterThanOrEqual(Date.parse(ra!.endedAt!));
    for (const name of ['a.md', 'b.md']) {
      expect(front(name)).not.toMatch(/failures:|lastError:|nextTryAt:/);
    }
  }, 120_000);

  it('a run the board did not start holds the display: the card waits (refused, not failed), then runs', async () => {
    // "Someone else": a run launched straight at the supervisor (another project's board, the CLI).
    const paths = statePaths({ RUNBOARD_HOME: server.home });
    const client = await SupervisorClient.connect(paths);
    const outsideCard = path.join(server.root, 'outside.md');
    writeFileSync(outsideCard, card('EPISODE-OUTSIDE', 'cli'));
    try {
      const { runId: outside } = await client.launch({
        card: { path: outsideCard, title: 'outside' },
        flow: {
          name: 'cli',
          runner: 'computer-use',
          provider: 'openai',
          model: 'gpt-test',
          prompt: PROMPT,
          timeoutMs: 120_000,
          env: {
            DISPLAY: session.env.DISPLAY!,
            DBUS_SESSION_BUS_ADDRESS: session.env.DBUS_SESSION_BUS_ADDRESS!,
          },
          computerUse: { takeover: false, imageMaxWidth: 320 },
        },
        workspace: server.workspace,
        grant: createGrant(paths, server.workspace),
      });
      const c = (await server.board()).cards.find((x) => x.title === 'EPISODE-DESK-C')!.id;
      await server.api('POST', `/api/cards/${c}/move`, { to: 'queued', index: 0 });
      const waiting = await waitUntil(
        'the card to wait for the display held by the outside run',
        async () => (await server.card(c))?.waiting,
        20_000,
      );
      expect(waiting).toBe(
        `waiting for the real display: run ${outside} (not started by this board) is using it`,
      );
      const view = (await server.card(c))!;
      expect(view.column).toBe('queued');
      expect(view.failures).toBeUndefined();
      expect(front('c.md')).not.toMatch(/failures:|lastError:|nextTryAt:/);

      await waitUntil('the card to be done', async () => (await server.card(c))?.column === 'done', 90_000);
      const { runs } = await client.list({ limit: 50 });
      const out = runs.find((r) => r.runId === outside)!;
      expect(out.status).toBe('succeeded');
      const [rc] = await runsOf(c);
      expect(rc!.status).toBe('succeeded');
      // it started once the outside run had ended, and the refusal left no trace on the card
      expect(Date.parse(rc!.startedAt)).toBeGreaterThanOrEqual(Date.parse(out.endedAt!));
      expect(front('c.md')).not.toMatch(/failures:|lastError:/);
      expect(await runsOf(c)).toHaveLength(1);
    } finally {
      client.close();
    }
  }, 120_000);
});
