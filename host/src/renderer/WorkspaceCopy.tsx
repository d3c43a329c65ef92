/**
 * The copy of a folder that is not a git repository a run worked in (a card's attempts, issue 33:
 * supervisor/src/node/workspace-copy.ts), and the decision on it: keep (apply its changes to the folder;
 * refused, with the paths, when the folder changed one of them meanwhile) or discard.
 */
import { useState } from 'react';
import type { RunResult } from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';

export function WorkspaceCopy({
  api,
  run,
  onChanged,
}: {
  api: BoardApi;
  run: RunResult;
  onChanged: () => void;
}) {
  const copy = run.copy;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [state, setState] = useState(copy?.state);
  const [applied, setApplied] = useState(copy?.applied);
  if (!copy) return null;
  const settle = async (how: 'keep' | 'discard'): Promise<void> => {
    setBusy(true);
    setError('');
    try {
      const after = await api.settleWorktree({ runId: run.runId, how });
      setState(after.copy?.state);
      setApplied(after.copy?.applied);
      onChanged();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section className="worktree" aria-label="Workspace copy">
      <h4>
        Copy of <code>{copy.source}</code> ({copy.files} file{copy.files === 1 ? '' : 's'})
      </h4>
      {run.status === 'running' ? (
        <p className="muted">the run works in its copy; its changes can be kept when it ends</p>
      ) : (
        <div className="worktree-actions">
          {state === 'active' ? (
            <>
              <button className="primary" disabled={busy} onClick={() => void settle('keep')}>
                Keep (apply to {copy.source})
              </button>
              <button disabled={busy} onClick={() => void settle('discard')}>
                Discard
              </button>
            </>
          ) : (
            <span className="muted">
              {state === 'kept' ? `kept: ${applied?.length ?? 0} paths applied` : 'discarded'}
            </span>
          )}
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </section>
  );
}
