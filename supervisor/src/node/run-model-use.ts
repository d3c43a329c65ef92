/**
 * What one run spends on models (Run keeps one: run.ts): the requests through its model routes, counted
 * as the run's log lines, and the taps the model proxy fills (proxy-usage.ts, proxy-debug.ts): the tally
 * of its answers' tokens and cost against the flow's budget, and the debug log (flow `debug`).
 */
import path from 'node:path';
import { MODEL_DEBUG_FILE, type FlowSpec, type ModelUsage } from '../protocol/index.ts';
import type { ModelRequestInfo } from './model-proxy.ts';
import { DebugLog, type ProxyTaps } from './proxy-debug.ts';
import { RunAccount } from './proxy-usage.ts';
import { modelRequestLine } from './run-prepare.ts';

export interface ModelUseHost {
  flow: FlowSpec;
  logDir: string;
  /** The run's sensitive values, kept out of the debug log. */
  secrets(): string[];
  /** The tally changed; `spent`: why the budget is spent, once, when it first is. */
  usage(usage: ModelUsage, spent: string | null): void;
  log(message: string, data: Record<string, unknown>): void;
}

export class RunModelUse {
  /** Undefined for a run with no model route (no provider, no vision). */
  readonly taps: ProxyTaps | undefined;
  private count = 0;

  constructor(private readonly host: ModelUseHost) {
    const { flow } = host;
    if (flow.provider || flow.vision)
      this.taps = {
        account: new RunAccount(flow.budget, flow.prices, flow.model, (u, spent) => host.usage(u, spent)),
        ...(flow.debug
          ? { debug: new DebugLog(path.join(host.logDir, MODEL_DEBUG_FILE), () => host.secrets()) }
          : {}),
      };
  }

  /** Requests made through the run's model routes so far. */
  get requests(): number {
    return this.count;
  }

  /** A request through one of the run's model routes: one line of its log. */
  request(info: ModelRequestInfo): void {
    this.count++;
    this.host.log(...modelRequestLine(info, this.count));
  }

  /** The run ends: the debug log is closed (what was written is in it). */
  async close(): Promise<void> {
    await this.taps?.debug?.close();
  }
}
