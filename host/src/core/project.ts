/**
 * A project folder: config.yaml (layered over the user config and the built-in defaults) plus one
 * markdown card per task. The parsing is shared with the supervisor, which launches scheduled runs
 * while no board is open (@runboard/project: packages/project/src/project.ts and config.ts); this module is the host's
 * name for it.
 */
import { CARD_STATUSES } from '@runboard/project/project';
import type { COLUMNS } from '../shared/board-types.ts';

export * from '@runboard/project/project';
export {
  BUILTIN_DEFAULTS,
  configRows,
  loadConfig,
  loadEffectiveConfig,
  parseConfig,
  readUserConfig,
  resolveConfig,
  sourceOf,
  upgradeConfigFile,
  upgradeConfigFiles,
  userConfigPath,
  type ConfigRow,
  type ConfigSource,
  type EffectiveConfig,
} from '@runboard/project/config';

// The board's columns are the card statuses: the two lists may not drift apart.
CARD_STATUSES satisfies typeof COLUMNS;
