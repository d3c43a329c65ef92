/**
 * The container: owns the board data and the selection, talks to the host through BoardApi, and hands
 * plain data to the presentational Board, Inspector and SettingsView.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import {
  COLUMNS,
  COLUMN_TITLES,
  type BoardView,
  type CardDetail,
  type Column,
  type FirstScreenView,
  type ProviderView,
} from '../shared/board-types.ts';
import { applyDelta } from './board-delta.ts';
import { cardOfHash, hashOf, isFiltering, matches, NO_FILTER, type CardFilter } from './card-filter.ts';
import { Board, type MoveIntent } from './Board.tsx';
import { CardEditor, SourceEditor, type EditorTarget } from './CardEditor.tsx';
import { ConfirmBanner } from './Confirm.tsx';
import { Inspector } from './Inspector.tsx';
import { Recordings } from './Recordings.tsx';
import { KeyPanel } from './Providers.tsx';
import { FirstRun, firstRunState } from './FirstRun.tsx';
import { ShortcutHelp } from './ShortcutHelp.tsx';
import { boardWithKeyNeeds, withKeyNeeds } from './key-needs.ts';
import { notesBetween, notifySetting, setNotifySetting } from './notify.ts';
import { SettingsView } from './SettingsView.tsx';

/**
 * The first screen the page came with (`runboard serve` puts it in the page: each column's first cards
 * and every column's count), so the board paints before the whole board is fetched. Read once.
 */
const FIRST_SCREEN: FirstScreenView | undefined = (() => {
  const el = document.getElementById('first-screen');
  try {
    return el?.textContent ? (JSON.parse(el.textContent) as FirstScreenView) : undefined;
  } catch {
    return undefined; // the whole board comes anyway
  } finally {
    el?.remove();
  }
})();

