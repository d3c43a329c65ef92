/**
 * Keep or discard what a run worked in, its git worktree (RunPanel.tsx `Worktree`) or its copy of a
 * folder that is not a git repository (WorkspaceCopy.tsx): one settle for both (`settleWorktree`
 * answers with the run as it is after), busy while it goes, its error in words, and what `pick`
 * reads of the run (the worktree's or the copy's state): of the run shown, so a run that ended or was
 * settled elsewhere (the attempts' judge, `runboard keep`) shows as it is now, not as first shown.
 */
import { useState } from 'react';
import type { RunResult } from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';

export interface Settle<S> {
  /** What `pick` read of the run: as shown first, then as the last settle left it. */
  settled: S;
  busy: boolean;
  error: string;
  setError: (message: string) => void;
  settle: (how: 'keep' | 'discard') => Promise<void>;
}

export function useSettle<S>(
  api: BoardApi,
  run: RunResult,
  pick: (run: RunResult) => S,
  onChanged: () => void,
): Settle<S> {
  // the run as the last settle answered it, while the panel still shows the run it settled; a newer
  // run (the inspector reloaded: the run ended, the attempts' judge kept or discarded it) wins
  const [after, setAfter] = useState<{ of: RunResult; run: RunResult }>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const settle = async (how: 'keep' | 'discard'): Promise<void> => {
    setBusy(true);
    setError('');
    try {
      setAfter({ of: run, run: await api.settleWorktree({ runId: run.runId, how }) });
      onChanged();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return { settled: pick(after?.of === run ? after.run : run), busy, error, setError, settle };
}
