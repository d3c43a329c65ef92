/**
 * A project folder: config.yaml plus one markdown card per task (YAML front matter + markdown body).
 * Parsing only; errors say what is wrong, where, and what to do. Shared by the host (the board, the
 * CLI) and the supervisor (which launches scheduled runs when no board is open), so both read a project
 * the same way. The layers under config.yaml (built-in defaults, the user's config) are in config.ts.
 */
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import {
  Command,
  drivesDesktop,
  MEMORY_SIZE,
  memorySizeBytes,
  MIN_MEMORY_BYTES,
  RunnerName,
  TMP_SIZE,
} from '@runboard/supervisor/protocol/data';
import { readRegularFileSync } from '@runboard/native/regular-file';
import { Limits } from './limits.ts';
import { Retention } from './retention.ts';

/** The most attempts a card's run may be (config `attempts:`, card `attempts:`). */
export const MAX_ATTEMPTS = 16;

/** The board's columns, which are the card statuses (host/src/shared/board-types.ts checks it has the same). */
export const CARD_STATUSES = ['backlog', 'queued', 'running', 'needs-input', 'done', 'failed'] as const;

/** "90s", "10m", "1h", "1500ms" or a number of milliseconds. */
const Duration = z.union([z.number(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'number' && Number.isInteger(v) && v > 0) return v;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(v.trim()) : null;
  if (m)
    return Math.round(
      Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'],
    );
  ctx.addIssue({
    code: 'custom',
    message: `expected a duration such as 500ms, 30s, 10m or 1h (got ${JSON.stringify(v)})`,
  });
  return z.NEVER;
});

const ProfileName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'profile names are words (letters, digits, . _ -)');
const ProviderName = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'provider names are lowercase words');

/** A named model: which provider (whose key the supervisor holds) and which model. */
export const LlmProfile = z.object({
  provider: ProviderName.optional(),
  model: z.string().min(1).optional(),
});
export type LlmProfile = z.output<typeof LlmProfile>;

/** A named vision model (for describing images and videos). */
export const VisionProfile = z.object({
  provider: ProviderName,
  model: z.string().min(1),
  /** Longest answer, in tokens. */
  maxTokens: z.number().int().min(1).max(100_000).optional(),
});
export type VisionProfile = z.output<typeof VisionProfile>;

