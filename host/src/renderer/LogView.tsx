/**
 * A run's output, live: virtualised (only the visible rows exist in the DOM, so 100k lines scroll
 * smoothly), ANSI colours through anser (as CSS classes; React sets styles through the CSSOM, which
 * the strict CSP allows, but style attributes in markup it does not), and a
 * bounded buffer (the oldest lines are dropped past MAX_LINES; "export run" has all of them).
 */
import Anser from 'anser';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useRef, useState } from 'react';
import type { RunEvent } from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';
import type { RunStreamMessage } from '../shared/board-types.ts';

export const MAX_LINES = 200_000;
const ROW = 17;

interface Line {
  err: boolean;
  text: string;
}

export interface RunLiveState {
  progress?: { fraction?: number | undefined; message?: string | undefined };
  ended: boolean;
}

function AnsiLine({ line }: { line: Line }) {
  if (!line.text.includes('\x1b')) return <>{line.text}</>;
  const parts = Anser.ansiToJson(line.text, { use_classes: true, remove_empty: true });
  return (
    <>
      {parts.map((p, i) => (
        <span
          key={i}
          className={[
            p.fg ? `${p.fg}-fg` : '',
            p.bg ? `${p.bg}-bg` : '',
            p.decorations.includes('bold') ? 'ansi-bold' : '',
          ].join(' ')}
        >
          {p.content}
        </span>
      ))}
    </>
  );
}

export function LogView({
  api,
  runId,
  onLive,
  onEvent,
}: {
  api: BoardApi;
  runId: string;
  onLive?: (s: RunLiveState) => void;
  /** Every event of the run (the earlier ones first), e.g. for the computer-use filmstrip. */
  onEvent?: (e: RunEvent) => void;
}) {
  const lines = useRef<Line[]>([]);
  const dropped = useRef(0);
  const [count, setCount] = useState(0);
  const [follow, setFollow] = useState(true);
  const [skipped, setSkipped] = useState(0);
  const parent = useRef<HTMLDivElement>(null);
  const onLiveRef = useRef(onLive);
  onLiveRef.current = onLive;
  const onEventRef = useRef(onEvent);
  onEventRef.current = onEvent;

  useEffect(() => {
    lines.current = [];
    dropped.current = 0;
    setCount(0);
    setSkipped(0);
    // One render per frame however many batches arrive. requestAnimationFrame does not fire in a
    // hidden or minimised window, so a timer stands in for it there (the log is current on return).
    let frame = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const render = (): void => {
      if (frame) cancelAnimationFrame(frame);
      clearTimeout(timer);
      frame = 0;
      timer = undefined;
      setCount(lines.current.length);
    };
    const bump = (): void => {
      if (frame || timer) return;
      frame = requestAnimationFrame(render);
      timer = setTimeout(render, 250);
    };
    const live: RunLiveState = { ended: false };
    const stop = api.streamRun(runId, (m: RunStreamMessage) => {
      if (m.type === 'lines') {
        const buf = lines.current;
        for (const text of m.lines) buf.push({ err: m.stream === 'stderr', text });
        if (buf.length > MAX_LINES) {
          const drop = buf.length - MAX_LINES + Math.floor(MAX_LINES / 10);
          buf.splice(0, drop);
          dropped.current += drop;
        }
        bump();
      } else if (m.type === 'start') {
        setSkipped(m.skippedBytes);
      }
      if (m.type === 'event') onEventRef.current?.(m.event);
      if (m.type === 'event' && m.event.type === 'progress') {
        const f = m.event.data?.fraction;
        live.progress = { fraction: typeof f === 'number' ? f : undefined, message: m.event.message };
        onLiveRef.current?.({ ...live });
      } else if (m.type === 'end') {
        live.ended = true;
        onLiveRef.current?.({ ...live });
      }
    });
    return () => {
      stop();
      if (frame) cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, [api, runId]);

  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => parent.current,
    estimateSize: () => ROW,
    overscan: 30,
  });

  useEffect(() => {
    if (follow && count > 0) virtualizer.scrollToIndex(count - 1, { align: 'end' });
  }, [count, follow, virtualizer]);

  // Follow stops only when the person scrolls up, and resumes at the bottom. (Deciding from "not at the
  // bottom" alone turned follow off by itself whenever lines arrived between our scroll and its event,
  // and the view then stayed put: the "last line never shows" of docs/bench-board.md.)
  const lastTop = useRef(0);
  const onScroll = (): void => {
    const el = parent.current;
    if (!el) return;
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < ROW * 2;
    const up = el.scrollTop < lastTop.current - 1;
    lastTop.current = el.scrollTop;
    if (atBottom && !follow) setFollow(true);
    else if (up && !atBottom && follow) setFollow(false);
  };

  return (
    <div className="log">
      <div className="log-head">
        <span>
          {count.toLocaleString()} lines
          {dropped.current + skipped > 0 ? ' (earlier output trimmed: export the run for all of it)' : ''}
        </span>
        <label>
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> follow
        </label>
      </div>
      {/* focusable, so the keyboard can scroll the output (arrows, Page Up/Down) */}
      <div
        className="log-scroll"
        ref={parent}
        onScroll={onScroll}
        role="log"
        aria-label="Run output"
        tabIndex={0}
      >
        <div className="log-inner" style={{ height: virtualizer.getTotalSize() }}>
          {virtualizer.getVirtualItems().map((row) => {
            const line = lines.current[row.index];
            if (!line) return null;
            return (
              <div
                key={row.key}
                className={line.err ? 'log-line err' : 'log-line'}
                style={{ transform: `translateY(${row.start}px)` }}
              >
                <AnsiLine line={line} />
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
