/**
 * Settings → Trash: the cards deleted from the board (files in cards/.trash), newest first, each with
 * Restore (back under its old file name, or a new one when that was taken meanwhile).
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { TrashedCard } from '../shared/board-types.ts';

export function TrashSection({ api, onRestored }: { api: BoardApi; onRestored: (id?: string) => void }) {
  const [items, setItems] = useState<TrashedCard[]>();
  const [error, setError] = useState<string>();
  const load = (): void => {
    api.trash().then(setItems, (e: Error) => setError(e.message));
  };
  useEffect(load, [api]);
  if (!items) return null;
  return (
    <section className="providers trash" aria-labelledby="trash-title">
      <h3 id="trash-title">Trash ({items.length})</h3>
      {items.length === 0 && <p className="muted small">No deleted cards.</p>}
      <ul>
        {items.slice(0, 100).map((t) => (
          <li key={t.name} className="provider-line">
            <span>{t.file}</span>
            <span className="muted small">deleted {new Date(t.at).toLocaleString()}</span>
            <button
              aria-label={`Restore ${t.file}`}
              onClick={() =>
                void api.restoreCard({ name: t.name }).then(
                  (r) => {
                    load();
                    onRestored(r.id);
                  },
                  (e: Error) => setError(e.message),
                )
              }
            >
              Restore
            </button>
          </li>
        ))}
      </ul>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
