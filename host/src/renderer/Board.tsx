/**
 * The kanban, presentational: columns of sortable cards. Drag and drop by mouse and by keyboard
 * (dnd-kit's keyboard sensor: focus a card, Space to lift, arrows to move, Space to drop; Enter opens), with
 * accessible names so the board can be driven through the accessibility tree.
 */
import {
  closestCorners,
  DndContext,
  DragOverlay,
  pointerWithin,
  rectIntersection,
  type CollisionDetection,
  KeyboardSensor,
  PointerSensor,
  useDroppable,
  useSensor,
  useSensors,
  type Announcements,
  type DragEndEvent,
} from '@dnd-kit/core';
import {
  SortableContext,
  sortableKeyboardCoordinates,
  useSortable,
  verticalListSortingStrategy,
} from '@dnd-kit/sortable';
import { CSS } from '@dnd-kit/utilities';
import { useVirtualizer, defaultRangeExtractor, type Range } from '@tanstack/react-virtual';
import {
  createContext,
  memo,
  useCallback,
  useContext,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type RefObject,
} from 'react';
import {
  COLUMNS,
  COLUMN_TITLES,
  type BoardView,
  type CardView,
  type Column,
  type FirstScreenView,
} from '../shared/board-types.ts';
import { isFiltering, matches, NO_FILTER, type CardFilter } from './card-filter.ts';
import { ProgressBar } from './Progress.tsx';
import { ScheduleNote } from './Schedule.tsx';

const COL_PREFIX = 'column:';
const CSS_ESCAPE = (s: string): string => globalThis.CSS.escape(s);

function time(iso: string): string {
  return new Date(iso).toLocaleTimeString();
}

/** What a card's button says to screen readers after its visible text: where it is. */
export function cardSuffix(c: CardView): string {
  if (c.broken) return `, broken card in ${COLUMN_TITLES[c.column]}`;
  return `, in ${COLUMN_TITLES[c.column]}${c.locked ? ': open it to cancel the run' : ''}`;
}

/** What a card shows; memoised, so a column re-render (dnd-kit context) re-renders only the tiles. */
const CardContent = memo(function CardContent({ card }: { card: CardView }) {
  return (
    <>
      {card.broken ? (
        <>
          <div className="card-title">⚠ {card.file}</div>
          <div className="card-error" role="alert">
            {card.broken}
          </div>
        </>
      ) : (
        <>
          <div className="card-title">{card.title}</div>
          <div className="card-meta">
            <span className="flow">{card.flow}</span>
            {card.locked && <span className="lock">● running</span>}
            {card.failures ? <span className="fails">{card.failures}× failed</span> : null}
          </div>
          {card.column === 'running' && <ProgressBar fraction={card.progress?.fraction} />}
          {card.progress?.message && card.column === 'running' && (
            <div className="card-note clamp" title={card.progress.message}>
              {card.progress.message}
            </div>
          )}
          {card.nextTryAt && card.column === 'queued' && (
            <div className="card-note backoff">next try at {time(card.nextTryAt)}</div>
          )}
          {card.waiting && !card.confirm && !card.unreadable && !card.waiting.startsWith('backoff') && (
            <div className="card-note clamp">{card.waiting}</div>
          )}
          {card.lastError && card.column !== 'done' && card.column !== 'running' && (
            <div
              className={card.lastError === 'cancelled' ? 'card-note' : 'card-note error clamp'}
              title={card.lastError}
            >
              {card.lastError === 'cancelled' ? 'last run cancelled' : card.lastError}
            </div>
          )}
          {card.needs && <div className="card-note needs">needs: {card.needs}</div>}
          {card.needsMet && (
            <div className="card-note met" title={`needs: ${card.needsWas ?? ''}`}>
              ✓ {card.needsMet}
            </div>
          )}
          {card.confirm && (
            <div className="card-note needs" title={card.confirm.reason}>
              ⚠ changed outside the board: confirm it above
            </div>
          )}
          {card.unreadable && (
            <div className="card-note error clamp" role="status" title={card.unreadable}>
              ⚠ its file does not read now: showing its last good version
            </div>
          )}
          {card.grant && (
            <div className="card-note needs" title={card.grant.reason}>
              {card.grant.state === 'stale' ? 'grant stale: grant the folder again' : 'folder not granted'}
            </div>
          )}
          {card.schedule && <ScheduleNote schedule={card.schedule} />}
          {card.openQuestions && card.column !== 'running' ? (
            <div className="card-note questions">
              {card.openQuestions} open question{card.openQuestions > 1 ? 's' : ''}
            </div>
          ) : null}
        </>
      )}
    </>
  );
});

