/**
 * The scheduler's admission: may this start now, and why not. The dispatch loop (Scheduler.tick) asks
 * one object, `Admission`; the answer is the pure policy's (scheduler-policy.ts `decide`) over inputs
 * that each part of the scheduler gives from the state it keeps:
 *   - the Queued column, the runs going, the global and flow caps and the column limits: the scheduler
 *     (`columnInput`);
 *   - a card's attempts (scheduler-attempts.ts, `attemptsInput`): entries queued ahead of the column,
 *     entries holding run slots, their waiting reasons said on their card, and the launch of the ones
 *     the policy lets start;
 *   - provider caps and rate-limit parking (scheduler-caps.ts's RateLimitParks, `parkingInput`);
 *   - the machine's private displays and memory (scheduler-machine.ts, `machineInput`);
 *   - the real display, one run at a time, held by a run this board did not start
 *     (scheduler-resources.ts, `realDisplayInput`);
 *   - flows that cannot run until something is done: no supervisor (`SupervisorWatch`), config.yaml
 *     not confirmed, a provider without a key (scheduler-keys.ts, `blockedInput`).
 * `admit` is pure (scheduler-admission.test.ts).
 */
import { totalmem } from 'node:os';
import { drivesDesktop } from '@runboard/supervisor/protocol';
import { flowProvider } from './launch.ts';
import type { Card, CardStatus, ProjectConfig } from './project.ts';
import type { CardAttempts } from './scheduler-attempts.ts';
import { providerPolicy, type RateLimitParks } from './scheduler-caps.ts';
import type { SupervisorClient } from './supervisor-client.ts';
import { machinePolicy } from './scheduler-machine.ts';
import {
  decide,
  type PolicyDecision,
  type PolicyInput,
  type QueuedCard,
  type RunningCard,
} from './scheduler-policy.ts';

/** The exclusive resource of computer-use runs on the real display (one at a time: the supervisor's rule). */
export const REAL_DISPLAY = 'the real display';

/** One input of the admission: what it adds to the policy's view, and what it does with the answer. */
export interface AdmissionInput {
  /** Entries it queues ahead of the Queued column (a running card's attempts). */
  queued?(): QueuedCard[];
  /** Entries of its own holding run slots. */
  running?(): RunningCard[];
  /** Its part of the policy's input (caps, parking, busy resources, blocked flows). */
  policy?(): Partial<Omit<PolicyInput, 'queued' | 'running' | 'now'>>;
  /** The waiting reasons of its entries, said on the cards they belong to. */
  explain?(waiting: Record<string, string>): Record<string, string>;
  /** Starts an entry of its own that the policy let start; false when `id` is not its. */
  launch?(id: string): boolean;
}

/** Which queued entries start now and why the others wait, over `base` and the inputs as they are now. */
export function admit(base: PolicyInput, inputs: readonly AdmissionInput[]): PolicyDecision {
  let input: PolicyInput = {
    ...base,
    queued: [...inputs.flatMap((i) => i.queued?.() ?? []), ...base.queued],
    running: [...inputs.flatMap((i) => i.running?.() ?? []), ...base.running],
  };
  for (const i of inputs) if (i.policy) input = { ...input, ...i.policy() };
  const decision = decide(input);
  let waiting = decision.waiting;
  for (const i of inputs) if (i.explain) waiting = i.explain(waiting);
  return { ...decision, waiting };
}

export class Admission {
  constructor(private readonly inputs: readonly AdmissionInput[]) {}

  /** May each queued entry start now, and why not (the policy over every input). */
  decide(base: PolicyInput): PolicyDecision {
    return admit(base, this.inputs);
  }

  /** Starts `id` through the input it belongs to; false when it is a card of the Queued column. */
  launch(id: string): boolean {
    for (const i of this.inputs) if (i.launch?.(id)) return true;
    return false;
  }
}

