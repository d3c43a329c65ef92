/**
 * Scheduled runs: the host tells the supervisor its cards' schedules; the supervisor owns the timers
 * (it outlives the board) and records each fire as pending. While a board of the project is connected
 * it takes pending fires into its scheduler (the same queue, caps and backoff as a drag); while none
 * is, the supervisor starts the runs itself within the project's caps, and the board that opens later
 * claims them. See docs/protocol.md, "Schedules".
 */
import * as z from 'zod/mini';
import { notification, request } from './define.ts';
import { RunId } from './schemas.ts';

const Text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const CardPath = z.string().check(
  z.minLength(1),
  z.maxLength(4096),
  z.refine((p) => p.startsWith('/'), 'must be an absolute path'),
);
const Iso = z.string().check(z.maxLength(40));

export const MissedPolicy = z.enum(['skip', 'latest_once', 'all']);
export const OverlapPolicy = z.enum(['skip', 'queue']);

/** One card's schedule, as the host resolved it from the card's `schedule:` front matter. */
export const ScheduleSpec = z.object({
  cardPath: CardPath,
  cardId: Text(200),
  title: Text(500),
  /** Five-field cron; the supervisor checks it again (with the zone) and refuses what it cannot fire. */
  cron: Text(200),
  /** IANA zone, e.g. Europe/Berlin. */
  timezone: Text(100),
  /** The schedule in words, as shown to the person. */
  text: Text(500),
  missed: MissedPolicy,
  overlap: OverlapPolicy,
  /**
   * The board registered it as soon as it read the card (it did not wait for a person's Confirm): a
   * fire due since the card file was saved, while the board was connected, is the card's (decision
   * 111). Absent: it fires from when the supervisor hears of it.
   */
  fromSave: z.optional(z.boolean()),
});
export type ScheduleSpec = z.infer<typeof ScheduleSpec>;

/**
 * What became of one fire: waiting (pending), taken into the board's queue (queued), started by the
 * supervisor because no board was open (started), or skipped (why).
 */
export const ScheduleDecision = z.object({
  /** The fire time the schedule named. */
  fireAt: Iso,
  /** When it was decided. */
  at: Iso,
  decision: z.enum(['pending', 'queued', 'started', 'skipped']),
  /** The run a `started` fire began. */
  runId: z.optional(RunId),
  reason: z.string().check(z.maxLength(1000)),
});
export type ScheduleDecision = z.infer<typeof ScheduleDecision>;

export const ScheduleInfo = z.object({
  ...ScheduleSpec.shape,
  /** The project folder whose host registered the schedule. */
  project: CardPath,
  /** The next five fire times (ISO). */
  next: z.array(Iso),
  lastFire: z.optional(Iso),
  /** Fires not yet taken by a host, oldest first. */
  pending: z.array(Iso),
  /** Decisions, oldest first (the last 100). */
  history: z.array(ScheduleDecision),
  /** Runs the supervisor started (no board was open) that no board has claimed yet, oldest first. */
  started: z.array(z.object({ fireAt: Iso, runId: RunId })),
  /** Why the oldest pending fire has not started yet, while no board is open (e.g. a cap). */
  waiting: z.optional(z.string().check(z.maxLength(1000))),
});
export type ScheduleInfo = z.infer<typeof ScheduleInfo>;

/** Replaces the schedules of one project (the cards that have `schedule:`); unchanged ones keep their state. */
export const SetSchedules = request(
  'schedule/set',
  'host→supervisor',
  z.object({ project: CardPath, schedules: z.array(ScheduleSpec).check(z.maxLength(20_000)) }),
  z.object({ schedules: z.int() }),
);

/** The schedules the supervisor keeps (of one project, or all), with next fires, pending fires, history. */
export const ListSchedules = request(
  'schedule/list',
  'host→supervisor',
  z.object({ project: z.optional(CardPath) }),
  z.object({ now: Iso, schedules: z.array(ScheduleInfo) }),
);

/**
 * The host took a pending fire: queued the card, or skipped it (overlap) and says why. Idempotent: a
 * fire already taken answers `taken: false`.
 */
export const TakeScheduleFire = request(
  'schedule/take',
  'host→supervisor',
  z.object({
    cardPath: CardPath,
    fireAt: Iso,
    decision: z.enum(['queued', 'skipped']),
    reason: z.string().check(z.maxLength(1000)),
  }),
  z.object({ taken: z.boolean() }),
);

/** A schedule fired (sent to every connection that registered schedules): look at the pending fires. */
export const ScheduleDidFire = notification(
  'schedule/didFire',
  'supervisor→host',
  z.object({ project: CardPath, cardPath: CardPath, fireAt: Iso }),
);

/**
 * A board took over a run the supervisor started for a fire while no board was open (it now shows the
 * run on the card and follows it, or records its outcome). Idempotent: `claimed: false` when it was
 * claimed already.
 */
export const ClaimScheduledRun = request(
  'schedule/claim',
  'host→supervisor',
  z.object({ cardPath: CardPath, runId: RunId }),
  z.object({ claimed: z.boolean() }),
);

/** A card whose `schedule:` the supervisor cannot use, and why (the board shows the same on the card). */
export const RefusedSchedule = z.object({
  cardPath: CardPath,
  title: z.optional(z.string().check(z.maxLength(500))),
  error: z.string().check(z.maxLength(2000)),
});
export type RefusedSchedule = z.infer<typeof RefusedSchedule>;

/** A project registered with the supervisor: its schedules count, the refused ones, or why it cannot be read. */
export const ProjectInfo = z.object({
  project: CardPath,
  /** Usable schedules found in its cards. */
  schedules: z.int(),
  refused: z.array(RefusedSchedule),
  /** The project cannot be read (no config.yaml, no cards/): what to do. */
  error: z.optional(z.string().check(z.maxLength(2000))),
});
export type ProjectInfo = z.infer<typeof ProjectInfo>;

/**
 * Registers a project folder (`runboard init`): the supervisor reads its cards' schedules itself, at
 * once, at every start and every minute while no board of it is open, so they fire with no board ever
 * opened. Idempotent.
 */
export const RegisterProject = request(
  'project/register',
  'host→supervisor',
  z.object({ project: CardPath }),
  ProjectInfo,
);

/** The registered projects, their cards read again now. */
export const ListProjects = request(
  'project/list',
  'host→supervisor',
  z.object({}),
  z.object({ projects: z.array(ProjectInfo) }),
);
