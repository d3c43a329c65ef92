/**
 * Following one run of a card through the supervisor's attach (scheduler.ts): its events as they come
 * (progress, the model proxy's rate-limit lines), then its end, or the attach lost. Output is not
 * streamed here (see RunStreams). Resolves once the run's end, or its loss, was handed on.
 */
import type { RunEvent, RunResult } from '@runboard/supervisor/protocol';
import type { SupervisorClient } from './supervisor-client.ts';

export interface Following {
  event(e: RunEvent): void;
  end(result: RunResult): void;
  /** The attach was lost, or refused: `why` in words. */
  lost(why: string): void;
  /** Whether the card still follows this run (an ended run's end is made sure of after the attach). */
  following(): boolean;
}

export function followRun(client: SupervisorClient, runId: string, f: Following): Promise<void> {
  return new Promise<void>((resolve) => {
    const end = (result: RunResult): void => {
      f.end(result);
      resolve();
    };
    const lost = (err: Error): void => {
      f.lost(`lost the run ${runId}: ${err.message}`);
      resolve();
    };
    client
      .attach(
        runId,
        { onEvent: (e) => f.event(e), onEnd: end, onLost: lost },
        { events: 0, stdout: Number.MAX_SAFE_INTEGER, stderr: Number.MAX_SAFE_INTEGER },
      )
      .then((run) => {
        // attach answers with the run as it is; an ended run still gets its didEnd, but be sure
        if (run.status !== 'running') setTimeout(() => f.following() && end(run), 2000);
      })
      .catch(lost);
  });
}
