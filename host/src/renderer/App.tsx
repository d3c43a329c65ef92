/**
 * The container: owns the board data and the selection, talks to the host through BoardApi, and hands
 * plain data to the presentational Board, Inspector and SettingsView.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import { COLUMNS, COLUMN_TITLES, type BoardView, type CardDetail } from '../shared/board-types.ts';
import { applyDelta } from './board-delta.ts';
import { cardOfHash, hashOf, isFiltering, matches, NO_FILTER, type CardFilter } from './card-filter.ts';
import { Board, type MoveIntent } from './Board.tsx';
import { Inspector } from './Inspector.tsx';
import { Recordings } from './Recordings.tsx';
import { SettingsView } from './SettingsView.tsx';

/** Applies a move locally so the board answers at once; the host's answer replaces it. */
function applyMove(board: BoardView, m: MoveIntent): BoardView {
  const moved = board.cards.find((c) => c.id === m.id);
  if (!moved) return board;
  const rest = board.cards.filter((c) => c.id !== m.id);
  const target = rest.filter((c) => c.column === m.to);
  const before = target[m.index];
  const at = before ? rest.indexOf(before) : rest.length;
  rest.splice(at, 0, { ...moved, column: m.to });
  return { ...board, cards: rest };
}

function focusCard(id: string): void {
  document.querySelector<HTMLElement>(`[data-card-handle="${CSS.escape(id)}"]`)?.focus();
}

/** Search and filters over the board's cards (title or file, flow, column). */
function FilterBar({
  board,
  filter,
  onFilter,
}: {
  board: BoardView;
  filter: CardFilter;
  onFilter: (f: CardFilter) => void;
}) {
  const shown = isFiltering(filter) ? board.cards.filter((c) => matches(c, filter)).length : undefined;
  return (
    <div className="topbar filters" role="search" aria-label="Filter cards">
      <input
        type="search"
        aria-label="Search cards by title"
        placeholder="Search cards…"
        value={filter.text}
        onChange={(e) => onFilter({ ...filter, text: e.target.value })}
        onKeyDown={(e) => {
          if (e.key === 'Escape' && filter.text) {
            e.preventDefault();
            onFilter({ ...filter, text: '' });
          }
        }}
      />
      <select
        aria-label="Flow"
        value={filter.flow}
        onChange={(e) => onFilter({ ...filter, flow: e.target.value })}
      >
        <option value="">All flows</option>
        {board.flows.map((f) => (
          <option key={f.name} value={f.name}>
            {f.name}
          </option>
        ))}
      </select>
      <select
        aria-label="Status"
        value={filter.status}
        onChange={(e) => onFilter({ ...filter, status: e.target.value as CardFilter['status'] })}
      >
        <option value="">All columns</option>
        {COLUMNS.map((c) => (
          <option key={c} value={c}>
            {COLUMN_TITLES[c]}
          </option>
        ))}
      </select>
      {shown !== undefined && (
        <>
          <span role="status">
            {shown} of {board.cards.length} cards
          </span>
          <button onClick={() => onFilter(NO_FILTER)}>Clear filters</button>
        </>
      )}
    </div>
  );
}

