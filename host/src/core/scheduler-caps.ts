/**
 * Caps per provider key, across flows (config `providers: { openai: { maxConcurrent: 3 } }`), and rate
 * limits parked per provider: the part of the scheduler's policy (scheduler-policy.ts) that counts runs
 * by the provider whose key they use rather than by flow. A card of a flow on provider P waits while P
 * is parked (a run of any flow on P met a rate limit whose reset lies beyond its retries) or while
 * P's runs are at P's cap, saying which holds it. Pure; unit-tested in scheduler-policy.test.ts.
 */
import { flowProvider } from './launch.ts';
import type { ProjectConfig } from './project.ts';

export interface ProviderPolicy {
  /** The provider each flow's runs use (flows with none are absent). */
  flowProvider: Readonly<Record<string, string>>;
  /** Most runs at once per provider, over all flows. */
  maxConcurrent?: Readonly<Record<string, number>>;
  /** Providers parked until a time (epoch ms) by a rate limit. */
  parkedUntil?: Readonly<Record<string, number>>;
}

/** Why a card of `flow` must wait for its provider now, and until when (parked); or undefined. */
export type ProviderHold = { why: string; until?: number } | undefined;

/** Counts the runs per provider as the policy starts cards. */
export class ProviderCounts {
  private readonly running = new Map<string, number>();

  constructor(
    private readonly policy: ProviderPolicy,
    runningFlows: readonly string[],
  ) {
    for (const f of runningFlows) this.count(f, 1);
  }

  /** What holds a card of `flow` now (its provider parked, or at its cap), or undefined. */
  hold(flow: string, now: number): ProviderHold {
    const p = this.providerOf(flow);
    if (p === undefined) return undefined;
    const until = own(this.policy.parkedUntil, p);
    if (until !== undefined && until > now)
      return {
        why: `provider "${p}" is parked until ${new Date(until).toISOString()}: its rate limit resets then (a run hit it)`,
        until,
      };
    const cap = own(this.policy.maxConcurrent, p);
    const n = this.running.get(p) ?? 0;
    if (cap !== undefined && n >= cap)
      return {
        why: `provider "${p}" is at its cap (${n}/${cap} runs over all flows: providers.${p}.maxConcurrent)`,
      };
    return undefined;
  }

  /** A card of `flow` starts. */
  take(flow: string): void {
    this.count(flow, 1);
  }

  private providerOf(flow: string): string | undefined {
    return own(this.policy.flowProvider, flow);
  }

  private count(flow: string, n: number): void {
    const p = this.providerOf(flow);
    if (p !== undefined) this.running.set(p, (this.running.get(p) ?? 0) + n);
  }
}

const own = <T>(r: Readonly<Record<string, T>> | undefined, k: string): T | undefined =>
  r && Object.hasOwn(r, k) ? r[k] : undefined;

/** The policy's provider input from the config (flows' providers, `providers:` caps) and the parked keys. */
export function providerPolicy(cfg: ProjectConfig, parked: ReadonlyMap<string, number>): ProviderPolicy {
  const flowProviders: Record<string, string> = {};
  for (const [name, f] of Object.entries(cfg.flows)) {
    const p = flowProvider(f, cfg);
    if (p) flowProviders[name] = p;
  }
  const maxConcurrent: Record<string, number> = {};
  for (const [p, c] of Object.entries(cfg.providers))
    if (c.maxConcurrent !== undefined) maxConcurrent[p] = c.maxConcurrent;
  return { flowProvider: flowProviders, maxConcurrent, parkedUntil: Object.fromEntries(parked) };
}

/** Each flow parked by its own rate limit or its provider's, until when (the later of the two). */
export function parkedFlows(
  cfg: ProjectConfig,
  byFlow: ReadonlyMap<string, number>,
  byProvider: ReadonlyMap<string, number>,
): Map<string, number> {
  const out = new Map(byFlow);
  for (const [name, f] of Object.entries(cfg.flows)) {
    const p = flowProvider(f, cfg);
    const until = p ? byProvider.get(p) : undefined;
    if (until !== undefined) out.set(name, Math.max(until, out.get(name) ?? 0));
  }
  return out;
}