/**
 * What the board keeps a column's card mounted for, although the virtualiser would drop it: the card
 * the keyboard is on (so the focus survives a scroll, a move to another column or a re-sort) and the
 * card being dragged (dnd-kit needs its node until the drop).
 */
interface Pins {
  focus: RefObject<string | undefined>;
  active: RefObject<string | undefined>;
}
const PinContext = createContext<Pins>({ focus: { current: undefined }, active: { current: undefined } });

const nothingFocused = (): boolean => !document.activeElement || document.activeElement === document.body;

const CardTile = memo(function CardTile({
  card,
  selected,
  onSelect,
  index,
  setSize,
  top,
  measure,
}: {
  card: CardView;
  selected: boolean;
  onSelect: (id: string) => void;
  /** Its place in the column (0-based) and the column's length: list semantics of a virtualised list. */
  index: number;
  setSize: number;
  top: number;
  measure: (el: Element | null) => void;
}) {
  const { attributes, listeners, setNodeRef, setActivatorNodeRef, transform, transition, isDragging } =
    useSortable({
      id: card.id,
      disabled: card.locked,
      data: { column: card.column },
    });
  const itemRef = useCallback(
    (el: HTMLLIElement | null) => {
      setNodeRef(el);
      measure(el);
    },
    [setNodeRef, measure],
  );
  // The <li> is the list item (and what dnd-kit moves); the button inside is what a person focuses,
  // drags and opens. Its name comes from what it shows, plus its column said only to screen readers.
  return (
    <li
      ref={itemRef}
      data-index={index}
      aria-setsize={setSize}
      aria-posinset={index + 1}
      style={{ top, transform: CSS.Transform.toString(transform), transition }}
      className={[
        'card',
        card.broken ? 'broken' : '',
        card.locked ? 'locked' : '',
        selected ? 'selected' : '',
        isDragging ? 'dragging' : '',
      ].join(' ')}
      data-card-id={card.id}
      data-column={card.column}
    >
      <div
        ref={setActivatorNodeRef}
        className="card-handle"
        data-card-handle={card.id}
        {...attributes}
        {...listeners}
        // a running card cannot be dragged, but opening it is how it is cancelled: not "disabled"
        aria-disabled={undefined}
        aria-roledescription={card.locked ? 'running card' : 'draggable card'}
        onMouseDown={(e) => {
          // no text selection when a locked card is dragged across the page
          if (card.locked || card.broken) e.preventDefault();
        }}
        onClick={(e) => {
          e.currentTarget.focus();
          onSelect(card.id);
        }}
        onKeyDown={(e) => {
          listeners?.onKeyDown?.(e);
          if (e.key === 'Enter' && !e.defaultPrevented) onSelect(card.id);
        }}
      >
        <CardContent card={card} />
        <span className="sr-only">{cardSuffix(card)}</span>
      </div>
    </li>
  );
});

/** A card's height before it is measured, and the space between cards (px). */
const CARD_ESTIMATE = 62;
const CARD_GAP = 8;

/**
 * A column re-renders only when its cards (same objects: deltas keep unchanged cards), its limit or the
 * selection within it change, so a move on a 2,000-card board renders two columns, not six.
 */
const ColumnView = memo(ColumnViewImpl, (a, b) => {
  if (a.column !== b.column || a.limit !== b.limit || a.onSelect !== b.onSelect) return false;
  if (a.register !== b.register) return false;
  if (a.cards.length !== b.cards.length || a.total !== b.total) return false;
  for (let i = 0; i < a.cards.length; i++) if (a.cards[i] !== b.cards[i]) return false;
  const had = a.cards.some((c) => c.id === a.selected) || a.cards.some((c) => c.id === b.selected);
  return !had || a.selected === b.selected;
});

/**
 * One column: a virtualised list (only the cards in view, a few more either side, and the pinned
 * ones are in the DOM; each placed at its offset), so a 2,000-card board renders some 100 cards.
 */
