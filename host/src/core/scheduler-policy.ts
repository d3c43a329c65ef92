/**
 * The scheduler's policy, pure: given the Queued column (in order), what runs, the caps and the time,
 * say which cards start now, why the others wait, and when to look again. No I/O, no clock of its own:
 * the Scheduler (scheduler.ts) feeds it and carries out its answer. Unit-tested in scheduler-policy.test.ts.
 */
import type { CardStatus } from './project.ts';
import { ProviderCounts, type ProviderPolicy } from './scheduler-caps.ts';
import { effectiveCap, MachineCounts, type MachinePolicy } from './scheduler-machine.ts';

export interface QueuedCard {
  id: string;
  flow: string;
  /** Epoch ms before which the card must not start (backoff after failures). */
  notBefore?: number;
}

export interface RunningCard {
  id: string;
  flow: string;
  /** A judge's run (a card's attempts): no display, the default memory limit (scheduler-machine.ts). */
  judge?: boolean;
}

export interface PolicyInput {
  /** The Queued column, top first: this order is the queue order. */
  queued: readonly QueuedCard[];
  /** Cards whose runs are launching or going. */
  running: readonly RunningCard[];
  maxConcurrency: number;
  /** Cap per flow; a flow missing here is not configured and cannot start. */
  flowCaps: Readonly<Record<string, number>>;
  /** Column limits (start nothing while a column holds `max` or more cards) and current counts. */
  columnLimits?: Readonly<Partial<Record<CardStatus, number>>>;
  columnCounts?: Readonly<Partial<Record<CardStatus, number>>>;
  /**
   * Flows parked until a time (epoch ms): a run of the flow hit a provider rate limit whose reset lies
   * beyond its retry budget, so new runs would only fail the same way until then.
   */
  parkedFlows?: Readonly<Record<string, number>>;
  /**
   * Flows whose runs need a resource only one run at a time may hold, by the resource's name: computer-use
   * flows on the real display ("the real display"; the supervisor refuses a second one). One
   * run of all these flows together holds it, whatever their caps.
   */
  exclusive?: Readonly<Record<string, string>>;
  /** Resources held by something this board did not start (a refusal said so): why, shown on cards. */
  busy?: Readonly<Record<string, string>>;
  /**
   * Flows that cannot run until a person does something (their provider has no API key): why. Their
   * cards wait, with no backoff and no failure counted, and start once it is done.
   */
  blockedFlows?: Readonly<Record<string, string>>;
  /** Caps and rate-limit parking per provider key, across flows (scheduler-caps.ts). */
  providers?: ProviderPolicy;
  /** The machine's private displays and memory (config `limits:`; scheduler-machine.ts). */
  machine?: MachinePolicy;
  now: number;
}

export interface PolicyDecision {
  /** Cards to start now, in queue order. */
  start: string[];
  /** Why each other queued card waits (shown on the card). */
  waiting: Record<string, string>;
  /** Earliest time a backoff ends, when one is pending: look again then. */
  wakeAt?: number;
}

/** Consecutive-failure backoff: base * 2^(failures-1), capped (at 5 minutes by default). 0 when no failures. */
export function backoffDelay(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

export function decide(input: PolicyInput): PolicyDecision {
  const start: string[] = [];
  const waiting: Record<string, string> = {};
  let wakeAt: number | undefined;

  const perFlow = new Map<string, number>();
  for (const r of input.running) perFlow.set(r.flow, (perFlow.get(r.flow) ?? 0) + 1);
  // exclusive resources held, and by whom (a running card, or what the refusal said)
  const held = new Map<string, string>(Object.entries(input.busy ?? {}));
  for (const r of input.running) {
    const res = input.exclusive?.[r.flow];
    if (res && !held.has(res)) held.set(res, `card ${r.id} (flow "${r.flow}") is using it`);
  }
  let free = input.maxConcurrency - input.running.length;
  const providers = input.providers
    ? new ProviderCounts(
        input.providers,
        input.running.map((r) => r.flow),
      )
    : undefined;

  const machine = input.machine ? new MachineCounts(input.machine, input.running) : undefined;

  let blockedBy: string | undefined;
  for (const [column, max] of Object.entries(input.columnLimits ?? {})) {
    const count = input.columnCounts?.[column as CardStatus] ?? 0;
    if (max !== undefined && count >= max) {
      blockedBy = `column "${column}" holds ${count} (limit ${max}): no new runs until it has room`;
      break;
    }
  }

  for (const card of input.queued) {
    if (blockedBy) {
      waiting[card.id] = blockedBy;
      continue;
    }
    if (card.notBefore !== undefined && card.notBefore > input.now) {
      waiting[card.id] = `backoff: next try at ${new Date(card.notBefore).toISOString()}`;
      wakeAt = wakeAt === undefined ? card.notBefore : Math.min(wakeAt, card.notBefore);
      continue;
    }
    const parkedUntil = input.parkedFlows?.[card.flow];
    if (parkedUntil !== undefined && parkedUntil > input.now) {
      waiting[card.id] =
        `flow "${card.flow}" is parked until ${new Date(parkedUntil).toISOString()}: the provider's rate limit resets then`;
      wakeAt = wakeAt === undefined ? parkedUntil : Math.min(wakeAt, parkedUntil);
      continue;
    }
    const provider = providers?.hold(card.flow, input.now);
    if (provider?.until !== undefined) {
      waiting[card.id] = provider.why;
      wakeAt = wakeAt === undefined ? provider.until : Math.min(wakeAt, provider.until);
      continue;
    }
    const blocked =
      input.blockedFlows && Object.hasOwn(input.blockedFlows, card.flow)
        ? input.blockedFlows[card.flow]
        : undefined;
    if (blocked !== undefined) {
      waiting[card.id] = blocked;
      continue;
    }
    const cap = Object.hasOwn(input.flowCaps, card.flow) ? input.flowCaps[card.flow] : undefined;
    if (cap === undefined) {
      waiting[card.id] =
        `flow "${card.flow}" is not in config.yaml: add it there, or Edit the card to pick one of its flows`;
      continue;
    }
    const inFlow = perFlow.get(card.flow) ?? 0;
    if (inFlow >= cap) {
      waiting[card.id] = `flow "${card.flow}" is at its cap (${inFlow}/${cap})`;
      continue;
    }
    if (provider) {
      waiting[card.id] = provider.why;
      continue;
    }
    const res = input.exclusive?.[card.flow];
    if (res && held.has(res)) {
      waiting[card.id] = `waiting for ${res}: ${held.get(res)!}`;
      continue;
    }
    // the least of the machine's caps and the run slots (the flow's and provider's are checked above)
    const room = effectiveCap({
      ...machine?.caps(card.flow),
      slots: { used: input.maxConcurrency - free, max: input.maxConcurrency },
    });
    if (room.room <= 0) {
      waiting[card.id] = room.why!;
      continue;
    }
    start.push(card.id);
    if (res) held.set(res, `card ${card.id} (flow "${card.flow}") is using it`);
    perFlow.set(card.flow, inFlow + 1);
    providers?.take(card.flow);
    machine?.take(card.flow);
    free--;
  }
  return wakeAt === undefined ? { start, waiting } : { start, waiting, wakeAt };
}
