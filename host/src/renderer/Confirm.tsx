/**
 * What changed outside the board and waits for a person's confirm (docs/user-guide-board.md,
 * "Changed outside the board"): config.yaml (the board keeps its last confirmed flows meanwhile) and
 * cards that would run by themselves (queued, or a schedule). One button each; a confirm names the
 * text the board showed, so a file changed again after it was shown is refused and shown anew.
 */
import { useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { BoardView } from '../shared/board-types.ts';

/** How many waiting cards the banner lists by name (the rest are counted). */
const LISTED = 5;

export function ConfirmBanner({
  board,
  api,
  onOpen,
  onError,
}: {
  board: BoardView;
  api: BoardApi;
  onOpen: (id: string) => void;
  onError: (message: string) => void;
}) {
  const [busy, setBusy] = useState<string>();
  const cards = board.cards.filter((c) => c.confirm);
  const change = board.configChange;
  if (!change && cards.length === 0) return null;
  const act = (key: string, call: () => Promise<unknown>): void => {
    setBusy(key);
    call().then(
      () => setBusy(undefined),
      (e: Error) => {
        setBusy(undefined);
        onError(e.message);
      },
    );
  };
  return (
    <section className="banner warn confirm-banner" aria-labelledby="confirm-banner-title">
      <div>
        <strong id="confirm-banner-title">Changed outside the board</strong>
        <span>
          {' '}
          — an editor, a script or a run wrote these files. Nothing here runs, schedules or widens a sandbox
          until you confirm it.
        </span>
        {change && (
          <div className="confirm-item">
            <span>
              <code>config.yaml</code> (the board keeps its last confirmed flows meanwhile):
            </span>
            <ul aria-label="What changed in config.yaml">
              {change.changes.map((c) => (
                <li key={c}>{c}</li>
              ))}
            </ul>
            <button
              className="primary"
              disabled={busy === 'config'}
              onClick={() => act('config', () => api.confirmConfig({ digest: change.digest }))}
            >
              Confirm config.yaml
            </button>
          </div>
        )}
        {cards.length > 0 && (
          <ul className="confirm-cards" aria-label="Cards waiting for your confirm">
            {cards.slice(0, LISTED).map((c) => (
              <li key={c.id}>
                <span>
                  <strong>{c.title}</strong> <code>{c.file}</code>: {c.confirm!.reason}
                </span>
                <button onClick={() => onOpen(c.id)} aria-label={`Open ${c.title}`}>
                  Open
                </button>
                <button
                  className="primary"
                  disabled={busy === c.id}
                  aria-label={`Confirm ${c.title}`}
                  onClick={() => act(c.id, () => api.confirmCard({ id: c.id, digest: c.confirm!.digest }))}
                >
                  Confirm
                </button>
              </li>
            ))}
            {cards.length > LISTED && <li>and {cards.length - LISTED} more (each shows it on its card)</li>}
          </ul>
        )}
      </div>
    </section>
  );
}
