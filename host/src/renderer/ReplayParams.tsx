/**
 * The inspector's "Replay parameters" form for a card of a replay flow: one field per parameter of its
 * workflow, filled with the card's value (`params:`) or showing the recorded one; Save writes the card's
 * `params:`, "Save and queue" then queues the card (docs/workflows.md, "Replay").
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { ReplayParamsView } from '../shared/replay-params.ts';

export function ReplayParamsSection({
  api,
  cardId,
  locked,
  onChanged,
}: {
  api: BoardApi;
  cardId: string;
  locked: boolean;
  onChanged: () => void;
}) {
  const [view, setView] = useState<ReplayParamsView>();
  const [values, setValues] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  useEffect(() => {
    setError('');
    setSaved('');
    api.replayParams({ id: cardId }).then(
      (v) => {
        setView(v);
        setValues(Object.fromEntries(v.params.map((p) => [p.name, p.value ?? ''])));
      },
      (e: Error) => setError(e.message),
    );
  }, [api, cardId]);
  if (!view?.replay) return null;
  const save = (queue: boolean): void => {
    setError('');
    setSaved('');
    api.setReplayParams({ id: cardId, params: values, queue }).then(
      () => {
        setSaved(queue ? 'Saved; the card is queued.' : 'Saved.');
        onChanged();
      },
      (e: Error) => setError(e.message),
    );
  };
  return (
    <section className="replay-params" aria-label="Replay parameters">
      <h3>Replay parameters</h3>
      {view.problem && <p className="muted">{view.problem}</p>}
      {error && <div className="banner error">{error}</div>}
      {view.params.length > 0 && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            save(false);
          }}
        >
          {view.params.map((p) => (
            <label key={p.name} className="field">
              <span>
                {p.name}
                {p.optional ? ' (optional)' : ''}
              </span>
              <input
                aria-label={p.name}
                type={p.sensitive ? 'password' : 'text'}
                value={values[p.name] ?? ''}
                placeholder={
                  p.sensitive ? (p.stored ? 'kept by the supervisor: empty keeps it' : '') : p.example
                }
                disabled={locked}
                onChange={(e) => setValues({ ...values, [p.name]: e.target.value })}
              />
              {p.description && <span className="muted">{p.description}</span>}
            </label>
          ))}
          <p className="muted">An empty field replays the recorded value (shown greyed).</p>
          <button type="submit" disabled={locked}>
            Save
          </button>{' '}
          <button type="button" disabled={locked} onClick={() => save(true)}>
            Save and queue
          </button>
          {saved && <span className="muted"> {saved}</span>}
        </form>
      )}
    </section>
  );
}
