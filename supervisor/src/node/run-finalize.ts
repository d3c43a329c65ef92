/**
 * The final record of a run: what the jail measured and the worker reported goes into its result, its
 * worktree's changes become a commit, its private display is torn down.
 */
import path from 'node:path';
import type { RunResult } from '../protocol/index.ts';
import { signalName, type FinishedReport, type JailExit } from './classify-end.ts';
import type { PrivateDisplay } from './displays.ts';
import { commitWorktree } from './worktrees.ts';

type EventSink = (type: 'log' | 'error', message: string, data?: Record<string, unknown>) => void;

/** Folds the jail's measurements and the worker's report into the result (in place). */
export function recordEvidence(
  result: RunResult,
  exit: JailExit | null,
  rep: FinishedReport | null,
  jailSignal: string | null = null,
): void {
  // No exit line: the jail itself died, and its own signal is the one that ended the run.
  if (!exit && jailSignal) result.signal = jailSignal;
  if (exit) {
    result.bytesRead = exit.rchar;
    result.bytesWritten = exit.wchar;
    result.storageBytesRead = exit.readBytes;
    result.storageBytesWritten = exit.writeBytes;
    result.metrics = {
      ...result.metrics,
      cpuUserMs: exit.utimeMs,
      cpuSystemMs: exit.stimeMs,
      maxRssKb: exit.maxRssKb,
      // the jail's own part: moving the run's output into its log files
      ...(exit.jailCpuMs !== undefined ? { jailCpuMs: exit.jailCpuMs } : {}),
    };
    if (exit.signal) result.signal = signalName(exit.signal);
  }
  // The tool's exit code when the worker reported one (null: killed by a signal), else the worker's own.
  result.exitCode = rep ? rep.exitCode : (exit?.code ?? null);
  if (rep) {
    result.summary = rep.summary;
    if (rep.questions?.length) result.questions = rep.questions;
    result.metrics = { ...rep.metrics, ...result.metrics } as RunResult['metrics'];
  }
}

/** Stops the run's private display; its start and teardown times go into the metrics. */
export async function tearDownDisplay(
  display: PrivateDisplay,
  result: RunResult,
  event: EventSink,
): Promise<void> {
  const ms = await display.stop();
  event('log', `private display ${display.env.DISPLAY} torn down in ${Math.round(ms)} ms`, {
    kind: 'display-teardown',
    display: display.env.DISPLAY,
    teardownMs: Math.round(ms),
  });
  result.metrics = {
    ...result.metrics,
    displayStartMs: Math.round(display.startMs),
    displayTeardownMs: Math.round(ms),
  };
}

/** What the run changed in its worktree becomes a commit on its branch and a diff summary. */
export async function recordWorktree(
  result: RunResult,
  cardTitle: string | undefined,
  event: EventSink,
): Promise<void> {
  const wt = result.worktree;
  if (!wt || wt.state !== 'active') return;
  try {
    wt.diff = await commitWorktree(wt, result.runId, cardTitle ?? path.basename(result.card.path));
    event('log', `worktree diff: ${wt.diff.files.length} file(s), +${wt.diff.added} -${wt.diff.removed}`, {
      kind: 'diff',
      ...wt.diff,
    });
  } catch (err) {
    event('error', `could not record the worktree's changes: ${(err as Error).message}`);
  }
}
