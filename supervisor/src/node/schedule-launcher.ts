/**
 * How the supervisor starts a scheduled card's run while no board of its project is open: it reads the
 * project as the board does (config.yaml over the user config, the card's front matter), maps it to the
 * same `run/launch` request (common/flow-spec.ts), picks the grant the board would pick, and launches
 * within the caps the board honours: the project's `scheduler.maxConcurrency` and the flow's `cap`,
 * counting every run of the project this supervisor has going (the board's, the CLI's, its own).
 */
import type { Logger } from 'pino';
import { loadConfig } from '../common/config.ts';
import { flowOf, launchParams } from '../common/flow-spec.ts';
import { findGrant } from '../common/grants.ts';
import type { StatePaths } from '../common/paths.ts';
import { loadCard } from '../common/project.ts';
import { DisplayBusy, LaunchRun, ResponseError } from '../protocol/index.ts';
import type { RunRegistry } from './registry.ts';
import type { LaunchOutcome, ScheduleLauncher } from './schedules.ts';

export function scheduleLauncher(paths: StatePaths, registry: RunRegistry, log: Logger): ScheduleLauncher {
  return {
    launch(project: string, cardPath: string): LaunchOutcome {
      let params;
      let flowName: string;
      let cap: number;
      let maxConcurrency: number;
      try {
        const config = loadConfig(project);
        const card = loadCard(cardPath, project);
        flowName = card.front.flow;
        cap = flowOf(card, config).cap;
        maxConcurrency = config.scheduler.maxConcurrency;
        params = LaunchRun.params.parse(
          launchParams(card, config, project, findGrant(paths, card.workspace)),
        );
      } catch (err) {
        return { refuse: (err as Error).message };
      }
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