export const FlowConfig = z.object({
  runner: RunnerName,
  /** How many runs of this flow may go at once. */
  cap: z.number().int().min(0).max(1000).default(1),
  timeout: Duration.optional(),
  heartbeatTimeout: Duration.optional(),
  killGrace: Duration.optional(),
  sandbox: z
    .object({
      writable: z.array(z.string()).optional(),
      /** More trees runs may read (reads are an allow-list; relative paths are the project's). */
      read: z.array(z.string()).optional(),
      tcpPorts: z.array(z.number().int().min(1).max(65535)).optional(),
      /** UDP to anywhere (DNS for flows that reach outside hosts by name); off by default. */
      udp: z.boolean().optional(),
      allowUnsandboxed: z.boolean().optional(),
      allowAbstractUnix: z.boolean().optional(),
      /** The agent CLI's own sandbox inside the jail (runner codex; docs/agents.md): true, false or auto. */
      agentSandbox: z.union([z.boolean(), z.literal('auto')]).optional(),
      /** Most processes (and threads) a run may have at once (default 1024; docs/security-model.md). */
      maxProcesses: z.number().int().min(16).max(1_000_000).optional(),
      /** The most memory a run may use (a memory cgroup): 512m, 4g, 50% of the machine's (default 50%). */
      memory: z
        .string()
        .regex(MEMORY_SIZE, 'a size such as 512m, 4g or 50% (of the memory, at most 100%)')
        .refine(
          (s) => (memorySizeBytes(s, Number.MAX_SAFE_INTEGER) ?? 0) >= MIN_MEMORY_BYTES,
          `at least ${MIN_MEMORY_BYTES >> 20}m: a run's worker needs that much to start`,
        )
        .optional(),
      /** The most a run's own /tmp (memory) may hold: 512m, 2g, 25% of the memory (default 1g). */
      tmpSize: z
        .string()
        .regex(TMP_SIZE, 'a size such as 512m, 2g or 25% (of the memory, at most 100%)')
        .optional(),
      /** Let runs write this project's config.yaml and cards/ (off: read-only even in the project folder). */
      projectWritable: z.boolean().optional(),
      /** Deletes in the workspace must be asked on the card (docs/security-model.md, Permission asks). */
      askDeletes: z.boolean().optional(),
      /** With askDeletes: folders (relative to the workspace, inside it) where deletes need no ask. */
      deletable: z
        .array(
          z
            .string()
            .min(1)
            .refine(
              (p) => !p.startsWith('/') && !p.split('/').includes('..'),
              'a deletable folder is relative to the workspace and stays inside it (no leading /, no ..)',
            ),
        )
        .optional(),
    })
    .optional(),
  env: z.record(z.string(), z.string()).optional(),
  // ── coding-agent flows (runner codex | claude; docs/agents.md) ──
  /** Model provider whose key the supervisor holds (openai, anthropic, …). */
  provider: ProviderName.optional(),
  model: z.string().min(1).optional(),
  /** A named model profile (`llm_profiles`, usually in the user config): its provider and model, unless the flow sets its own. */
  profile: ProfileName.optional(),
  /** A named vision profile (`vision_profiles`): the model that describes images and videos for this flow's runs. */
  visionProfile: ProfileName.optional(),
  /** No output at all for this long: the run is stalled, killed and failed. */
  stallTimeout: Duration.optional(),
  /** How long a run waits at a tool call for the person's answer to its ask (default 10m); then denied. */
  askTimeout: Duration.optional(),
  /** The most model tokens (input + output) a run may use; reached, the run ends (`budget`). A card may set its own. */
  maxTokens: z.number().int().min(1).max(1e12).optional(),
  /** Record every model request and response of its runs (secrets redacted) as model-debug.jsonl in the run's log folder. */
  debug: z.boolean().optional(),
  /** The most a run's model requests may cost, in USD (priced by `prices:`); reached, the run ends. */
  maxCost: z.number().positive().max(1e6).optional(),
  /** Each run in its own git worktree + branch of the workspace's repository. */
  worktree: z.boolean().optional(),
  /** The run may read the workspace but not write it. */
  readOnly: z.boolean().optional(),
  /** Prompt folder (prompt.md + config.yaml), relative to the project folder. */
  prompt: z.string().min(1).optional(),
  /** Give the agent the desktop as an MCP server (needs desktop-cli). */
  desktop: z.boolean().optional(),
  /** The document tools for the agent (codex, claude, computer-use): on unless false. */
  documents: z.boolean().optional(),
  // ── computer-use flows (runner computer-use; docs/computer-use.md) ──
  computerUse: z
    .object({
      /** responses (OpenAI), chat (any OpenAI-compatible server), messages (Anthropic); default by provider. */
      api: z.enum(['responses', 'chat', 'messages']).optional(),
      maxSteps: z.number().int().min(1).max(10_000).optional(),
      maxDuration: Duration.optional(),
      imageMaxBytes: z.number().int().min(2000).max(20_000_000).optional(),
      imageMaxWidth: z.number().int().min(64).max(8192).optional(),
      /** [x, y, w, h]: the part of the screen the model sees (e.g. one monitor). */
      region: z
        .tuple([z.number().int(), z.number().int(), z.number().int().positive(), z.number().int().positive()])
        .optional(),
      /** The monitor the model sees: its index as `xrandr --listmonitors` lists them, or its output name ("DP-1"). */
      monitor: z.union([z.number().int().min(0).max(63), z.string().min(1).max(200)]).optional(),
      maxRetries: z.number().int().min(0).max(10).optional(),
      /** Each run on its own virtual display (Xvfb + D-Bus + AT-SPI), so runs can go in parallel. */
      privateDisplay: z.boolean().optional(),
      displaySize: z
        .string()
        .regex(/^\d{2,5}x\d{2,5}(x\d{1,2})?$/, 'displaySize is WxH or WxHxD, e.g. 1280x800x24')
        .optional(),
      /** On the real display: the person's Escape cancels the run (default true there). */
      takeover: z.boolean().optional(),
      /** On a private display: ms between the inspector's live frames (default 1000; 0: no live view). */
      liveFrameMs: z
        .number()
        .int()
        .refine(
          (v) => v === 0 || (v >= 100 && v <= 60_000),
          'liveFrameMs is 0 (no live view) or 100..60000 ms',
        )
        .optional(),
      /** The app started on the private display before the run (argv). */
      app: z.array(z.string()).min(1).optional(),
    })
    .optional(),
  /**
   * Each card's run is this many attempts from the same state, in parallel on private displays, and a
   * judge picks one (host/src/core/attempts.ts; a card may say its own `attempts:`). Default 1.
   */
  attempts: z.number().int().min(1).max(MAX_ATTEMPTS).optional(),
  /** Once an attempt succeeded, the others get this long to end before the judge decides without them. */
  judgeAfter: Duration.optional(),
  // ── extraction flows (runner extract: a recording → a task card; docs/extraction.md) ──
  extract: z
    .object({
      /** gemini (the video through the Files API) or, with frames + events, responses | chat | messages; default by provider. */
      api: z.enum(['gemini', 'responses', 'chat', 'messages']).optional(),
      /** Frames sampled from the video for the frame-based APIs (default 12). */
      frames: z.number().int().min(1).max(64).optional(),
      /** Widest sampled frame in pixels (default 768). */
      frameWidth: z.number().int().min(64).max(4096).optional(),
      /** How long an uploaded video may take to become ACTIVE (default 5m). */
      activeTimeout: Duration.optional(),
    })
    .optional(),
});
export type FlowConfig = z.output<typeof FlowConfig>;

