/**
 * Computer-use runs in the inspector: the filmstrip of a run's steps (from its cu-step
 * events: cu-steps.ts), a large view of a step's screenshot, and the live view of a private display
 * while the run is running (a frame about every second, fetched one after the other).
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { FilmStep } from './cu-steps.ts';

function ms(n: number | undefined): string | undefined {
  if (n === undefined) return undefined;
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(1)} s`;
}

function timingText(s: FilmStep): string {
  const t = s.timings;
  return [
    t.modelMs !== undefined ? `model ${ms(t.modelMs)}` : '',
    t.actMs !== undefined ? `act ${ms(t.actMs)}` : '',
    t.captureMs !== undefined ? `capture ${ms(t.captureMs)}` : '',
    s.tokens ? `${s.tokens.input.toLocaleString()} in / ${s.tokens.output.toLocaleString()} out tokens` : '',
  ]
    .filter(Boolean)
    .join(' · ');
}

const FINAL_CLASS: Record<string, string> = { SUCCESS: 'ok', FAILED: 'bad', NEEDS_CLARIFICATION: 'warn' };

/** One screenshot large, over the page; Escape or a click closes it, ← → go through the steps. */
function Lightbox({
  api,
  runId,
  steps,
  index,
  onIndex,
  onClose,
}: {
  api: BoardApi;
  runId: string;
  steps: FilmStep[];
  index: number;
  onIndex: (i: number) => void;
  onClose: () => void;
}) {
  const s = steps[index];
  useEffect(() => {
    const key = (e: KeyboardEvent): void => {
      if (e.key === 'Escape') onClose();
      else if (e.key === 'ArrowLeft' && index > 0) onIndex(index - 1);
      else if (e.key === 'ArrowRight' && index < steps.length - 1) onIndex(index + 1);
    };
    window.addEventListener('keydown', key);
    return () => window.removeEventListener('keydown', key);
  }, [index, steps.length, onIndex, onClose]);
  if (!s?.screenshot) return null;
  return (
    <div className="lightbox" role="dialog" aria-label={`Screenshot of step ${s.step}`} onClick={onClose}>
      <figure onClick={(e) => e.stopPropagation()}>
        <img src={api.fileUrl(runId, s.screenshot)} alt={`step ${s.step} screenshot, large`} />
        <figcaption>
          <button disabled={index === 0} onClick={() => onIndex(index - 1)} aria-label="Previous step">
            ←
          </button>
          <span>
            {s.step === 0 ? 'Start' : `Step ${s.step}`}:{' '}
            {s.calls.map((c) => `${c.action} ${c.args}`).join('; ') || 'the first screenshot'}
            {s.image ? ` (${s.image[0]}×${s.image[1]})` : ''}
          </span>
          <button
            disabled={index >= steps.length - 1}
            onClick={() => onIndex(index + 1)}
            aria-label="Next step"
          >
            →
          </button>
          <button onClick={onClose} aria-label="Close screenshot">
            ✕
          </button>
        </figcaption>
      </figure>
    </div>
  );
}

export function Filmstrip({ api, runId, steps }: { api: BoardApi; runId: string; steps: FilmStep[] }) {
  const [open, setOpen] = useState<number>();
  const withShots = steps.filter((s) => s.screenshot);
  if (steps.length === 0) return null;
  const turns = steps.filter((s) => s.step > 0).length;
  return (
    <section className="filmstrip" aria-label="Steps">
      <h4>
        Steps ({turns} model turn{turns === 1 ? '' : 's'})
      </h4>
      <ol className="film-list">
        {steps.map((s) => (
          <li key={s.step} className="film-step" aria-label={s.step === 0 ? 'Start' : `Step ${s.step}`}>
            {s.screenshot ? (
              <button
                className="film-thumb"
                onClick={() => setOpen(withShots.indexOf(s))}
                aria-label={`Open the screenshot of ${s.step === 0 ? 'the start' : `step ${s.step}`}`}
              >
                <img
                  src={api.fileUrl(runId, s.screenshot)}
                  alt={`step ${s.step} screenshot`}
                  loading="lazy"
                />
              </button>
            ) : (
              <div className="film-thumb none">{s.final ? 'final answer' : 'no screenshot'}</div>
            )}
            <div className="film-info">
              <div className="film-head">
                <span className="film-no">{s.step === 0 ? 'Start' : `Step ${s.step}`}</span>
                <span className="film-times">{timingText(s)}</span>
              </div>
              {s.step === 0 && s.calls.length === 0 && (
                <div className="film-call muted">
                  first screenshot{s.image ? ` ${s.image[0]}×${s.image[1]}` : ''}
                </div>
              )}
              {s.calls.map((c, i) => (
                <div key={i} className={c.error ? 'film-call error' : 'film-call'}>
                  <code>{c.tool === 'desktop_action' ? c.action : c.tool}</code>{' '}
                  <span className="film-args">{c.args}</span>
                  {c.error && <span className="film-error"> — {c.error}</span>}
                </div>
              ))}
              {s.final && (
                <div className={`film-final status ${FINAL_CLASS[s.final.status ?? ''] ?? 'warn'}`}>
                  {s.final.valid
                    ? `${s.final.status ?? '?'}${s.final.summary ? `: ${s.final.summary}` : ''}`
                    : `not a valid completion: ${s.final.text.slice(0, 200)}`}
                </div>
              )}
            </div>
          </li>
        ))}
      </ol>
      {open !== undefined && (
        <Lightbox
          api={api}
          runId={runId}
          steps={withShots}
          index={open}
          onIndex={setOpen}
          onClose={() => setOpen(undefined)}
        />
      )}
    </section>
  );
}

/**
 * The private display, live: the next frame is asked for a second after the previous one arrived (or
 * failed), so a slow host never has requests pile up; the shown image changes only once a new one has
 * loaded (no blank between frames).
 */
export function LiveDisplay({
  api,
  runId,
  intervalMs = 1000,
}: {
  api: BoardApi;
  runId: string;
  intervalMs?: number;
}) {
  const [shown, setShown] = useState<{ url: string; at: number; w: number; h: number }>();
  const [failing, setFailing] = useState(false);
  useEffect(() => {
    let alive = true;
    let n = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = (): void => {
      if (alive) timer = setTimeout(load, intervalMs);
    };
    const load = (): void => {
      const url = api.liveUrl(runId, ++n);
      const img = new Image();
      img.onload = () => {
        if (!alive) return;
        setShown({ url, at: Date.now(), w: img.naturalWidth, h: img.naturalHeight });
        setFailing(false);
        next();
      };
      img.onerror = () => {
        if (alive) setFailing(true);
        next();
      };
      img.src = url;
    };
    load();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [api, runId, intervalMs]);
  return (
    <section className="live-display" aria-label="Live display">
      <h4>
        <span className="live-dot" aria-hidden="true" />
        Live display
        <span className="muted">
          {shown
            ? `${shown.w}×${shown.h}, ${new Date(shown.at).toLocaleTimeString()}${failing ? ' (no newer frame)' : ''}`
            : 'waiting for the first frame…'}
        </span>
      </h4>
      {shown && <img src={shown.url} alt="the run's private display, live" />}
    </section>
  );
}
