/**
 * A run's liveness timers: the worker's heartbeat, the flow's stall timeout (no output at all) and
 * its time limit. Each calls `expire(reason, detail)` when it runs out; the run then stops.
 */
import type { TerminationReason } from '../protocol/index.ts';

/** Until its first heartbeat a worker is still starting (Node, the bundle, the sandbox). */
export const START_ALLOWANCE_MS = 30_000;
export const DEFAULT_HEARTBEAT_TIMEOUT_MS = 15_000;
const MAX_HEARTBEAT_INTERVAL_MS = 1000;

export interface LivenessOptions {
  heartbeatTimeoutMs?: number | undefined;
  stallTimeoutMs?: number | undefined;
  timeoutMs?: number | undefined;
  /** Whether the timers still matter (false once the run is stopping or ended). */
  live(): boolean;
  expire(reason: TerminationReason, detail: string): void;
}

export class Liveness {
  /** The last heartbeat (ISO time), null before the first. */
  lastHeartbeat: string | null = null;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  private limitTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: LivenessOptions) {}

  get heartbeatTimeoutMs(): number {
    return this.o.heartbeatTimeoutMs ?? DEFAULT_HEARTBEAT_TIMEOUT_MS;
  }

  /** Workers beat several times per timeout, so one late beat never kills a healthy worker. */
  get heartbeatIntervalMs(): number {
    return Math.max(50, Math.min(MAX_HEARTBEAT_INTERVAL_MS, Math.floor(this.heartbeatTimeoutMs / 4)));
  }

  /**
   * The worker was spawned: the heartbeat, stall and time-limit clocks start. `heartbeat` false: no
   * worker beats (the jail's init runs a plain command; the jail's status pipe is its liveness).
   */
  start(heartbeat = true): void {
    if (heartbeat) this.armHeartbeat();
    this.output();
    const ms = this.o.timeoutMs;
    if (ms)
      this.limitTimer = setTimeout(
        () => this.o.expire('timeout', `the flow's time limit of ${ms} ms passed`),
        ms,
      );
  }

  /** A heartbeat from the worker. */
  beat(): void {
    this.lastHeartbeat = new Date().toISOString();
    this.armHeartbeat();
  }

  /** Output of any kind (not heartbeats): the stall clock restarts. */
  output(): void {
    const ms = this.o.stallTimeoutMs;
    if (!ms || !this.o.live()) return;
    clearTimeout(this.stallTimer);
    this.stallTimer = setTimeout(
      () =>
        this.o.expire(
          'stalled',
          `no output from the run for ${ms} ms (the flow's stall timeout); it was killed as stalled`,
        ),
      ms,
    );
  }

  clear(): void {
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.stallTimer);
    clearTimeout(this.limitTimer);
  }

  private armHeartbeat(): void {
    clearTimeout(this.heartbeatTimer);
    // On a loaded machine a worker's start can take longer than a tight heartbeat timeout, so until its
    // first heartbeat it gets at least START_ALLOWANCE_MS.
    const timeout = this.lastHeartbeat
      ? this.heartbeatTimeoutMs
      : Math.max(this.heartbeatTimeoutMs, START_ALLOWANCE_MS);
    this.heartbeatTimer = setTimeout(() => {
      const last = this.lastHeartbeat ? `last heartbeat at ${this.lastHeartbeat}` : 'no heartbeat at all';
      this.o.expire(
        'heartbeat-timeout',
        `the worker sent no heartbeat for ${timeout} ms (${last}); it was killed as hung`,
      );
    }, timeout);
  }
}