function ColumnViewImpl({
  column,
  cards,
  total,
  limit,
  selected,
  onSelect,
  register,
}: {
  column: Column;
  /** The column's cards in order: all of them, or the first ones of a first screen. */
  cards: CardView[];
  /** How many cards the column has (more than `cards` on a first screen). */
  total: number;
  limit?: number | undefined;
  selected: string | undefined;
  onSelect: (id: string) => void;
  register: (column: Column, list: ColumnList | undefined) => void;
}) {
  const { setNodeRef, isOver } = useDroppable({ id: COL_PREFIX + column });
  const pins = useContext(PinContext);
  const scroller = useRef<HTMLDivElement | null>(null);
  const scrollRef = useCallback(
    (el: HTMLDivElement | null) => {
      scroller.current = el;
      setNodeRef(el);
    },
    [setNodeRef],
  );
  const ids = useMemo(() => cards.map((c) => c.id), [cards]);
  const rangeExtractor = useCallback(
    (range: Range): number[] => {
      const out = defaultRangeExtractor(range);
      for (const id of [pins.focus.current, pins.active.current]) {
        const i = id === undefined ? -1 : ids.indexOf(id);
        if (i !== -1 && !out.includes(i)) out.push(i);
      }
      return out.sort((x, y) => x - y);
    },
    [ids, pins],
  );
  const list = useVirtualizer({
    count: total,
    getScrollElement: () => scroller.current,
    estimateSize: () => CARD_ESTIMATE,
    getItemKey: (i) => ids[i] ?? i,
    gap: CARD_GAP,
    paddingStart: 4,
    paddingEnd: 12,
    overscan: 6,
    rangeExtractor,
    // the first render already has the first screen of cards (no empty frame before the measure)
    initialRect: { width: 240, height: 900 },
  });
  // The card the keyboard was on, rendered anew here (it changed column, or the virtualiser mounted it
  // again): the focus follows it, else it falls to <body> and the person starts again from the top.
  // The virtualiser scrolls it into view (a browser's own scroll on focus would race its offsets).
  useLayoutEffect(() => {
    const id = pins.focus.current;
    if (id === undefined || !nothingFocused()) return;
    const i = ids.indexOf(id);
    const el = scroller.current?.querySelector<HTMLElement>(`[data-card-handle="${CSS_ESCAPE(id)}"]`);
    if (i === -1 || !el) return;
    el.focus({ preventScroll: true });
    list.scrollToIndex(i, { align: 'auto' });
  });
  useEffect(() => {
    register(column, { ids, scrollTo: (i) => list.scrollToIndex(i, { align: 'auto' }) });
    return () => register(column, undefined);
  }, [register, column, ids, list]);
  const title = COLUMN_TITLES[column];
  return (
    <section className={isOver ? 'column over' : 'column'} aria-label={`${title} column, ${total} cards`}>
      <h2>
        {title} <span className="count">{limit ? `${total}/${limit}` : total}</span>
      </h2>
      <SortableContext id={column} items={ids} strategy={verticalListSortingStrategy}>
        {/* the scrolling part is the drop target (what is in view); the list is as tall as all its
            cards, each placed at its offset, so only <li> are in the <ul> */}
        <div ref={scrollRef} className="cards-scroll">
          <ul className="cards" data-column={column} style={{ height: list.getTotalSize() }}>
            {list.getVirtualItems().map((v) => {
              const c = cards[v.index];
              if (!c) return null; // beyond a first screen: the whole board is on its way
              return (
                <CardTile
                  key={c.id}
                  card={c}
                  selected={selected === c.id}
                  onSelect={onSelect}
                  index={v.index}
                  setSize={total}
                  top={v.start}
                  measure={list.measureElement}
                />
              );
            })}
          </ul>
        </div>
      </SortableContext>
    </section>
  );
}

/** What the board may ask of a mounted column: its card ids, and to scroll one into view. */
interface ColumnList {
  ids: string[];
  scrollTo: (index: number) => void;
}

export interface MoveIntent {
  id: string;
  to: Column;
  index: number;
}

/** Where a drop lands: a column (its end) or a card (its place). */
export function dropTarget(
  board: BoardView,
  activeId: string,
  overId: string | undefined,
): MoveIntent | null {
  if (!overId) return null;
  if (overId.startsWith(COL_PREFIX)) {
    const to = overId.slice(COL_PREFIX.length) as Column;
    const inCol = board.cards.filter((c) => c.column === to && c.id !== activeId);
    return { id: activeId, to, index: inCol.length };
  }
  const over = board.cards.find((c) => c.id === overId);
  if (!over) return null;
  const col = board.cards.filter((c) => c.column === over.column);
  const from = col.findIndex((c) => c.id === activeId);
  const index = col.findIndex((c) => c.id === overId);
  // within a column, dnd-kit's sortable index is the target position after removal
  return { id: activeId, to: over.column, index: from === -1 ? index : index };
}

