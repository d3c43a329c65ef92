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
import { memo, useEffect, useMemo, useRef, useState } from 'react';
import { COLUMNS, COLUMN_TITLES, type BoardView, type CardView, type Column } from '../shared/board-types.ts';
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
          {card.waiting && !card.waiting.startsWith('backoff') && (
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

function CardTile({ card, selected, onSelect }: { card: CardView; selected: boolean; onSelect: () => void }) {
  const { attributes, listeners, setNodeRef, setActivatorNodeRef, transform, transition, isDragging } =
    useSortable({
      id: card.id,
      disabled: card.locked,
      data: { column: card.column },
    });
  // The <li> is the list item (and what dnd-kit moves); the button inside is what a person focuses,
  // drags and opens. Its name comes from what it shows, plus its column said only to screen readers.
  return (
    <li
      ref={setNodeRef}
      style={{ transform: CSS.Transform.toString(transform), transition }}
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
          onSelect();
        }}
        onKeyDown={(e) => {
          listeners?.onKeyDown?.(e);
          if (e.key === 'Enter' && !e.defaultPrevented) onSelect();
        }}
      >
        <CardContent card={card} />
        <span className="sr-only">{cardSuffix(card)}</span>
      </div>
    </li>
  );
}

/**
 * A column re-renders only when its cards (same objects: deltas keep unchanged cards), its limit or the
 * selection within it change, so a move on a 2,000-card board renders two columns, not six.
 */
const ColumnView = memo(ColumnViewImpl, (a, b) => {
  if (a.column !== b.column || a.limit !== b.limit || a.onSelect !== b.onSelect) return false;
  if (a.cards.length !== b.cards.length) return false;
  for (let i = 0; i < a.cards.length; i++) if (a.cards[i] !== b.cards[i]) return false;
  const had = a.cards.some((c) => c.id === a.selected) || a.cards.some((c) => c.id === b.selected);
  return !had || a.selected === b.selected;
});

function ColumnViewImpl({
  column,
  cards,
  limit,
  selected,
  onSelect,
}: {
  column: Column;
  cards: CardView[];
  limit?: number | undefined;
  selected: string | undefined;
  onSelect: (id: string) => void;
}) {
  const { setNodeRef, isOver } = useDroppable({ id: COL_PREFIX + column });
  const title = COLUMN_TITLES[column];
  return (
    <section
      className={isOver ? 'column over' : 'column'}
      aria-label={`${title} column, ${cards.length} cards`}
    >
      <h2>
        {title} <span className="count">{limit ? `${cards.length}/${limit}` : cards.length}</span>
      </h2>
      <SortableContext id={column} items={cards.map((c) => c.id)} strategy={verticalListSortingStrategy}>
        <ul ref={setNodeRef} className="cards" data-column={column}>
          {cards.map((c) => (
            <CardTile key={c.id} card={c} selected={selected === c.id} onSelect={() => onSelect(c.id)} />
          ))}
        </ul>
      </SortableContext>
    </section>
  );
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

export function Board({
  board,
  selected,
  onSelect,
  onMove,
  filter = NO_FILTER,
}: {
  board: BoardView;
  selected: string | undefined;
  onSelect: (id: string) => void;
  onMove: (m: MoveIntent) => void;
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
  const byColumn = useMemo(() => {
    const out = Object.fromEntries(COLUMNS.map((c) => [c, [] as CardView[]])) as Record<Column, CardView[]>;
    const filtering = isFiltering(filter);
    for (const c of board.cards) if (!filtering || matches(c, filter)) out[c.column].push(c);
    return out;
  }, [board.cards, filter]);
  // A card that changes column is rendered anew there (a keyboard drop, or the scheduler moving it on):
  // the focus follows it, else it falls to <body> and the person starts again from the top of the page.
  // `focused` is the card whose button has the focus; a blur (the person moved on) clears it, while a
  // removed element loses the focus without one.
  const focused = useRef<string | undefined>(undefined);
  useEffect(() => {
    const id = focused.current;
    if (!id || (document.activeElement && document.activeElement !== document.body)) return;
    document.querySelector<HTMLElement>(`[data-card-handle="${CSS_ESCAPE(id)}"]`)?.focus();
  });
  const onDragEnd = (e: DragEndEvent): void => {
    setDragging(undefined);
    const m = dropTarget(board, String(e.active.id), e.over ? String(e.over.id) : undefined);
    if (m) onMove(m);
  };
  return (
    <DndContext
      sensors={sensors}
      collisionDetection={collision}
      onDragStart={(e) => setDragging(board.cards.find((c) => c.id === e.active.id))}
      onDragCancel={() => setDragging(undefined)}
      onDragEnd={onDragEnd}
      accessibility={{
        announcements,
        screenReaderInstructions: {
          draggable:
            'To move a card, press Space to pick it up, use the arrow keys to move it to another column or place, and press Space to drop it. Escape cancels. Enter opens the card.',
        },
      }}
    >
      <div
        className="board"
        role="region"
        aria-label="Board"
        onFocus={(e) => {
          focused.current = (e.target as HTMLElement).dataset.cardHandle;
        }}
        onBlur={() => {
          focused.current = undefined;
        }}
      >
        {COLUMNS.map((col) => (
          <ColumnView
            key={col}
            column={col}
            cards={byColumn[col]}
            limit={board.columnLimits[col]}
            selected={selected}
            onSelect={onSelect}
          />
        ))}
      </div>
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