export const CardStatus = z.enum(CARD_STATUSES);
export type CardStatus = z.infer<typeof CardStatus>;

/** The longest wait between retries of a failing card (capped at 5 minutes: a failing card is retried soon enough once its cause is fixed). */
export const MAX_BACKOFF_MS = 300_000;

export const SchedulerConfig = z.object({
  maxConcurrency: z.number().int().min(1).max(1000).default(4),
  /** Where runs go: this machine (local) or the hosts of a fleet through Redis (redis: needs redis.url). */
  backend: z.enum(['local', 'redis']).default('local'),
  /** Per-card exponential backoff on consecutive failures: base * 2^(failures-1), at most 5 minutes. */
  backoff: z
    .object({
      base: Duration.default(2000),
      max: Duration.refine((ms) => ms <= MAX_BACKOFF_MS, 'backoff.max is at most 5m').default(MAX_BACKOFF_MS),
      /** How many times a failed run is queued again by itself before its card goes to Failed. */
      retries: z.number().int().min(0).max(100).default(0),
    })
    .default({ base: 2000, max: MAX_BACKOFF_MS, retries: 0 }),
  /** Start no new runs while a column holds this many cards (e.g. `needs-input: 4`). */
  columnLimits: z.partialRecord(CardStatus, z.number().int().min(0).max(100_000)).default({}),
});
export type SchedulerConfig = z.output<typeof SchedulerConfig>;

/** Values a template leaves for the person to fill in (`<your model>`, `changeme`, `...`). */
const PLACEHOLDER = /^(?:<.*>|your[-_ ].*|changeme|change-me|todo|placeholder|xxx+|\.\.\.)$/i;
export const isPlaceholder = (v: string): boolean => PLACEHOLDER.test(v.trim());

/** The config format this Runboard writes and understands (older files are migrated: config.ts). */
export const CONFIG_VERSION = 2;

const profiles = <T extends z.ZodType>(profile: T) =>
  z
    .record(
      z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'profile names are words (letters, digits, . _ -)'),
      profile,
    )
    .default({});

/**
 * The effective config: the layers (config.ts) merged, then checked here. A file newer than this
 * Runboard (a higher `version`) is read as far as it is understood; keys it does not know are ignored.
 */
