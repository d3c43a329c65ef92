/**
 * A card's attempts in the inspector (config `attempts:`; host/src/core/scheduler-attempts.ts): the
 * judge's verdict, then one column per attempt side by side (its ending and its screenshots, a filmstrip
 * with the final one last and large); a click on an attempt opens its run below.
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { CardDetail } from '../shared/board-types.ts';
import { usageText } from '../shared/usage-text.ts';
import { fmtMs, STATUS_CLASS } from './RunPanel.tsx';

type Run = CardDetail['runs'][number];

function AttemptColumn({
  api,
  n,
  run,
  runId,
  won,
  selected,
  onSelect,
}: {
  api: BoardApi;
  n: number;
  run: Run | undefined;
  runId: string | null;
  won: boolean;
  selected: boolean;
  onSelect: (runId: string) => void;
}) {
  const [shots, setShots] = useState<string[]>([]);
  useEffect(() => {
    let live = true;
    if (runId)
      api
        .runFiles({ runId })
        .then((f) => live && setShots(f.screenshots))
        .catch(() => live && setShots([]));
    return () => {
      live = false;
    };
  }, [api, runId, run?.status]);
  const last = shots.at(-1);
  return (
    <li className={`attempt${won ? ' won' : ''}${selected ? ' selected' : ''}`} aria-label={`Attempt ${n}`}>
      <button className="attempt-head" disabled={!runId} onClick={() => runId && onSelect(runId)}>
        <strong>Attempt {n}</strong>
        {won && <span className="status ok">winner</span>}
        <span className={`status ${run ? (STATUS_CLASS[run.status] ?? '') : 'warn'}`}>
          {run?.status ?? (runId ? '…' : 'not started')}
        </span>
        {run && run.status !== 'running' && <span className="muted">{fmtMs(run.durationMs)}</span>}
        {run?.usage && (
          <span className="usage" title={`Model tokens and cost of attempt ${n}`}>
            {usageText(run.usage)}
          </span>
        )}
      </button>
      {run?.summary && <p className="attempt-summary">{run.summary}</p>}
      {last && runId && (
        <a href={api.fileUrl(runId, last)} target="_blank" rel="noreferrer" className="attempt-final">
          <img src={api.fileUrl(runId, last)} alt={`attempt ${n}: final screenshot`} />
        </a>
      )}
      {shots.length > 1 && runId && (
        <ol className="attempt-strip" aria-label={`Attempt ${n}: steps`}>
          {shots.slice(0, -1).map((s) => (
            <li key={s}>
              <a href={api.fileUrl(runId, s)} target="_blank" rel="noreferrer">
                <img src={api.fileUrl(runId, s)} alt={`attempt ${n}: ${s}`} loading="lazy" />
              </a>
            </li>
          ))}
        </ol>
      )}
    </li>
  );
}

export function AttemptsSection({
  api,
  detail,
  selected,
  onSelect,
}: {
  api: BoardApi;
  detail: CardDetail;
  selected: string | undefined;
  onSelect: (runId: string) => void;
}) {
  const a = detail.attempts;
  if (!a) return null;
  const byId = new Map(detail.runs.map((r) => [r.runId, r]));
  return (
    <section className="attempts" aria-label="Attempts">
      <h3>
        Attempts ({a.runs.length})
        {a.judgeRun && (
          <button className="link" onClick={() => onSelect(a.judgeRun!)}>
            the judge&apos;s run
          </button>
        )}
        {a.judgeRun && byId.get(a.judgeRun)?.usage && (
          <span className="usage" title="Model tokens and cost of the judge">
            {usageText(byId.get(a.judgeRun)!.usage)}
          </span>
        )}
      </h3>
      {a.verdict && (
        <p className={`verdict banner ${a.winner ? 'note' : 'error'}`} role="status">
          {a.verdict}
        </p>
      )}
      <ol
        className="attempt-columns"
        style={{ gridTemplateColumns: `repeat(${a.runs.length}, minmax(0, 1fr))` }}
      >
        {a.runs.map((runId, i) => (
          <AttemptColumn
            key={runId ?? `none-${i}`}
            api={api}
            n={i + 1}
            runId={runId}
            run={runId ? byId.get(runId) : undefined}
            won={a.winner === i + 1}
            selected={!!runId && runId === selected}
            onSelect={onSelect}
          />
        ))}
      </ol>
    </section>
  );
}
