/**
 * The machine's part of the scheduler's caps (issue 33): private displays and memory (config `limits:`),
 * and `effectiveCap`, the least of every cap that applies to a card now (the machine's displays and
 * memory, its provider's, its flow's, the column's and the board's run slots), with the one that holds
 * it, said on the card. Pure; unit-tested in scheduler-machine.test.ts.
 *
 * Displays: a machine runs finitely many private display stacks (Xvfb, D-Bus, AT-SPI, a window manager:
 * ~250 MiB each with their worker, docs/bench-computer-use.md, and the X display numbers :100–:999), so
 * every run on a private display (each attempt of a card) takes one of `limits.displays`.
 * Memory: a run whose flow sets `sandbox.memory` holds that much of `limits.memory` (default: the
 * machine's memory) while it goes. A flow with no `sandbox.memory` is not counted: its default limit
 * (half the machine) guards against one run taking the machine and is no reservation; counting it
 * would let two runs fill a machine that runs eight (decision 85).
 */
import { memorySizeBytes } from '@runboard/supervisor/protocol';
import type { ProjectConfig } from './project.ts';

/** What one display stack and its worker take (docs/bench-computer-use.md: ~235 MiB per attempt). */
const DISPLAY_BYTES = 256 * 1024 ** 2;
/** The X display numbers the supervisor picks from (:100–:999, supervisor/src/node/displays.ts). */
const DISPLAY_NUMBERS = 900;

/** Private displays at once when `limits.displays` says nothing: as many stacks as half the memory holds. */
export function defaultDisplays(totalMemoryBytes: number): number {
  return Math.max(1, Math.min(DISPLAY_NUMBERS, Math.floor(totalMemoryBytes / 2 / DISPLAY_BYTES)));
}

export interface MachinePolicy {
  /** The most runs on private displays at once, and whether the number is the config's. */
  displays: number;
  displaysConfigured: boolean;
  /** The memory (bytes) the counted runs' limits share, and the config's words for it. */
  memoryBytes: number;
  memorySaid?: string;
  /** Flows whose runs take a private display. */
  displayFlows: Readonly<Record<string, true>>;
  /** The memory limit (bytes) of a run of each flow that sets `sandbox.memory`. */
  flowMemory: Readonly<Record<string, number>>;
}

/** The policy's machine input from the config and the machine's memory. */
export function machinePolicy(cfg: ProjectConfig, totalMemoryBytes: number): MachinePolicy {
  const displayFlows: Record<string, true> = {};
  const flowMemory: Record<string, number> = {};
  for (const [name, f] of Object.entries(cfg.flows)) {
    if (f.computerUse?.privateDisplay) displayFlows[name] = true;
    const mem = f.sandbox?.memory ? memorySizeBytes(f.sandbox.memory, totalMemoryBytes) : undefined;
    if (mem) flowMemory[name] = mem;
  }
  const said = cfg.limits.memory;
  return {
    displays: cfg.limits.displays ?? defaultDisplays(totalMemoryBytes),
    displaysConfigured: cfg.limits.displays !== undefined,
    memoryBytes: (said && memorySizeBytes(said, totalMemoryBytes)) || totalMemoryBytes,
    ...(said ? { memorySaid: said } : {}),
    displayFlows,
    flowMemory,
  };
}

/** One cap on a card now: how many hold it (`used`) of how many (`max`), per unit of the card's run. */
export interface CapNow {
  used: number;
  max: number;
  /** What one run of the card takes of it (1, or its memory limit in bytes). Default 1. */
  each?: number;
}

/** Every cap that applies to a card of one flow now; a cap that does not apply is left out. */
export interface CapsNow {
  column?: CapNow & { name: string };
  flow?: CapNow & { name: string };
  provider?: CapNow & { name: string };
  displays?: CapNow & { configured: boolean };
  memory?: CapNow & { said?: string };
  slots?: CapNow;
}

export type CapName = keyof CapsNow;

/** The least of the caps: how many more runs may start now, which cap says so, and its words. */
export interface EffectiveCap {
  room: number;
  holder: CapName | null;
  why?: string;
}

