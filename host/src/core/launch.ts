/** From a card and its project to a `run/launch` request: the host's half of launching a run. */
import type { z } from 'zod';
import { launchParams } from '@runboard/project/flow-spec';
import type { LaunchRun } from '@runboard/supervisor/protocol';
import type { GrantStore } from './grant-store.ts';
import type { Card, ProjectConfig } from './project.ts';

export { flowProvider, flowSpec, NoGrantError, visionProfileOf } from '@runboard/project/flow-spec';

export function launchRequest(
  card: Card,
  config: ProjectConfig,
  projectDir: string,
  grants: GrantStore,
): z.input<typeof LaunchRun.params> {
  return launchParams(card, config, projectDir, grants.find(card.workspace));
}