export const ProjectConfig = z
  .object({
    version: z.number().int().min(1, 'version is 1 or more'),
    scheduler: SchedulerConfig.default({
      maxConcurrency: 4,
      backend: 'local',
      backoff: { base: 2000, max: MAX_BACKOFF_MS, retries: 0 },
      columnLimits: {},
    }),
    /** The Redis of a fleet (scheduler.backend: redis): best in the user config, shared by projects. */
    redis: z
      .object({
        url: z
          .string()
          .regex(
            /^rediss?:\/\/\S+$/,
            'redis.url is a redis:// (or rediss:// for TLS) URL, e.g. redis://host:6379',
          ),
        /**
         * The name of the Redis password stored with the supervisor (`runboard fleet password set
         * NAME`), so that the password is in no config file (docs/deployment.md).
         */
        passwordSecret: z
          .string()
          .regex(
            /^[a-z0-9][a-z0-9_-]{0,63}$/,
            'redis.passwordSecret is a name: lower-case letters, digits, - and _',
          )
          .optional(),
      })
      .optional(),
    /** Named model profiles that flows select with `profile:`. */
    llm_profiles: profiles(LlmProfile),
    /** Named vision profiles that flows select with `visionProfile:`. */
    vision_profiles: profiles(VisionProfile),
    /**
     * Model prices, USD per million tokens (`gpt-4o: { input: 2.5, output: 10 }`), on top of the
     * defaults (docs/user-guide.md "Tokens and cost"): a model in neither has its cost shown as unknown.
     */
    prices: z
      .record(
        z.string().min(1).max(200),
        z.object({ input: z.number().min(0).max(10_000), output: z.number().min(0).max(10_000) }),
      )
      .default({}),
    /**
     * Per provider key, over all flows (`openai: { maxConcurrent: 3 }`): at most this many runs using
     * the provider go at once, whatever the flows' caps.
     */
    providers: z
      .record(ProviderName, z.object({ maxConcurrent: z.number().int().min(1).max(1000).optional() }))
      .default({}),
    /** What `runboard gc` keeps and removes (run logs, artifacts, recordings): retention.ts. */
    retention: Retention.optional(),
    /** The machine's limits: private displays, the memory the runs' limits share, an attempt's copy. */
    limits: Limits.default({}),
    flows: z.record(
      z.string().regex(/^[a-z][a-z0-9-]*$/, 'flow names are lowercase words (a-z, 0-9, -)'),
      FlowConfig.refine(
        (f) => !drivesDesktop(f.runner) || f.computerUse?.privateDisplay === true || f.cap <= 1,
        {
          message:
            'a computer-use or replay flow on the real display drives the one mouse and keyboard: cap is at most 1 (or set computerUse.privateDisplay: true)',
          path: ['cap'],
        },
      )
        .refine(
          (f) =>
            (f.attempts ?? 1) <= 1 || (drivesDesktop(f.runner) && f.computerUse?.privateDisplay === true),
          {
            message:
              'attempts run side by side, each on its own display: a flow with attempts above 1 is a computer-use or replay flow with computerUse.privateDisplay: true',
            path: ['attempts'],
          },
        )
        .refine((f) => f.computerUse?.region === undefined || f.computerUse.monitor === undefined, {
          message: 'computerUse: give region or monitor, not both (a monitor is a region the server names)',
          path: ['computerUse', 'monitor'],
        }),
    ),
  })
  .superRefine((c, ctx) => {
    if (c.scheduler.backend === 'redis' && !c.redis)
      ctx.addIssue({
        code: 'custom',
        path: ['scheduler', 'backend'],
        message:
          'scheduler.backend is redis but there is no redis.url; add `redis: { url: redis://host:6379 }` (user config or config.yaml) or set the backend to local',
      });
    for (const [name, f] of Object.entries(c.flows)) {
      if (f.profile !== undefined && !Object.hasOwn(c.llm_profiles, f.profile))
        ctx.addIssue({
          code: 'custom',
          path: ['flows', name, 'profile'],
          message: `no llm_profiles entry "${f.profile}" (profiles: ${Object.keys(c.llm_profiles).join(', ') || 'none'}); add it to your user config or to config.yaml`,
        });
      if (f.visionProfile !== undefined && !Object.hasOwn(c.vision_profiles, f.visionProfile))
        ctx.addIssue({
          code: 'custom',
          path: ['flows', name, 'visionProfile'],
          message: `no vision_profiles entry "${f.visionProfile}" (profiles: ${Object.keys(c.vision_profiles).join(', ') || 'none'}); add it to your user config or to config.yaml`,
        });
    }
  });
