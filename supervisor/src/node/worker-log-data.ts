/**
 * What a worker's `worker/log` may say about itself. The worker runs inside the run's jail beside the
 * run's own code, so its log data is the run's word: it may not use the kinds the supervisor itself
 * writes into a run's events (a live ask, its answer, a grant, the worktree, the display, …), which the
 * board and `runboard run` act on. A worker line with such a kind keeps its text and data, under
 * `claimedKind`, and is shown as the run's own log line (a run that forged "the run waits for the
 * person" would otherwise move its card to Needs input with words of its choosing).
 */

/** Kinds only the supervisor writes (read, write, permission-denied and session are also the worker's). */
export const SUPERVISOR_KINDS: ReadonlySet<string> = new Set([
  'agent-sandbox-off',
  'ask',
  'ask-answer',
  'ask-granted',
  'ask-not-granted',
  'ask-refused',
  'connect',
  'copy',
  'delete',
  'diff',
  'display',
  'display-teardown',
  'ended',
  'grant',
  'launching',
  'memory-limit-off',
  'model-request',
  'no-key',
  'none',
  'recording',
  'resume',
  'resume-failed',
  'run',
  'running',
  'runtime-sockets-open',
  'vision',
  'worktree',
]);

export function workerLogData(
  data: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!data || typeof data.kind !== 'string' || !SUPERVISOR_KINDS.has(data.kind)) return data;
  const { kind, ...rest } = data;
  return { ...rest, claimedKind: kind };
}
