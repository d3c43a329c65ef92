/**
 * The machine's limits in config.yaml (`limits:`, issue 33): what the scheduler counts besides the
 * flows', the providers' and the columns' caps (host/src/core/scheduler-machine.ts), and how large a
 * workspace copy of an attempt may get (attempts on a folder that is not a git repository).
 */
import { z } from 'zod';
import { MEMORY_SIZE } from '@runboard/supervisor/protocol/data';

/** The most a workspace copy may hold when `limits.workspaceCopy` says nothing. */
export const DEFAULT_COPY_BYTES = 1024 ** 3;

const COPY_SIZE = /^[1-9][0-9]{0,9}[kmg]$/;

export const Limits = z.object({
  /**
   * Private displays at once (computer-use and replay runs with `privateDisplay`, attempts included).
   * Default: from the machine's memory (host/src/core/scheduler-machine.ts `defaultDisplays`).
   */
  displays: z.number().int().min(1).max(900).optional(),
  /**
   * The memory the runs' limits (a flow's `sandbox.memory`) are summed against: a size (12g) or a share
   * of the machine's memory (80%). Default: all of the machine's memory.
   */
  memory: z.string().regex(MEMORY_SIZE, 'a size such as 12g, 512m or 80% (of the memory)').optional(),
  /** The most one attempt's copy of a folder that is not a git repository may hold (512m, 4g; default 1g). */
  workspaceCopy: z
    .string()
    .regex(COPY_SIZE, 'a size such as 512m or 4g')
    .transform((s) => Number.parseInt(s, 10) * 1024 ** (1 + 'kmg'.indexOf(s.at(-1)!)))
    .optional(),
});
export type Limits = z.output<typeof Limits>;