export type ProjectConfig = z.output<typeof ProjectConfig>;

export const CardFrontMatter = z
  .object({
    id: z.string().optional(),
    // `title: True` or `title: 2024` is YAML for a boolean or a number; a person meant the text.
    title: z
      .union([z.string(), z.number(), z.boolean()])
      .transform(String)
      .pipe(z.string().min(1, 'a card needs a title')),
    flow: z.string().min(1, 'a card needs a flow (one of the flows in config.yaml)'),
    status: CardStatus.optional(),
    workspace: z.string().min(1).optional(),
    command: z.optional(Command),
    /** This card's run is this many attempts (overrides its flow's `attempts:`; host/src/core/attempts.ts). */
    attempts: z.number().int().min(1).max(MAX_ATTEMPTS).optional(),
    /** A shell command run on the run's private display, in its workspace, before the agent starts (launch the app). */
    setup: z.string().min(1).max(65_536).optional(),
    /** Position in its column (lower first); the host writes it when a card is moved. */
    rank: z.number().optional(),
    /** Host-written run state. */
    lastRun: z.string().optional(),
    failures: z.number().int().min(0).optional(),
    nextTryAt: z.string().optional(),
    lastError: z.string().optional(),
    /** What a card needs before it can run (e.g. a provider key), shown on the card. */
    needs: z.string().optional(),
    /** This card's runs' token and cost budgets, instead of the flow's (`maxTokens`, `maxCost`). */
    maxTokens: z.number().int().min(1).max(1e12).optional(),
    maxCost: z.number().positive().max(1e6).optional(),
  })
  .passthrough();
export type CardFrontMatter = z.infer<typeof CardFrontMatter>;

export interface Card {
  file: string;
  front: CardFrontMatter;
  body: string;
  /** Absolute workspace folder (front matter `workspace`, relative to the project folder; default: the project folder). */
  workspace: string;
}

export class ProjectError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(`${file}: ${message}`);
  }
}

function zodMessage(err: z.ZodError): string {
  return err.issues.map((i) => `${i.path.length ? i.path.join('.') + ': ' : ''}${i.message}`).join('; ');
}

const FRONT = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/**
 * A card from its file's text. `parseYaml` parses the front matter (the board passes its cache of
 * earlier parses, card-parse-cache.ts); it throws on invalid YAML as YAML.parse does.
 */
export function parseCard(
  file: string,
  text: string,
  projectDir: string,
  parseYaml: (front: string) => unknown = (front) => YAML.parse(front, { prettyErrors: true }),
): Card {
  const m = FRONT.exec(text);
  if (!m)
    throw new ProjectError(
      file,
      'no front matter: a card starts with a `---` line, YAML fields, and another `---` line',
    );
  let raw: unknown;
  try {
    raw = parseYaml(m[1]!) ?? {};
  } catch (err) {
    throw new ProjectError(file, `front matter is not valid YAML: ${(err as Error).message}`);
  }
  const parsed = CardFrontMatter.safeParse(raw);
  if (!parsed.success) throw new ProjectError(file, `invalid card: ${zodMessage(parsed.error)}`);
  const front = parsed.data;
  const workspace = path.resolve(projectDir, front.workspace ?? '.');
  return { file, front, body: m[2]!, workspace };
}

export function loadCard(file: string, projectDir: string): Card {
  let text: string;
  try {
    text = readRegularFileSync(file);
  } catch (err) {
    throw new ProjectError(file, `cannot read the card file: ${(err as Error).message}`);
  }
  return parseCard(path.resolve(file), text, projectDir);
}
