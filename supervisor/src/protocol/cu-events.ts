/**
 * What a computer-use run records of its steps: the `data` of its worker log events (events.jsonl,
 * `type: 'log'`), told apart by `kind`. The worker's loop writes them; the inspector's filmstrip reads
 * them (docs/computer-use.md, "Records").
 */
import * as z from 'zod/mini';

/** The folder of a computer-use run's log dir that holds its step screenshots, report.md and live frame. */
export const ARTIFACTS_DIR = 'artifacts';
/**
 * The live view's latest frame in the artifacts folder: written by the worker (atomically, about once a
 * second), served by the host while the run runs, removed by the supervisor when the run ends.
 */
export const LIVE_FRAME_FILE = 'live.jpg';

const ms = z.number();
const Tokens = z.object({ input: z.number(), output: z.number() });

/** Step 0: the first screenshot, before the first model turn. */
export const CuScreenshot = z.object({
  kind: z.literal('cu-screenshot'),
  step: z.int(),
  /** The file in the run's artifacts folder. */
  file: z.string(),
  /** The image sent to the model. */
  width: z.int(),
  height: z.int(),
  /** The screen rectangle captured [x, y, w, h]. */
  source: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  /** Length of the base64 form sent. */
  bytes: z.int(),
  quality: z.number(),
  captureMs: ms,
});
export type CuScreenshot = z.infer<typeof CuScreenshot>;

/** One tool call of a model turn (several calls of one turn share a step and the screenshot after it). */
export const CuStep = z.object({
  kind: z.literal('cu-step'),
  step: z.int(),
  tool: z.string(),
  /** desktop_action's action, else the tool's name. */
  action: z.string(),
  args: z.unknown(),
  result: z.optional(z.record(z.string(), z.unknown())),
  /** Why the call could not be carried out (invalid call, failed action). */
  error: z.optional(z.string()),
  /** The screen pixel acted on. */
  screen: z.optional(z.record(z.string(), z.unknown())),
  /** The screenshot sent after this step (a file in the artifacts folder). */
  screenshot: z.optional(z.string()),
  /** The model's text with the calls (cut at 2000 characters). */
  modelText: z.optional(z.string()),
  timings: z.object({
    modelMs: ms,
    toolMs: ms,
    actMs: z.optional(ms),
    captureMs: z.optional(ms),
    buildMs: z.optional(ms),
    requestBytes: z.optional(z.number()),
    imageBytes: z.optional(z.number()),
    /** The size of the image sent after this step [width, height]. */
    image: z.optional(z.tuple([z.number(), z.number()])),
  }),
  tokens: Tokens,
  /** Replay runs: whether the step ran by its accessibility locator or by the model, and why the model. */
  replay: z.optional(
    z.object({
      mode: z.enum(['locator', 'model']),
      subtask: z.string(),
      /** The workflow's step it stands for (none: the model worked towards the subtask's outcome). */
      planStep: z.optional(z.int()),
      /** What replay asked of the model. */
      ask: z.optional(z.string()),
    }),
  ),
});
export type CuStep = z.infer<typeof CuStep>;

/** The model's last turn: its completion text (cut at 8000 characters) and whether it was valid. */
export const CuFinal = z.object({
  kind: z.literal('cu-final'),
  step: z.int(),
  text: z.string(),
  valid: z.boolean(),
  timings: z.object({ modelMs: ms }),
  tokens: Tokens,
});
export type CuFinal = z.infer<typeof CuFinal>;

/** A private display's live view is on: a frame every `intervalMs` in `file` (run-relative). */
export const CuLive = z.object({
  kind: z.literal('cu-live'),
  file: z.string(),
  intervalMs: z.int(),
});
export type CuLive = z.infer<typeof CuLive>;

export const CuEvent = z.discriminatedUnion('kind', [CuScreenshot, CuStep, CuFinal, CuLive]);
export type CuEvent = z.infer<typeof CuEvent>;