const GiB = (b: number): string => `${(b / 1024 ** 3).toFixed(1)} GiB`;

/** Why the cap `name` holds a card (it has no room for one more run). */
function holds(name: CapName, c: CapsNow): string {
  switch (name) {
    case 'column':
      return `column "${c.column!.name}" holds ${c.column!.used} (limit ${c.column!.max}): no new runs until it has room`;
    case 'flow':
      return `flow "${c.flow!.name}" is at its cap (${c.flow!.used}/${c.flow!.max})`;
    case 'provider':
      return `provider "${c.provider!.name}" is at its cap (${c.provider!.used}/${c.provider!.max} runs over all flows: providers.${c.provider!.name}.maxConcurrent)`;
    case 'displays':
      return `waiting for a private display: all ${c.displays!.max} are in use (limits.displays${c.displays!.configured ? '' : ', by default from the machine’s memory'})`;
    case 'memory': {
      const m = c.memory!;
      return `waiting for memory: runs going hold ${GiB(m.used)} of ${GiB(m.max)} (limits.memory${m.said ? ` ${m.said}` : ': the machine’s'}) and this run’s limit is ${GiB(m.each ?? 1)} (sandbox.memory)`;
    }
    case 'slots':
      return `all ${c.slots!.max} run slots are busy`;
  }
}

/** From the narrowest cap to the broadest: of two caps with the same room, the first is named. */
const ORDER: readonly CapName[] = ['column', 'flow', 'provider', 'displays', 'memory', 'slots'];

/**
 * The effective cap of a card now: the least room over its caps (the machine's displays and memory,
 * the provider's, the flow's, the column's, the run slots), and the cap that holds it when there is
 * no room (`why`, said on the card).
 */
export function effectiveCap(c: CapsNow): EffectiveCap {
  let best: EffectiveCap = { room: Number.POSITIVE_INFINITY, holder: null };
  for (const name of ORDER) {
    const cap = c[name];
    if (!cap) continue;
    const each = Math.max(1, cap.each ?? 1);
    // a run larger than the whole cap still starts alone (it would otherwise wait for ever)
    const room = cap.used === 0 && each > cap.max ? 1 : Math.max(0, Math.floor((cap.max - cap.used) / each));
    if (room < best.room) best = { room, holder: name };
  }
  return best.holder !== null && best.room === 0 ? { ...best, why: holds(best.holder, c) } : best;
}

/** A run the policy counts: its flow, and whether it is a judge's (no display, the default memory). */
export interface MachineRun {
  flow: string;
  judge?: boolean;
}

/** Counts the private displays and memory the runs hold as the policy starts cards. */
export class MachineCounts {
  private displaysUsed = 0;
  private memoryUsed = 0;

  constructor(
    private readonly policy: MachinePolicy,
    running: readonly MachineRun[],
  ) {
    for (const r of running) this.take(r.flow, r.judge);
  }

  /** The machine's caps for a run of `flow` now (to give effectiveCap). */
  caps(flow: string, judge = false): Pick<CapsNow, 'displays' | 'memory'> {
    const p = this.policy;
    const out: Pick<CapsNow, 'displays' | 'memory'> = {};
    if (judge) return out;
    if (Object.hasOwn(p.displayFlows, flow))
      out.displays = { used: this.displaysUsed, max: p.displays, configured: p.displaysConfigured };
    const each = Object.hasOwn(p.flowMemory, flow) ? p.flowMemory[flow] : undefined;
    if (each !== undefined)
      out.memory = {
        used: this.memoryUsed,
        max: p.memoryBytes,
        each,
        ...(p.memorySaid ? { said: p.memorySaid } : {}),
      };
    return out;
  }

  /** A run of `flow` starts (or is going). */
  take(flow: string, judge = false): void {
    const c = this.caps(flow, judge);
    if (c.displays) this.displaysUsed++;
    if (c.memory) this.memoryUsed += c.memory.each ?? 0;
  }
}