/**
 * With a pointer: the card or column under it. With the keyboard (no pointer): what the moved card
 * overlaps (closest corners alone would prefer the card's own old place to a tall column). Cards win
 * over columns, so a drop lands at a card's place.
 */
const collision: CollisionDetection = (args) => {
  const preferCards = (hits: ReturnType<CollisionDetection>) => {
    const cards = hits.filter((c) => !String(c.id).startsWith(COL_PREFIX));
    return cards.length ? cards : hits;
  };
  const within = pointerWithin(args);
  if (within.length) return preferCards(within);
  const overlapping = rectIntersection(args);
  if (overlapping.length) return preferCards(overlapping);
  return closestCorners(args);
};

/** Scrolls `scroller` sideways (only) so that `item` is whole inside its padding box; its left first. */
function keepInView(scroller: HTMLElement, item: HTMLElement): void {
  const s = scroller.getBoundingClientRect();
  const r = item.getBoundingClientRect();
  const style = getComputedStyle(scroller);
  const left = s.left + parseFloat(style.paddingLeft);
  const right = s.right - parseFloat(style.paddingRight) - (scroller.offsetWidth - scroller.clientWidth);
  let by = r.right > right ? r.right - right : 0;
  if (r.left - by < left) by = r.left - left;
  if (by) scroller.scrollLeft += by;
}

