/**
 * The copy of a folder that is not a git repository a run worked in (a card's attempts, issue 33:
 * supervisor/src/node/workspace-copy.ts), and the decision on it: keep (apply its changes to the folder;
 * refused, with the paths, when the folder changed one of them meanwhile) or discard.
 */
import type { RunResult } from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';
import { useSettle } from './settle.ts';

/** What Keep applied: how many paths, and the first of them. */
function keptText(applied: string[]): string {
  const n = applied.length;
  const shown = applied.slice(0, 5).join(', ');
  return `kept: ${n} path${n === 1 ? '' : 's'} applied${n ? ` (${shown}${n > 5 ? ', …' : ''})` : ''}`;
}

const copyState = (r: RunResult) => ({ state: r.copy?.state, applied: r.copy?.applied });

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
  const { settled, busy, error, settle } = useSettle(api, run, copyState, onChanged);
  const { state, applied } = settled;
  if (!copy) return null;
  return (
    <section className="worktree" aria-label="Workspace copy">
      <h4>
        Copy of <code>{copy.source}</code>{' '}
        <span className="muted">
          ({copy.files} file{copy.files === 1 ? '' : 's'} copied when the run started)
        </span>
      </h4>
      {run.status === 'running' ? (
        <p className="muted">the run works in its copy; its changes can be kept when it ends</p>
      ) : (
        <div className="worktree-actions">
          {state === 'active' ? (
            <>
              <button
                className="primary"
                disabled={busy}
                title={`apply the run's changes to ${copy.source}`}
                onClick={() => void settle('keep')}
              >
                Keep (apply its changes)
              </button>
              <button disabled={busy} onClick={() => void settle('discard')}>
                Discard
              </button>
            </>
          ) : (
            <span className="muted">{state === 'kept' ? keptText(applied ?? []) : 'discarded'}</span>
          )}
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </section>
  );
}
