/**
 * A run's lifecycle, as the supervisor tracks it. Every process shares this one definition.
 *
 *   launching ──workerReady──▶ running ──workerFinished / exit──▶ ended(succeeded | failed | needs-input)
 *       │                        │
 *       │                        ├── cancel ───────────────▶ ended(cancelled)
 *       │                        ├── time limit ───────────▶ ended(timed-out)
 *       │                        └── silence / crash / ENOSPC ▶ ended(failed, reason)
 *       └── spawn or sandbox failure ─────────────────────▶ ended(failed, reason)
 *
 * `ended` is final: nothing moves a run out of it, and a second cancel only reports it.
 */
import type { RunStatus, TerminationReason } from './schemas.ts';

export type RunState =
  | { readonly kind: 'launching'; readonly since: number }
  | { readonly kind: 'running'; readonly since: number; readonly pid: number }
  | {
      readonly kind: 'ended';
      readonly status: Exclude<RunStatus, 'running'>;
      readonly reason: TerminationReason;
      readonly detail: string;
    };

export const RunState = {
  launching: (): RunState => ({ kind: 'launching', since: Date.now() }),
  running: (pid: number): RunState => ({ kind: 'running', since: Date.now(), pid }),
  ended: (status: Exclude<RunStatus, 'running'>, reason: TerminationReason, detail: string): RunState => ({
    kind: 'ended',
    status,
    reason,
    detail,
  }),
};

/** Exit codes of `runboard run` per final status (documented in docs/user-guide.md). */
export const ExitCodeForStatus: Record<Exclude<RunStatus, 'running'>, number> = {
  succeeded: 0,
  failed: 1,
  'needs-input': 3,
  'timed-out': 4,
  cancelled: 130,
};
