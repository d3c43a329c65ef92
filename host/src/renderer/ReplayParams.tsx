/**
 * The inspector's "Replay parameters" form for a card of a replay flow: one field per parameter of its
 * workflow, filled with the card's value (`params:`) or showing the recorded one; Save writes the card's
 * `params:`, "Save and queue" then queues the card (docs/workflows.md, "Replay"). What was typed and not
 * saved stays with the card while another card is looked at (CardDraft.tsx), a sensitive value excepted.
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { ReplayParamsView } from '../shared/replay-params.ts';
import { StaleDraft, useCardDraft } from './CardDraft.tsx';

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
  // what the card gives now; typed values are a draft of the card's (decision 137), except a sensitive
  // parameter's, which lives in its field only: it is gone when the inspector shows another card
  const given = Object.fromEntries(
    (view?.params ?? []).filter((p) => !p.sensitive).map((p) => [p.name, p.value ?? '']),
  );
  const draft = useCardDraft<Record<string, string>>(cardId, 'replay-params', given);
  const [secrets, setSecrets] = useState<Record<string, string>>({});
  const values = { ...draft.value, ...secrets };
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  useEffect(() => {
    setError('');
    setSaved('');
    api.replayParams({ id: cardId }).then(setView, (e: Error) => setError(e.message));
  }, [api, cardId]);
  if (!view?.replay) return null;
  const save = (queue: boolean): void => {
    setError('');
    setSaved('');
    api
      .setReplayParams({ id: cardId, params: values, queue })
      .then(() => api.replayParams({ id: cardId }))
      .then(
        (v) => {
          // saved: the card holds it now, nothing is left unsaved
          setView(v);
          draft.drop();
          setSecrets({});
          setSaved(queue ? 'Saved; the card is queued.' : 'Saved.');
          onChanged();
        },
        (e: Error) => setError(e.message),
      );
  };
  const off = locked || draft.stale;
  return (
    <section className="replay-params" aria-label="Replay parameters">
      <h3>Replay parameters</h3>
      {view.problem && <p className="muted">{view.problem}</p>}
      {error && <div className="banner error">{error}</div>}
      {draft.stale && <StaleDraft what="Its parameters" onDiscard={draft.drop} />}
      {view.params.length > 0 && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (!off) save(false);
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
                onChange={(e) => {
                  const v = e.target.value;
                  if (p.sensitive) setSecrets((cur) => ({ ...cur, [p.name]: v }));
                  else draft.set((cur) => ({ ...cur, [p.name]: v }));
                }}
              />
              {p.description && <span className="muted">{p.description}</span>}
            </label>
          ))}
          <p className="muted">
            An empty field replays the recorded value (shown greyed).
            {view.params.some((p) => p.sensitive) &&
              ' A sensitive value you typed is not kept when you look at another card.'}
          </p>
          <button type="submit" disabled={off}>
            Save
          </button>{' '}
          <button type="button" disabled={off} onClick={() => save(true)}>
            Save and queue
          </button>
          {saved && <span className="muted"> {saved}</span>}
        </form>
      )}
    </section>
  );
}
