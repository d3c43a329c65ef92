/**
 * The board's factory, called by the host's composition roots (`runboard serve`: cli/serve.ts, and the
 * Electron shell): the supervisor connection, the board store, the scheduler and the board service,
 * made and started in order.
 */
import type { StatePaths } from '@runboard/supervisor/paths';
import { Ledger } from '@runboard/supervisor/ledger';
import { followBackend } from './backend.ts';
import { BoardService } from './board-service.ts';
import { BoardStore } from './board-store.ts';
import { CardParseCache } from './card-parse-cache.ts';
import { GrantStore } from './grant-store.ts';
import { Scheduler } from './scheduler.ts';
import { SupervisorClient } from './supervisor-client.ts';
import { succeededRunNotKept } from './workflow-store.ts';

/** How long after opening the board starts its watcher (decision 45). */
const WATCH_AFTER_MS = 1000;

/** Opens the board of `projectDir`: the service, its runs going followed again. */
export async function openBoard(projectDir: string, paths: StatePaths): Promise<BoardService> {
  // The supervisor is reached (or started) while the cards are read: two start-ups at once.
  const connecting = SupervisorClient.connect(paths, { autoStart: true, reconnect: true });
  const store = new BoardStore(projectDir, {
    cache: new CardParseCache(CardParseCache.fileFor(paths.root, projectDir)),
    ledger: Ledger.open(paths.root, projectDir),
  });
  let client: SupervisorClient;
  try {
    store.load();
    // Outside edits are followed once the watcher is ready, and what changed before that is read then
    // (board-watch.ts, catchUp). So the board need not wait for the watcher's walk of cards/ (an lstat and
    // a watch per file), and that walk starts a moment later, after the page's first screen has been
    // served: run at once, it took the event loop just when the page asked for it.
    setTimeout(() => {
      store
        .watch()
        .catch((err: Error) => process.emitWarning(`runboard: not following card edits: ${err.message}`));
    }, WATCH_AFTER_MS).unref();
    client = await connecting;
  } catch (err) {
    void connecting.then(
      (c) => c.close(),
      () => undefined,
    );
    await store.close();
    throw err;
  }
  await followBackend(store, client); // before any launch: they go where the config says
  const grants = new GrantStore(paths);
  // a run's end is settled by its runner's rules first (a reflect run's workflow: workflow-store.ts)
  const scheduler = new Scheduler(store, client, grants, Date.now, succeededRunNotKept);
  const service = new BoardService(store, scheduler, client, paths, grants);
  await service.start();
  return service;
}
