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

/**
 * Flows and providers parked by a rate limit, until when (epoch ms): a run's end that says
 * `metrics.rateLimitedUntil` (a 429 past its retries), or a 429 with a reset the model proxy saw pass
 * during a run, whichever runner made the request (the run's `model-request` log line carries
 * `rateLimitedUntil`). The limit is the key's: the run's provider is parked (its flow, when it has none).
 * Waiting cards wait; running ones go on (their SDKs or CLIs retry on their own).
 */
export class RateLimitParks {
  /** Flows with no provider parked by their own run's report. */
  readonly flows = new Map<string, number>();
  readonly providers = new Map<string, number>();

  constructor(
    private readonly config: () => ProjectConfig,
    private readonly now: () => number,
  ) {}

  /** A run of `flow` met a rate limit until `until` (an ISO time): parks its key; answers whether it did. */
  park(flow: string | undefined, until: unknown): boolean {
    const t = Date.parse(String(until ?? ''));
    if (flow === undefined || !Number.isFinite(t) || t <= this.now()) return false;
    const cfg = this.config();
    const f = Object.hasOwn(cfg.flows, flow) ? cfg.flows[flow] : undefined;
    const provider = f ? flowProvider(f, cfg) : undefined;
    const parked = provider ? this.providers : this.flows;
    const key = provider ?? flow;
    if ((parked.get(key) ?? 0) >= t) return false;
    parked.set(key, t);
    return true;
  }

  /** A run event: a model request the provider answered 429 with a reset parks the run's key. */
  parkOn(flow: string | undefined, e: { type: string; data?: Record<string, unknown> | undefined }): boolean {
    return e.type === 'log' && e.data?.kind === 'model-request' && this.park(flow, e.data.rateLimitedUntil);
  }

  /** Each flow parked by its own rate limit or its provider's, until when (shown on the board). */
  parked(): Map<string, number> {
    const now = this.now();
    for (const m of [this.flows, this.providers]) for (const [k, t] of m) if (t <= now) m.delete(k);
    return parkedFlows(this.config(), this.flows, this.providers);
  }
}