/** A board of the first screen only: a partial view until the whole board replaces it. */
const isFirstScreen = (b: BoardView | undefined): b is FirstScreenView => !!b && 'counts' in b;

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
  const [board, setBoard] = useState<BoardView | undefined>(FIRST_SCREEN);
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
  /** The card the board puts the focus back on (after the inspector or the source editor closed). */
  const [focusRequest, setFocusRequest] = useState<{ id: string }>();
  const [settings, setSettings] = useState(false);
  const [editor, setEditor] = useState<EditorTarget>();
  /** The card last moved to the trash, until undone or dismissed. */
  const [trashed, setTrashed] = useState<{ name: string; title: string }>();
  const newCardButton = useRef<HTMLButtonElement>(null);
  const [providers, setProviders] = useState<ProviderView[]>();
  const [keyPanelHidden, setKeyPanelHidden] = useState(false);
  /** The first-run checklist was hidden by the person (kept per project in this browser). */
  const [firstRunHidden, setFirstRunHidden] = useState<string[]>(() => {
    try {
      return JSON.parse(localStorage.getItem('runboard.firstRunHidden') ?? '[]') as string[];
    } catch {
      return [];
    }
  });
  const [help, setHelp] = useState(false);
  /** Providers the key panel asked for: they stay in it once set (with what the check said). */
  const [askedKeys, setAskedKeys] = useState<string[]>([]);
  const loadProviders = useCallback((): void => {
    api.providers().then(setProviders, () => undefined); // no supervisor yet: asked again on the next change
  }, [api]);
  const [error, setError] = useState<string>();
  const selectedRef = useRef(selected);
  selectedRef.current = selected;
  const settingsButton = useRef<HTMLButtonElement>(null);
  const boardRef = useRef(board);
  boardRef.current = board;

  /**
   * The open card's details, asked for by several paths at once (a delta's, a refresh's, the
   * selection's): the host answers them in parallel, so an answer may come after one asked for later.
   * Each ask takes a number; an answer older than the one shown is dropped (it took a cancelled run back
   * to "running", and nothing came after it to correct that).
   */
  const detailAsks = useRef({ asked: 0, shown: 0 });
  const askDetail = useCallback(
    async (id: string): Promise<{ d: CardDetail; newest: boolean }> => {
      const n = ++detailAsks.current.asked;
      const d = await api.card({ id });
      const newest = n > detailAsks.current.shown;
      if (newest) detailAsks.current.shown = n;
      return { d, newest };
    },
    [api],
  );
  const refreshDetail = useCallback(async () => {
    const id = selectedRef.current;
    if (!id || id.startsWith('broken:')) return;
    const { d, newest } = await askDetail(id);
    // an answer that comes after the card was closed (or another opened) must not open it again
    if (newest && selectedRef.current === id) setDetail(d);
  }, [askDetail]);

  /** Deltas applied so far: a board fetched while one was applied may be older than it. */
  const applied = useRef(0);
  /**
   * The whole board, asked for by several paths at once (the load, the event stream's (re)open, a
   * missed delta, a form's save): the host answers them in parallel, so an answer may come after one
   * asked for later. Each ask takes a number, as the card's details do (`askDetail`).
   */
  const boardAsks = useRef({ asked: 0, shown: 0 });
  const refresh = useCallback(async () => {
    try {
      const n = ++boardAsks.current.asked;
      const before = applied.current;
      const b = await api.board();
      // An answer to an older ask than the one shown would take the board back (a page loaded from a
      // slow host showed a card as it was before an edit the newer answer had shown), and nothing
      // more would come to correct it.
      if (n < boardAsks.current.shown) return;
      boardAsks.current.shown = n;
      // A delta that came while this answer was on its way, and is newer than it, stays: the answer
      // would take the board back, and nothing more would come to correct it (a Deny's card stayed in
      // Needs input: the delta moving it back to Running arrived before the board asked for after the
      // answer). Versions compare only within one host: a delta applied means the same host.
      const cur = boardRef.current;
      if (applied.current !== before && cur && cur.version >= b.version) {
        await refreshDetail();
        return;
      }
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
      // (the first screen has only some cards: a change to it brings the whole board)
      if (delta && b && !isFirstScreen(b) && b.version === delta.from) {
        // the usual case: apply what changed, no re-fetch of the board
        const next = applyDelta(b, delta);
        applied.current++;
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
    askDetail(selected)
      .then(({ d, newest }) => live && newest && setDetail(d))
      .catch((e: Error) => {
        if (!live) return;
        // a URL naming a card that is not (or no longer) on the board
        setError(`${e.message} (opened from a link to card "${selected}")`);
        setSelected(undefined);
      });
    return () => {
      live = false;
    };
  }, [askDetail, selected, setSelected]);

  const onMove = (m: MoveIntent): void => {
    const b = boardRef.current;
    if (!b || isFirstScreen(b)) return;
    // boardRef too, at once: a delta that comes before the next render applies on top of the move
    const next = applyMove(b, m);
    boardRef.current = next;
    setBoard(next);
    api.move({ id: m.id, to: m.to, index: m.index }).then(
      () => setError(undefined),
      (e: Error) => {
        setError(e.message);
        void refresh();
      },
    );
  };

  const trash = (id: string, title: string): void => {
    api.trashCard({ id }).then(
      (t) => {
        setSelected(undefined);
        setTrashed({ name: t.name, title });
        setError(undefined);
      },
      (e: Error) => setError(e.message),
    );
  };
  const undoTrash = (): void => {
    if (!trashed) return;
    api.restoreCard({ name: trashed.name }).then(
      (r) => {
        setTrashed(undefined);
        if (r.id) setSelected(r.id);
      },
      (e: Error) => setError(e.message),
    );
  };

  // the providers again whenever the flows change (a flow added, its provider changed)
  const flowsKey = board ? JSON.stringify(board.flows.map((f) => [f.name, f.runner])) : '';
  useEffect(() => {
    if (flowsKey) loadProviders();
  }, [flowsKey, loadProviders]);
  // how many warnings the config files give (Settings → Configuration lists them), asked again with the flows
  const [configWarnings, setConfigWarnings] = useState(0);
  const configKey = `${flowsKey}\n${board?.configError ?? ''}`;
  useEffect(() => {
    if (flowsKey)
      api.configView().then(
        (v) => setConfigWarnings(v.warnings.length),
        () => undefined,
      );
  }, [configKey, flowsKey, api]);

  // browser notifications (opt-in): a run ended, or a card came to need input
  const [notify, setNotify] = useState(notifySetting);
  const columns = useRef<Map<string, Column>>(undefined);
  useEffect(() => {
    if (!board) return;
    const before = columns.current;
    columns.current = new Map(board.cards.map((c) => [c.id, c.column]));
    if (!before || !notify || typeof Notification === 'undefined' || Notification.permission !== 'granted')
      return;
    for (const n of notesBetween(before, board.cards)) {
      const note = new Notification(n.title, { body: n.body, tag: n.id });
      note.onclick = () => {
        window.focus();
        setSelected(n.id);
      };
    }
  }, [board, notify, setSelected]);

  const missingNames = (providers ?? [])
    .filter((p) => p.flows.length > 0 && !p.hasKey)
    .map((p) => p.name)
    .join('\n');
  useEffect(() => {
    if (missingNames) setAskedKeys((prev) => [...new Set([...prev, ...missingNames.split('\n')])]);
  }, [missingNames]);

  // a card's `needs:` about a key that is saved now shows as met, on the card and in the inspector
  const keyedBoard = useMemo(() => board && boardWithKeyNeeds(board, providers), [board, providers]);
  const keyedDetail = useMemo(() => {
    const card = detail && withKeyNeeds(detail.card, providers);
    return card === detail?.card ? detail : { ...detail!, card: card! };
  }, [detail, providers]);

  // (a board that cannot be read says why: e.g. a page without its token is told to open the URL)
  if (!board)
    return error ? (
      <div className="loading" role="alert">
        {error}
      </div>
    ) : (
      <div className="loading">Loading the board…</div>
    );
  // the inspector shows the open card only: details of a card closed meanwhile are not shown
  const shown = selected && keyedDetail?.card.id === selected ? keyedDetail : undefined;
  const keyPanel = (providers ?? []).filter((p) => askedKeys.includes(p.name) && p.flows.length > 0);
  const broken = selected?.startsWith('broken:') ? board.cards.find((c) => c.id === selected) : undefined;
  // the first-run checklist, until a folder is granted and a card has run (or it is hidden)
  const keyed = new Set((providers ?? []).flatMap((p) => p.flows));
  const firstRun = isFirstScreen(board) ? undefined : firstRunState(board, (flow) => !keyed.has(flow));
  const showFirstRun =
    !!firstRun &&
    !(firstRun.ungranted.length === 0 && firstRun.tried) &&
    !firstRunHidden.includes(board.project);
  // the header shows busy flows; all of them are in the tooltip (a row of idle flows wrapped at 1280 px)
  const busyFlows = board.flows.filter((f) => f.running > 0 || f.parkedUntil);
  return (
    <div className={shown ? 'app with-inspector' : 'app'}>
      <header className="topbar">
        <h1>Runboard</h1>
        <span className="project" title={board.project}>
          {board.project}
        </span>
        <span
          className="slots"
          aria-label="Runs going"
          title={board.flows.map((f) => `${f.name} ${f.running}/${f.cap}`).join(' · ')}
        >
          <span>
            {board.running}/{board.maxConcurrency} running
            {board.waitingForYou > 0 && (
              <span className="waiting-you"> · {board.waitingForYou} waiting for you</span>
            )}
          </span>
          {busyFlows.map((f) => (
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
        <button ref={newCardButton} className="primary" onClick={() => setEditor({ mode: 'new' })}>
          New card
        </button>
        <button
          className="help-button"
          onClick={() => setHelp(true)}
          aria-label="Help and keyboard shortcuts"
          title="Help and keyboard shortcuts (?)"
        >
          ?
        </button>
        <button ref={settingsButton} onClick={() => setSettings(true)}>
          Settings
        </button>
      </header>
      {board.configError && (
        <div className="banner error" role="alert">
          config.yaml has an error (the last good config is in use): {board.configError}
        </div>
      )}
      <ConfirmBanner board={board} api={api} onOpen={setSelected} onError={setError} />
      {configWarnings > 0 && !settings && (
        <div className="banner warn" role="status">
          The config has {configWarnings} warning{configWarnings > 1 ? 's' : ''}
          <button onClick={() => setSettings(true)}>Show them</button>
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
      {showFirstRun && firstRun ? (
        <FirstRun
          api={api}
          state={firstRun}
          keys={
            keyPanel.length > 0 ? (
              <KeyPanel api={api} missing={keyPanel} onChanged={loadProviders} />
            ) : undefined
          }
          onChanged={() => void refresh()}
          onOpen={setSelected}
          onError={setError}
          onDismiss={() => {
            const hidden = [...firstRunHidden, board.project];
            localStorage.setItem('runboard.firstRunHidden', JSON.stringify(hidden));
            setFirstRunHidden(hidden);
          }}
        />
      ) : (
        keyPanel.length > 0 &&
        !keyPanelHidden && (
          <KeyPanel
            api={api}
            missing={keyPanel}
            onChanged={loadProviders}
            onDismiss={() => setKeyPanelHidden(true)}
          />
        )
      )}
      {trashed && (
        <div className="banner note" role="status">
          Moved “{trashed.title}” to the trash (cards/.trash).
          <button onClick={undoTrash}>Undo</button>
          <button className="close" onClick={() => setTrashed(undefined)} aria-label="Dismiss">
            ✕
          </button>
        </div>
      )}
      <FilterBar board={board} filter={filter} onFilter={setFilter} />
      <main>
        <Board
          board={keyedBoard ?? board}
          // the card the inspector shows (revealed in its column once the inspector narrowed the board)
          selected={shown ? selected : undefined}
          onSelect={setSelected}
          onMove={onMove}
          filter={filter}
          focusRequest={focusRequest}
        />
        {shown && (
          <Inspector
            api={api}
            detail={shown}
            onClose={() => {
              // back to the card the inspector showed, so the keyboard goes on where it was
              setSelected(undefined);
              setFocusRequest({ id: shown.card.id });
            }}
            onChanged={() => void refresh()}
            onEdit={() => setEditor({ mode: 'edit', detail: shown })}
            onDuplicate={() =>
              void api.duplicateCard({ id: shown.card.id }).then(
                (r) => setSelected(r.id),
                (e: Error) => setError(e.message),
              )
            }
            onTrash={() => trash(shown.card.id, shown.card.title)}
          />
        )}
      </main>
      {editor && (
        <CardEditor
          api={api}
          board={board}
          target={editor}
          onClose={() => {
            const was = editor;
            setEditor(undefined);
            if (was.mode === 'new') newCardButton.current?.focus();
          }}
          onSaved={(id) => {
            setEditor(undefined);
            setError(undefined);
            setSelected(id);
            void refresh();
          }}
        />
      )}
      {broken?.broken && (
        <SourceEditor
          key={broken.id}
          api={api}
          id={broken.id}
          error={broken.broken}
          onClose={() => {
            setSelected(undefined);
            setFocusRequest({ id: broken.id });
          }}
          onSaved={(id) => setSelected(id)}
          onTrash={() => trash(broken.id, broken.file)}
        />
      )}
      <ShortcutHelp open={help} onOpen={() => setHelp(true)} onClose={() => setHelp(false)} />
      {settings && (
        <SettingsView
          api={api}
          providers={providers}
          onProvidersChanged={loadProviders}
          onRestored={(id) => {
            setTrashed(undefined);
            if (id) setSelected(id);
          }}
          notify={notify}
          onNotify={(on) => {
            setNotifySetting(on);
            setNotify(on);
          }}
          onClose={() => {
            setSettings(false);
            settingsButton.current?.focus();
          }}
        />
      )}
    </div>
  );
}