/** The global and flow caps and the column limits of `cfg`, with the cards each column holds now. */
export function columnInput(
  cfg: ProjectConfig,
  cards: readonly Card[],
): Pick<PolicyInput, 'maxConcurrency' | 'flowCaps' | 'columnLimits' | 'columnCounts'> {
  const counts: Partial<Record<CardStatus, number>> = {};
  for (const c of cards) counts[c.front.status ?? 'backlog'] = (counts[c.front.status ?? 'backlog'] ?? 0) + 1;
  return {
    maxConcurrency: cfg.scheduler.maxConcurrency,
    flowCaps: Object.fromEntries(Object.entries(cfg.flows).map(([n, f]) => [n, f.cap])),
    columnLimits: cfg.scheduler.columnLimits,
    columnCounts: counts,
  };
}

/** A card's attempts as entries of the policy (scheduler-attempts.ts). */
export function attemptsInput(attempts: CardAttempts): AdmissionInput {
  return {
    queued: () => attempts.pending(), // attempts of running cards first
    running: () => attempts.running(),
    explain: (waiting) => {
      const out: Record<string, string> = {};
      for (const [id, why] of Object.entries(waiting)) {
        const d = attempts.owns(id) ? attempts.describe(id) : undefined;
        if (!d) out[id] = why;
        else out[d.cardId] ??= `attempt ${d.attempt} of ${d.of} waits: ${why}`;
      }
      return out;
    },
    launch: (id) => {
      if (!attempts.owns(id)) return false;
      attempts.launch(id);
      return true;
    },
  };
}

/** Flows and provider keys parked by a rate limit until its reset, and the providers' caps (scheduler-caps.ts). */
export function parkingInput(config: () => ProjectConfig, parks: RateLimitParks): AdmissionInput {
  return {
    policy: () => ({
      parkedFlows: Object.fromEntries(parks.flows),
      providers: providerPolicy(config(), parks.providers),
    }),
  };
}

/** The machine's private displays and memory as caps (config `limits:`; scheduler-machine.ts). */
export function machineInput(config: () => ProjectConfig): AdmissionInput {
  return { policy: () => ({ machine: machinePolicy(config(), totalmem()) }) };
}

/** Computer-use flows on the real display hold it one run at a time; `busy`: held by others' runs. */
export function realDisplayInput(
  config: () => ProjectConfig,
  busy: () => Record<string, string>,
): AdmissionInput {
  return {
    policy: () => ({
      exclusive: Object.fromEntries(
        Object.entries(config().flows)
          .filter(([, f]) => drivesDesktop(f.runner) && !f.computerUse?.privateDisplay)
          .map(([n]) => [n, REAL_DISPLAY]),
      ),
      busy: busy(),
    }),
  };
}

/**
 * Whether the supervisor is there. Until a supervisor is back no card starts (a launch then would only
 * wait and fail); what a person running `serve` sees in its terminal says what happens.
 */
export class SupervisorWatch {
  /** Why no card may start now: the supervisor went away and is not back yet. */
  down: string | undefined;

  constructor(client: SupervisorClient, kick: () => void) {
    client.on('lost', (why) => {
      process.emitWarning(`runboard: ${why}; starting a new supervisor`);
      this.down = 'waiting for the supervisor: it went away and a new one is being started';
      kick();
    });
    client.on('reconnected', () => {
      process.emitWarning('runboard: connected to the supervisor again');
      this.down = undefined;
      kick();
    });
  }
}

/**
 * Flows that cannot start until something is done: every flow while `all` says why (no supervisor,
 * config.yaml not confirmed), else a flow whose provider has no key (`keyless` says how to set it).
 */
export function blockedInput(
  config: () => ProjectConfig,
  all: () => string | undefined,
  keyless: (provider: string) => string | undefined,
): AdmissionInput {
  return {
    policy: () => {
      const cfg = config();
      return {
        blockedFlows: Object.fromEntries(
          Object.entries(cfg.flows).flatMap(([n, f]) => {
            const provider = flowProvider(f, cfg);
            const why = all() ?? (provider ? keyless(provider) : undefined);
            return why ? [[n, why]] : [];
          }),
        ),
      };
    },
  };
}