export function App({ api }: { api: BoardApi }) {
  const [board, setBoard] = useState<BoardView>();
  // the card a URL names (`#card=<id>`) opens at once; opening or closing one updates the URL
  const [selected, setSelectedState] = useState<string | undefined>(() => cardOfHash(location.hash));
  const setSelected = useCallback((id: string | undefined): void => {
    setSelectedState(id);
    history.replaceState(null, '', `${location.pathname}${hashOf(id)}`);
  }, []);
  useEffect(() => {
    const onHash = (): void => setSelectedState(cardOfHash(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  const [filter, setFilter] = useState<CardFilter>(NO_FILTER);
  const [detail, setDetail] = useState<CardDetail>();
  const [settings, setSettings] = useState(false);
  const [error, setError] = useState<string>();
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const settingsButton = useRef<HTMLButtonElement>(null);
  const boardRef = useRef(board);
  boardRef.current = board;

  const refreshDetail = useCallback(async () => {
    const id = selectedRef.current;
    if (id && !id.startsWith('broken:')) setDetail(await api.card({ id }));
  }, [api]);

  const refresh = useCallback(async () => {
    try {
      const b = await api.board();
      boardRef.current = b;
      setBoard(b);
      await refreshDetail();
    } catch (e) {
      setError((e as Error).message);
    }
  }, [api, refreshDetail]);

  useEffect(() => {
    void refresh();
    let full: ReturnType<typeof setTimeout> | undefined;
    let detailTimer: ReturnType<typeof setTimeout> | undefined;
    const off = api.onBoardChanged((delta) => {
      const b = boardRef.current;
      if (delta && b && b.version === delta.from) {
        // the usual case: apply what changed, no re-fetch of the board
        const next = applyDelta(b, delta);
        boardRef.current = next;
        setBoard(next);
        // the open card's details (runs, questions) again when more than its progress changed
        const id = selectedRef.current;
        const mine = delta.cards.find((c) => c.id === id);
        const before = b.cards.find((c) => c.id === id);
        const moreThanProgress =
          mine && JSON.stringify({ ...mine, progress: 0 }) !== JSON.stringify({ ...before, progress: 0 });
        if ((moreThanProgress || (id && delta.removed.includes(id))) && !detailTimer)
          detailTimer = setTimeout(() => {
            detailTimer = undefined;
            refreshDetail().catch((e: Error) => setError(e.message));
          }, 50);
        return;
      }
      if (delta && b && delta.to <= b.version) return; // already in the board we have
      // missed a delta (or reconnected): the whole board, coalesced
      full ??= setTimeout(() => {
        full = undefined;
        void refresh();
      }, 100);
    });
    return () => {
      off();
      if (full) clearTimeout(full);
      if (detailTimer) clearTimeout(detailTimer);
    };
  }, [api, refresh, refreshDetail]);

  useEffect(() => {
    if (!selected || selected.startsWith('broken:')) return setDetail(undefined);
    let live = true;
    api
      .card({ id: selected })
      .then((d) => live && setDetail(d))
      .catch((e: Error) => {
        if (!live) return;
        // a URL naming a card that is not (or no longer) on the board
        setError(`${e.message} (opened from a link to card "${selected}")`);
        setSelected(undefined);
      });
    return () => {
      live = false;
    };
  }, [api, selected, setSelected]);

  const onMove = (m: MoveIntent): void => {
    if (!board) return;
    setBoard(applyMove(board, m));
    api.move({ id: m.id, to: m.to, index: m.index }).then(
      () => setError(undefined),
      (e: Error) => {
        setError(e.message);
        void refresh();
      },
    );
  };

  if (!board) return <div className="loading">Loading the board…</div>;
  const running = board.cards.filter((c) => c.column === 'running').length;
  return (
    <div className={detail ? 'app with-inspector' : 'app'}>
      <header className="topbar">
        <h1>Runboard</h1>
        <span className="project" title={board.project}>
          {board.project}
        </span>
        <span className="slots" aria-label="Runs going">
          {running}/{board.maxConcurrency} running
          {board.flows.map((f) => (
            <span
              key={f.name}
              className={f.parkedUntil ? 'flowcap parked' : 'flowcap'}
              title={f.parkedUntil ? `rate limited: starts nothing until ${f.parkedUntil}` : undefined}
            >
              {f.name} {f.running}/{f.cap}
              {f.parkedUntil && ` · parked until ${new Date(f.parkedUntil).toLocaleTimeString()}`}
            </span>
          ))}
        </span>
        <Recordings api={api} onOpenCard={setSelected} />
        <button ref={settingsButton} onClick={() => setSettings(true)}>
          Settings
        </button>
      </header>
      {board.configError && (
        <div className="banner error" role="alert">
          config.yaml has an error (the last good config is in use): {board.configError}
        </div>
      )}
      {error && (
        <div className="banner error" role="alert">
          {error}
          <button className="close" onClick={() => setError(undefined)} aria-label="Dismiss">
            ✕
          </button>
        </div>
      )}
      <FilterBar board={board} filter={filter} onFilter={setFilter} />
      <main>
        <Board board={board} selected={selected} onSelect={setSelected} onMove={onMove} filter={filter} />
        {detail && (
          <Inspector
            api={api}
            detail={detail}
            onClose={() => {
              // back to the card the inspector showed, so the keyboard goes on where it was
              const id = selected;
              setSelected(undefined);
              if (id) requestAnimationFrame(() => focusCard(id));
            }}
            onChanged={() => void refresh()}
          />
        )}
      </main>
      {settings && (
        <SettingsView
          api={api}
          onClose={() => {
            setSettings(false);
            settingsButton.current?.focus();
          }}
        />
      )}
    </div>
  );
}
