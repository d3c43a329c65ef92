/**
 * How the supervisor starts a scheduled card's run while no board of its project is open: it reads the
 * project as the board does (config.yaml over the user config, the card's front matter), maps it to the
 * same `run/launch` request (@runboard/project/flow-spec), picks the grant the board would pick, and launches
 * within the caps the board honours: the project's `scheduler.maxConcurrency` and the flow's `cap`,
 * counting every run of the project this supervisor has going (the board's, the CLI's, its own); and
 * as the board's scheduler would, it waits out the card's backoff (`nextTryAt`) and the column limits
 * (`scheduler.columnLimits`, counted from the cards' files).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { parseConfig, readProjectConfig, readUserConfig } from '@runboard/project/config';
import { digestOf, Ledger } from '../common/ledger.ts';
import { readRegularFileSync } from '../common/regular-file.ts';
import { flowOf, launchParams } from '@runboard/project/flow-spec';
import { findGrant } from '../common/grants.ts';
import type { StatePaths } from '../common/paths.ts';
import { loadCard, parseCard, ProjectError, type Card, type CardStatus } from '@runboard/project/project';
import { DisplayBusy, LaunchRun, ResponseError } from '../protocol/index.ts';
import type { RunRegistry } from './registry.ts';
import type { LaunchOutcome, ScheduleLauncher } from './schedules.ts';

/** Why the board's scheduler would not start this card now (backoff, a full column), or undefined. */
export function backoffOrColumnLimit(
  project: string,
  card: Card,
  columnLimits: Partial<Record<CardStatus, number>>,
  now = Date.now(),
): string | undefined {
  const next = card.front.nextTryAt ? Date.parse(card.front.nextTryAt) : NaN;
  if (next > now) return `backoff: next try at ${new Date(next).toISOString()}`;
  const limits = Object.entries(columnLimits).filter(([, max]) => max !== undefined);
  if (limits.length === 0) return undefined;
  const counts = new Map<string, number>();
  const dir = path.join(project, 'cards');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.md'))) {
    try {
      const status = loadCard(path.join(dir, f), project).front.status ?? 'backlog';
      counts.set(status, (counts.get(status) ?? 0) + 1);
    } catch {
      // a broken card is in no column
    }
  }
  for (const [column, max] of limits) {
    const count = counts.get(column) ?? 0;
    if (count >= max)
      return `column "${column}" holds ${count} (limit ${max}): no new runs until it has room`;
  }
  return undefined;
}

/** What a scheduled card would launch, read and checked as the board would; or why it cannot. */
type Prepared =
  | {
      params: ReturnType<typeof LaunchRun.params.parse>;
      flowName: string;
      cap: number;
      maxConcurrency: number;
      held: string | undefined;
    }
  | { refuse: string };

function prepare(paths: StatePaths, project: string, cardPath: string): Prepared {
  try {
    // Each file is read once, checked against what a person confirmed on the board (ledger.ts),
    // and used as read: a file changed outside the board since is refused, not run.
    const ledger = Ledger.open(paths.root, project);
    const { file: configFile, text: configText } = readProjectConfig(project);
    let cardText: string;
    try {
      cardText = readRegularFileSync(cardPath, { noFollow: true });
    } catch (err) {
      throw new ProjectError(cardPath, `cannot read the card file: ${(err as Error).message}`);
    }
    if (!ledger.confirmed(cardPath, digestOf(cardText)))
      return {
        refuse: `${path.relative(project, cardPath)} changed outside the board since a person confirmed it: open the project's board and confirm the card there`,
      };
    if (!ledger.confirmed(configFile, digestOf(configText)))
      return {
        refuse:
          "config.yaml changed outside the board since a person confirmed it: open the project's board and confirm the change there",
      };
    const config = parseConfig(configFile, configText, readUserConfig());
    const card = parseCard(path.resolve(cardPath), cardText, project);
    return {
      held: backoffOrColumnLimit(project, card, config.scheduler.columnLimits),
      flowName: card.front.flow,
      cap: flowOf(card, config).cap,
      maxConcurrency: config.scheduler.maxConcurrency,
      params: LaunchRun.params.parse(launchParams(card, config, project, findGrant(paths, card.workspace))),
    };
  } catch (err) {
    return { refuse: (err as Error).message };
  }
}

export function scheduleLauncher(paths: StatePaths, registry: RunRegistry, log: Logger): ScheduleLauncher {
  return {
    // On a fleet, the same up-front check as a board's launch (server.ts): a card no host can run is
    // refused before a job exists, saying why.
    precheck(project: string, cardPath: string): Promise<string | undefined> | undefined {
      const fleet = registry.fleet;
      if (!fleet) return undefined;
      const p = prepare(paths, project, cardPath);
      if ('refuse' in p) return undefined; // the launch says why
      return fleet.admit(p.params).then(
        () => undefined,
        (err: Error) => err.message,
      );
    },
    launch(project: string, cardPath: string): LaunchOutcome {
      const p = prepare(paths, project, cardPath);
      if ('refuse' in p) return p;
      const { params, flowName, cap, maxConcurrency, held } = p;
      if (held) return { wait: held };
      const going = registry.list(true, 100_000).filter((r) => r.card.project === project);
      const inFlow = going.filter((r) => r.flow === flowName).length;
      if (inFlow >= cap)
        return {
          wait: `flow "${flowName}" is at its cap (${inFlow}/${cap}); it starts when one of its runs ends`,
        };
      if (going.length >= maxConcurrency)
        return {
          wait: `the project has ${going.length} runs going, its scheduler.maxConcurrency (${maxConcurrency}); it starts when one ends`,
        };
      try {
        return { runId: registry.launch(params).runId };
      } catch (err) {
        if (err instanceof ResponseError && DisplayBusy.safeParse(err.data).success)
          return { wait: `${err.message}; it starts when that run ends` };
        log.warn({ card: cardPath, err: (err as Error).message }, 'scheduled run refused');
        return { refuse: (err as Error).message };
      }
    },
    whenEnded: (runId) => registry.get(runId)?.whenEnded(),
  };
}
