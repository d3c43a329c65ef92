/**
 * Rate limits parked (scheduler.ts): a run that met a rate limit beyond its retry budget says until when
 * (metrics.rateLimitedUntil), and instead of failing run after run its provider's flows (every flow on
 * the key: scheduler-caps.ts), or its own flow when it has no provider, wait until then. The state is
 * here; what it holds back is the policy's (scheduler-policy.ts, through `policy`).
 */
import type { RunResult } from '@runboard/supervisor/protocol';
import { flowProvider } from './launch.ts';
import type { ProjectConfig } from './project.ts';
import { parkedFlows, providerPolicy } from './scheduler-caps.ts';
import type { AdmissionInput } from './scheduler-admission.ts';

export class RateParking implements AdmissionInput {
  /** Flows parked by their own rate limit (no provider), until when (epoch ms). */
  private readonly byFlow = new Map<string, number>();
  /** Providers parked by a rate limit (a run of any flow on the key met it), until when (epoch ms). */
  private readonly byProvider = new Map<string, number>();

  constructor(
    private readonly config: () => ProjectConfig,
    private readonly now: () => number,
  ) {}

  /** Parks what the run's rate limit holds, until its reset; returns that time, or undefined. */
  park(result: RunResult): number | undefined {
    const until = Date.parse(String(result.metrics.rateLimitedUntil ?? ''));
    if (!Number.isFinite(until) || until <= this.now()) return undefined;
    // the limit is the key's: every flow on the run's provider waits (scheduler-caps.ts)
    const cfg = this.config();
    const flow = cfg.flows[result.flow];
    const provider = flow && Object.hasOwn(cfg.flows, result.flow) ? flowProvider(flow, cfg) : undefined;
    const parked = provider ? this.byProvider : this.byFlow;
    const key = provider ?? result.flow;
    parked.set(key, Math.max(until, parked.get(key) ?? 0));
    return until;
  }

  /** Flows parked by a rate limit (their own, or their provider's), and until when (epoch ms). */
  parked(): Map<string, number> {
    const now = this.now();
    for (const m of [this.byFlow, this.byProvider]) for (const [k, until] of m) if (until <= now) m.delete(k);
    return parkedFlows(this.config(), this.byFlow, this.byProvider);
  }

  /** The policy's input: the parked flows, and the providers' caps and parking. */
  policy(): { parkedFlows: Record<string, number>; providers: ReturnType<typeof providerPolicy> } {
    return {
      parkedFlows: Object.fromEntries(this.byFlow),
      providers: providerPolicy(this.config(), this.byProvider),
    };
  }
}
