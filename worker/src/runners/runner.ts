import type { ClarifyingQuestion, Metrics, WorkerSpec, WorkerStatus } from '@runboard/supervisor/protocol';

/** What a runner reports when it is done. The supervisor checks it against what it saw. */
export interface RunnerOutcome {
  status: WorkerStatus;
  exitCode: number | null;
  summary: string;
  metrics: Metrics;
  /** Questions for the person when status is needs-input (they end up in the card's `## Questions`). */
  questions?: ClarifyingQuestion[];
  /** The person took over (computer-use: Escape on the real display): the supervisor records `cancelled`. */
  cancelledBy?: 'person';
}

/** What a runner may do besides its work: report progress and log (its tools' output goes to stdout/stderr). */
export interface RunnerContext {
  spec: WorkerSpec;
  /** Environment for the tools a runner starts: the worker's own, minus its run token. */
  env: NodeJS.ProcessEnv;
  progress(fraction: number | undefined, message: string): void;
  log(level: 'debug' | 'info' | 'warn' | 'error', message: string, data?: Record<string, unknown>): void;
}

/** One runner per file in this folder (command, codex, claude, computer-use, …). */
export interface Runner {
  run(ctx: RunnerContext): Promise<RunnerOutcome>;
  /** Asked to stop (SIGTERM reached the worker): wind down quickly; the supervisor SIGKILLs after its grace. */
  cancel(): void;
}
