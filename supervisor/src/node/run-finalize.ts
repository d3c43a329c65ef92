/**
 * The final record of a run: what the jail measured and the worker reported goes into its result, its
 * worktree's changes become a commit, its private display is torn down.
 */
import { rmSync } from 'node:fs';
import path from 'node:path';
import { LIVE_FRAME_FILE, type RunEvent, type RunResult, type TerminationReason } from '../protocol/index.ts';
import { keepSession } from './agent-session.ts';
import { signalName, type FinishedReport, type JailExit } from './classify-end.ts';
import type { PrivateDisplay } from './displays.ts';
import type { JailOutput } from './output-files.ts';
import type { LaunchSpec } from './run-deps.ts';
import type { RunLog } from './run-log.ts';
import { agentCli } from './run-prepare.ts';
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

/** What writing a run's final record uses of the run (Run.finalize, run.ts). */
export interface Ending {
  readonly spec: LaunchSpec;
  readonly result: RunResult;
  readonly log: RunLog<JailOutput>;
  readonly display: PrivateDisplay | undefined;
  readonly artifactsDir: string | undefined;
  modelRequests(): number;
  /** The agent CLI's session id, as the worker reported it. */
  agentSession(): string | undefined;
  /** When the run started (ms since the epoch). */
  readonly startedAt: number;
  event(type: RunEvent['type'], message: string, data?: Record<string, unknown>): void;
  /** Does one part of the record; a part that fails is logged and the others still happen. */
  step(what: string, f: () => unknown): Promise<void>;
}

/**
 * The run's final record, once its processes and routes are gone: the private display torn down, the
 * worktree's changes committed, an agent session kept for an ask, the end in result.json and
 * events.jsonl, the logs closed with the bytes they hold.
 */
export async function writeFinalRecord(
  run: Ending,
  status: Exclude<RunResult['status'], 'running'>,
  reason: TerminationReason,
  detail: string,
): Promise<void> {
  const display = run.display;
  if (display)
    await run.step('the private display teardown', async () => {
      // the live view's frame (a worker that was killed did not remove it): only the steps stay
      rmSync(path.join(run.artifactsDir!, LIVE_FRAME_FILE), { force: true });
      await tearDownDisplay(display, run.result, run.event);
    });
  if (run.modelRequests()) run.result.metrics = { ...run.result.metrics, modelRequests: run.modelRequests() };
  await run.step('recording the worktree', () => recordWorktree(run.result, run.spec.card.title, run.event));
  // A claude run stopped at an ask keeps its session, to be continued once the person allows it.
  const session = run.agentSession();
  const cli = agentCli(run.spec.flow.runner);
  if (status === 'needs-input' && run.result.asks?.length && cli && session)
    await run.step('keeping the agent session', async () => {
      if (await keepSession(cli, run.spec.scratchDir, run.spec.logDir, session))
        run.result.session = { cli, id: session };
    });
  const endedAt = Date.now();
  Object.assign(run.result, {
    status,
    termination: { reason, detail },
    endedAt: new Date(endedAt).toISOString(),
    durationMs: endedAt - run.startedAt,
    summary: run.result.summary || detail,
  });
  run.event('ended', `${status}: ${detail}`, { status, reason });
  await run.step('closing the run logs', () => run.log.close());
  const { committed, dropped } = run.log.output;
  run.result.stdoutBytes = committed.stdout;
  run.result.stderrBytes = committed.stderr;
  if (dropped) run.result.metrics = { ...run.result.metrics, droppedOutputBytes: dropped };
  await run.step('writing result.json', () => run.log.writeResultAsync(run.result));
}
