/**
 * What the supervisors of a fleet (scheduler.backend: redis) share through Redis: one BullMQ queue per
 * flow, the job a run becomes, and the stream that carries its records back to the supervisor the
 * board talks to. A job never holds a grant, a key or a path of the submitting machine: it names its
 * workspace by a project-relative name that each host maps to a folder it granted itself.
 */
import * as z from 'zod/mini';
import { Command, FlowSpec, RunId, RunResult } from '../../protocol/index.ts';
import { RunInputs } from './inputs.ts';
import type { HostPolicy } from './policy.ts';

/** BullMQ's queue of a flow (flow names are free text in config.yaml: only safe characters are kept). */
export function queueName(flow: string): string {
  const safe = flow.replace(/[^A-Za-z0-9_-]/g, '_');
  return `runboard-flow-${safe}-${Buffer.from(flow).toString('hex').slice(0, 16)}`;
}

/** The Redis stream that carries a run's events and output from the host that runs it. */
export function recordStream(runId: string): string {
  return `runboard:run:${runId}:records`;
}

/** The channel a cancel goes out on; hosts running the run stop it. */
export const CANCEL_CHANNEL = 'runboard:cancel';

/**
 * The version of the fleet's jobs, and of how its members treat them. Every supervisor of a fleet (the
 * board's and the hosts') must run the same one; a host refuses a job of another (`versionRefusal`).
 * 1: up to session 16 (before session 15's decision 103, a host's lease was BullMQ's lock, renewed
 * and judged by BullMQ's stalled check in every member; since, the hosts hold their jobs and the
 * board's supervisor alone judges a stall: an older member's stalled check could fail a newer host's
 * healthy run after a Redis restart, and the two said the same version). 2: session 17 on, leases
 * held by the hosts (decision 103), the version checked by every host.
 */
export const FLEET_JOB_VERSION = 2;

/** Why a host refuses a job of another version, with what to do (`v`: the job's, as Redis holds it). */
export function versionRefusal(host: string, v: unknown): string {
  const known = typeof v === 'number' && Number.isInteger(v);
  const older = !known || v < FLEET_JOB_VERSION;
  return `${host} refused the job: it is a fleet job of ${known ? `version ${v}` : 'no known version'} and ${host} runs version ${FLEET_JOB_VERSION}; every supervisor of a fleet must run the same Runboard release (an older one judges jobs' leases otherwise and can fail healthy runs): upgrade ${older ? "the board's supervisor that submitted it" : host}`;
}

/** A run as a job: everything a host needs, nothing only the submitting machine may hold. */
export const RunJob = z.object({
  v: z.literal(FLEET_JOB_VERSION),
  runId: RunId,
  flow: FlowSpec,
  /** The card's workspace, relative to its project (`.` for the project folder itself). */
  workspace: z.string().check(z.minLength(1), z.maxLength(1024)),
  command: z.optional(Command),
  card: z.object({
    id: z.optional(z.string().check(z.maxLength(200))),
    title: z.optional(z.string().check(z.maxLength(500))),
    /** The card file's text (agent runners read their task from it). */
    text: z.string().check(z.maxLength(1024 * 1024)),
  }),
  submittedAt: z.string(),
  /**
   * The fleet's global cap as the submitting board has it (its scheduler.maxConcurrency): the run starts
   * only while fewer runs of the fleet than this go (slots.ts). None: only the hosts' capacities bound it.
   */
  cap: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
  /** Its flow's cap as the submitting board has it (flows.<name>.cap): over that flow's runs of the fleet. */
  flowCap: z.optional(z.int().check(z.minimum(1), z.maximum(100_000))),
  /**
   * What the run reads besides its card and workspace (its card's folder, a recording, the prompt
   * folder, an extraction's input), shipped beside the job in Redis (inputs.ts). The flow's `prompt`
   * and `extract.input` paths are the board's and are never used on a host.
   */
  inputs: z.optional(RunInputs),
});
export type RunJob = z.infer<typeof RunJob>;

/** What a host answers with when the run ended (the job's return value). */
export const RunJobResult = z.object({
  host: z.string(),
  result: RunResult,
});
export type RunJobResult = z.infer<typeof RunJobResult>;

/** One entry of a run's record stream. */
export type RecordKind = 'events' | 'stdout' | 'stderr' | 'started';

// in a module of its own: the supervisor's start checks a fleet's URL without loading the job's schemas
export { redisOptions } from './redis-url.ts';

/** Who may run what, as a host of the fleet offers it. */
export interface HostOffer {
  /** A name for the host in records and reasons (default: its hostname). */
  name: string;
  /** The flows it pulls runs of. */
  flows: string[];
  /** Runs at once on this host, over all its flows. */
  capacity: number;
  /** Project-relative workspace name → a folder this host granted. */
  workspaces: Record<string, string>;
  /** The most a job's run may have here (fleet join's sandbox options): jobs narrow it, never widen it. */
  policy: HostPolicy;
}

/**
 * How long a job's lease lasts without renewal (BullMQ renews it at half of this): a host that died
 * is noticed after one to two leases. RUNBOARD_FLEET_LEASE_MS changes it (every member of a fleet
 * must use the same value).
 */
export const LEASE_MS = Math.max(1000, Number(process.env.RUNBOARD_FLEET_LEASE_MS) || 10_000);

/** `p`, or nothing after `ms` (closing clients of a Redis that may be unreachable). */
export async function withinMs(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}