export function Board({
  board,
  selected,
  onSelect,
  onMove,
  filter = NO_FILTER,
  focusRequest,
}: {
  board: BoardView;
  selected: string | undefined;
  onSelect: (id: string) => void;
  onMove: (m: MoveIntent) => void;
  /** Put the focus on this card (scrolled into view, mounted if it was not); a new object each time. */
  focusRequest?: { id: string } | undefined;
  /** Cards not matching are not shown; drops still land by the whole column's order. */
  filter?: CardFilter;
}) {
  const sensors = useSensors(
    useSensor(PointerSensor, { activationConstraint: { distance: 5 } }),
    useSensor(KeyboardSensor, {
      coordinateGetter: sortableKeyboardCoordinates,
      // Space lifts and drops; Enter stays free to open the card in the inspector.
      keyboardCodes: { start: ['Space'], cancel: ['Escape'], end: ['Space'] },
    }),
  );
  const titleOf = (id: string | number): string => board.cards.find((c) => c.id === id)?.title ?? String(id);
  const where = (id: string | number | undefined): string => {
    if (id === undefined) return 'nowhere';
    const s = String(id);
    if (s.startsWith(COL_PREFIX)) return `the ${COLUMN_TITLES[s.slice(COL_PREFIX.length) as Column]} column`;
    const c = board.cards.find((x) => x.id === s);
    return c ? `${COLUMN_TITLES[c.column]}, at ${titleOf(s)}` : s;
  };
  const announcements: Announcements = {
    onDragStart: ({ active }) => `Picked up card ${titleOf(active.id)}.`,
    onDragOver: ({ active, over }) => `Card ${titleOf(active.id)} is over ${where(over?.id)}.`,
    onDragEnd: ({ active, over }) => `Card ${titleOf(active.id)} was dropped on ${where(over?.id)}.`,
    onDragCancel: ({ active }) => `Moving card ${titleOf(active.id)} was cancelled.`,
  };
  const [dragging, setDragging] = useState<CardView>();
  // a first screen (the page's own data) has each column's first cards and every column's count
  const counts = 'counts' in board ? (board as FirstScreenView).counts : undefined;
  const byColumn = useMemo(() => {
    const out = Object.fromEntries(COLUMNS.map((c) => [c, [] as CardView[]])) as Record<Column, CardView[]>;
    const filtering = isFiltering(filter);
    for (const c of board.cards) if (!filtering || matches(c, filter)) out[c.column].push(c);
    return out;
  }, [board.cards, filter]);
  // The card the keyboard is on, by id (its element may be replaced: a move to another column, or the
  // virtualiser dropping and mounting it again). Focus anywhere else clears it; focus lost to a removed
  // element keeps it, so the column that renders the card again gives it the focus back (ColumnView).
  const focus = useRef<string | undefined>(undefined);
  const active = useRef<string | undefined>(undefined);
  const pins = useMemo<Pins>(() => ({ focus, active }), []);
  useEffect(() => {
    const onIn = (e: FocusEvent): void => {
      focus.current = e.target instanceof HTMLElement ? e.target.dataset.cardHandle : undefined;
    };
    const onOut = (e: FocusEvent): void => {
      const from = e.target;
      if (e.relatedTarget || !(from instanceof HTMLElement)) return;
      // to nowhere: a click on the page, or the element went away; only the first forgets the card
      setTimeout(() => {
        if (from.isConnected && nothingFocused() && focus.current === from.dataset.cardHandle)
          focus.current = undefined;
      });
    };
    document.addEventListener('focusin', onIn);
    document.addEventListener('focusout', onOut);
    return () => {
      document.removeEventListener('focusin', onIn);
      document.removeEventListener('focusout', onOut);
    };
  }, []);
  const lists = useRef(new Map<Column, ColumnList>());
  const register = useCallback((column: Column, list: ColumnList | undefined): void => {
    if (list) lists.current.set(column, list);
    else lists.current.delete(column);
  }, []);
  /** Scrolls card `id` into its column's view (mounting it), and focuses it when `focusIt`. */
  const reveal = useCallback((id: string, focusIt: boolean): void => {
    if (focusIt) focus.current = id;
    for (const list of lists.current.values()) {
      const i = list.ids.indexOf(id);
      if (i === -1) continue;
      // mounted: focus it now; else its column focuses it once the scroll has mounted it
      if (focusIt)
        document
          .querySelector<HTMLElement>(`[data-card-handle="${CSS_ESCAPE(id)}"]`)
          ?.focus({ preventScroll: true });
      return list.scrollTo(i);
    }
  }, []);
  useEffect(() => {
    if (focusRequest) reveal(focusRequest.id, true);
  }, [focusRequest, reveal]);
  // a card opened from elsewhere (a link, a notification, a new card) is shown in its column
  useEffect(() => {
    if (selected) reveal(selected, false);
  }, [selected, reveal]);
  // The open card's column stays whole in view: when the card is opened or moves to another column,
  // and whenever the board's box changes width (the inspector opening narrows it, the window is made
  // narrower; decision 137). Scrolling the board by hand meanwhile is left alone.
  const boardEl = useRef<HTMLDivElement>(null);
  const openColumn = selected ? board.cards.find((c) => c.id === selected)?.column : undefined;
  useEffect(() => {
    const el = boardEl.current;
    if (!el || !openColumn) return;
    const show = (): void => {
      const col = el.querySelector(`ul.cards[data-column="${openColumn}"]`)?.closest('.column');
      if (col instanceof HTMLElement) keepInView(el, col);
    };
    show();
    const seen = new ResizeObserver(show);
    seen.observe(el);
    return () => seen.disconnect();
  }, [openColumn]);
  const onDragEnd = (e: DragEndEvent): void => {
    active.current = undefined;
    setDragging(undefined);
    const m = dropTarget(board, String(e.active.id), e.over ? String(e.over.id) : undefined);
    if (m) onMove(m);
  };
  return (
    <DndContext
      sensors={sensors}
      collisionDetection={collision}
      onDragStart={(e) => {
        active.current = String(e.active.id);
        setDragging(board.cards.find((c) => c.id === e.active.id));
      }}
      onDragCancel={() => {
        active.current = undefined;
        setDragging(undefined);
      }}
      onDragEnd={onDragEnd}
      accessibility={{
        announcements,
        screenReaderInstructions: {
          draggable:
            'To move a card, press Space to pick it up, use the arrow keys to move it to another column or place, and press Space to drop it. Escape cancels. Enter opens the card.',
        },
      }}
    >
      <PinContext.Provider value={pins}>
        <div ref={boardEl} className="board" role="region" aria-label="Board">
          {COLUMNS.map((col) => (
            <ColumnView
              key={col}
              column={col}
              cards={byColumn[col]}
              total={counts && !isFiltering(filter) ? counts[col] : byColumn[col].length}
              limit={board.columnLimits[col]}
              selected={selected}
              onSelect={onSelect}
              register={register}
            />
          ))}
        </div>
      </PinContext.Provider>
      <DragOverlay dropAnimation={null}>
        {dragging ? (
          <div className="card overlay" aria-hidden="true">
            <div className="card-title">{dragging.title}</div>
            <div className="card-meta">
              <span className="flow">{dragging.flow}</span>
            </div>
          </div>
        ) : null}
      </DragOverlay>
    </DndContext>
  );
}
