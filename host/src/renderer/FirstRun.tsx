/**
 * The first-run checklist: grant the project's folder, (optionally) set a model key, try a card. It
 * shows until a folder is granted and a card has run (or the person hides it), and then goes away.
 */
import type { ReactNode } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { BoardView } from '../shared/board-types.ts';

export interface FirstRunState {
  /** Folders cards need granted (none: every card's folder is). */
  ungranted: string[];
  /** Some card has run (or runs). */
  tried: boolean;
  /**
   * The card to try: a backlog card with no runs, of a flow that needs no key when there is one, whose
   * file reads when there is one; `writing` when its file does not read now (being written: decision
   * 114), so that it cannot run until it does.
   */
  toTry?: { id: string; title: string; writing?: boolean };
}

export function firstRunState(board: BoardView, keyless: (flow: string) => boolean): FirstRunState {
  const ungranted = [
    ...new Set(board.cards.flatMap((c) => (c.grant?.state === 'none' ? [c.grant.folder] : []))),
  ];
  const tried = board.cards.some(
    (c) => c.runId !== undefined || (c.column !== 'backlog' && c.column !== 'queued'),
  );
  const candidates = board.cards.filter((c) => c.column === 'backlog' && !c.broken);
  const readable = candidates.filter((c) => !c.unreadable);
  const pool = readable.length > 0 ? readable : candidates;
  const pick = pool.find((c) => keyless(c.flow)) ?? pool[0];
  if (!pick) return { ungranted, tried };
  return {
    ungranted,
    tried,
    toTry: { id: pick.id, title: pick.title, ...(pick.unreadable ? { writing: true } : {}) },
  };
}

function Step({ done, children }: { done: boolean; children: ReactNode }) {
  return (
    <li className={done ? 'done' : undefined}>
      <span className="check" aria-hidden="true">
        {done ? '✓' : '○'}
      </span>
      {done && <span className="sr-only">done: </span>}
      {children}
    </li>
  );
}

export function FirstRun({
  api,
  state,
  keys,
  onChanged,
  onOpen,
  onDismiss,
  onError,
}: {
  api: BoardApi;
  state: FirstRunState;
  /** The key step's content (the compact key panel), or undefined when no flow needs a key. */
  keys: ReactNode;
  onChanged: () => void;
  onOpen: (id: string) => void;
  onDismiss: () => void;
  /** Says why the board refused a grant or a run. */
  onError: (message: string) => void;
}) {
  const granted = state.ungranted.length === 0;
  const refused = (e: Error): void => onError(e.message);
  const writing = 'its file is being written: it can run once the file reads again';
  return (
    <section className="first-run" aria-label="Getting started">
      <div className="first-run-head">
        <h2>Getting started</h2>
        <button className="close" onClick={onDismiss} aria-label="Hide getting started">
          ✕
        </button>
      </div>
      <ol>
        <Step done={granted}>
          {granted ? (
            'Runs may use the project’s folder (granted).'
          ) : (
            <>
              Let runs use {state.ungranted.length === 1 ? 'the folder' : 'the folders'} of these cards (they
              see nothing outside it):{' '}
              {state.ungranted.map((f) => (
                <button key={f} onClick={() => void api.grantFolder({ path: f }).then(onChanged, refused)}>
                  Grant {f}
                </button>
              ))}
            </>
          )}
        </Step>
        {keys && <li className="keys">{keys}</li>}
        <Step done={state.tried}>
          {state.tried ? (
            'A card has run: its live log is in its inspector.'
          ) : state.toTry ? (
            <>
              Try a card:{' '}
              <button
                className="primary"
                disabled={!granted || state.toTry.writing}
                title={state.toTry.writing ? writing : undefined}
                onClick={() =>
                  void api.requeue({ id: state.toTry!.id }).then(() => onOpen(state.toTry!.id), refused)
                }
              >
                Run “{state.toTry.title}”
              </button>{' '}
              <span className="muted">
                {state.toTry.writing ? `(${writing})` : '(or drag any card into Queued)'}
              </span>
            </>
          ) : (
            'Try a card: make one with New card, then press Run in its inspector.'
          )}
        </Step>
      </ol>
    </section>
  );
}
