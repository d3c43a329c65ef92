/**
 * The inspector's run panel: for the selected run its live output, progress, status, metrics,
 * screenshots, worktree, a trend of recent runs, Cancel and Export; for computer-use runs the filmstrip
 * and, while one runs on a private display, that display live; for a flow with `debug: true` its model
 * requests (DebugLog.tsx).
 */
import { useEffect, useMemo, useState } from 'react';
import type { RunEvent, RunResult } from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';
import { DebugLog } from './DebugLog.tsx';
import { Filmstrip, LiveDisplay } from './Filmstrip.tsx';
import { filmstripOf, isFilmEvent } from './cu-steps.ts';
import { AskLog, isAskEvent } from './AskLog.tsx';
import { LogView, type RunLiveState } from './LogView.tsx';
import { ProgressBar } from './Progress.tsx';
import { useSettle } from './settle.ts';

export function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '…';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}
function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

export const STATUS_CLASS: Record<string, string> = {
  succeeded: 'ok',
  failed: 'bad',
  'timed-out': 'bad',
  cancelled: 'warn',
  'needs-input': 'warn',
  running: 'live',
};

/** The last N runs' durations as bars, coloured by outcome (oldest left). */
export function TrendChart({ runs, n = 20 }: { runs: RunResult[]; n?: number }) {
  // ended runs only: a running one has no duration yet
  const last = runs
    .filter((r) => r.status !== 'running')
    .slice(0, n)
    .reverse();
  if (last.length === 0) return null;
  const max = Math.max(1, ...last.map((r) => r.durationMs ?? 0));
  const w = 12;
  const h = 48;
  return (
    <figure className="trend">
      <svg
        width={last.length * (w + 3)}
        height={h}
        role="img"
        aria-label={`Durations and outcomes of the last ${last.length} runs`}
      >
        {last.map((r, i) => {
          const bh = Math.max(2, ((r.durationMs ?? 0) / max) * (h - 2));
          return (
            <rect
              key={r.runId}
              x={i * (w + 3)}
              y={h - bh}
              width={w}
              height={bh}
              className={`bar-${STATUS_CLASS[r.status] ?? 'bad'}`}
            >
              <title>{`${r.runId}: ${r.status}, ${fmtMs(r.durationMs)}`}</title>
            </rect>
          );
        })}
      </svg>
      <figcaption>
        last {last.length} runs · longest {fmtMs(max)}
      </figcaption>
    </figure>
  );
}

/** A run's images as a bare list (runs without a filmstrip: not computer-use, or no step events). */
function Screenshots({ api, runId, ended }: { api: BoardApi; runId: string; ended: boolean }) {
  const [shots, setShots] = useState<string[]>([]);
  useEffect(() => {
    let live = true;
    api
      .runFiles({ runId })
      .then((f) => live && setShots(f.screenshots))
      .catch(() => live && setShots([]));
    return () => {
      live = false;
    };
  }, [api, runId, ended]);
  if (!shots.length) return null;
  return (
    <div className="shots">
      {shots.map((s) => (
        <a key={s} href={api.fileUrl(runId, s)} target="_blank" rel="noreferrer">
          <img src={api.fileUrl(runId, s)} alt={`screenshot ${s}`} />
        </a>
      ))}
    </div>
  );
}

/**
 * What a run changed in its own git worktree (flows with `worktree: true`): the files with +/-, the
 * diff itself on request, and the decision: keep (merge into the base branch) or discard.
 */
const worktreeState = (r: RunResult) => r.worktree?.state;

export function Worktree({ api, run, onChanged }: { api: BoardApi; run: RunResult; onChanged: () => void }) {
  const wt = run.worktree;
  const [diff, setDiff] = useState<{ text: string; truncated: boolean } | null>(null);
  const { settled: state, busy, error, setError, settle } = useSettle(api, run, worktreeState, onChanged);
  if (!wt) return null;
  const files = wt.diff?.files ?? [];
  return (
    <section className="worktree" aria-label="Worktree">
      <h4>
        Worktree <code>{wt.branch}</code> from <code>{wt.baseBranch ?? wt.baseCommit.slice(0, 10)}</code>
        {wt.diff && (
          <span className="diffstat">
            {' '}
            {files.length} file{files.length === 1 ? '' : 's'} <span className="add">+{wt.diff.added}</span>{' '}
            <span className="del">−{wt.diff.removed}</span>
          </span>
        )}
      </h4>
      {files.length > 0 && (
        <ul className="diff-files">
          {files.map((f) => (
            <li key={f.path}>
              <code>{f.path}</code> <span className="add">+{f.added ?? '?'}</span>{' '}
              <span className="del">−{f.removed ?? '?'}</span>
            </li>
          ))}
        </ul>
      )}
      {run.status === 'running' ? (
        <p className="muted">the diff is recorded when the run ends</p>
      ) : (
        <div className="worktree-actions">
          {files.length > 0 && !diff && (
            <button
              onClick={() =>
                void api.runDiff({ runId: run.runId }).then(setDiff, (e: Error) => setError(e.message))
              }
            >
              Show diff
            </button>
          )}
          {state === 'active' ? (
            <>
              <button
                className="primary"
                disabled={busy || !wt.baseBranch}
                onClick={() => void settle('keep')}
              >
                Keep (merge into {wt.baseBranch ?? 'base'})
              </button>
              <button disabled={busy} onClick={() => void settle('discard')}>
                Discard
              </button>
            </>
          ) : (
            <span className="muted">
              {state === 'kept' ? `kept: merged into ${wt.baseBranch}` : 'discarded'}
            </span>
          )}
        </div>
      )}
      {error && <p className="error">{error}</p>}
      {diff && (
        <pre className="diff" aria-label="Diff">
          {diff.text.split('\n').map((line, i) => (
            <div
              key={i}
              className={
                line.startsWith('+') && !line.startsWith('+++')
                  ? 'add'
                  : line.startsWith('-') && !line.startsWith('---')
                    ? 'del'
                    : line.startsWith('@@')
                      ? 'hunk'
                      : undefined
              }
            >
              {line || ' '}
            </div>
          ))}
          {diff.truncated && <div className="muted">… cut at 1 MiB</div>}
        </pre>
      )}
    </section>
  );
}

/** Time since `since`, ticking each second (a running run's duration so far). */
function Elapsed({ since }: { since: string }) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const s = Math.max(0, Math.floor((now - Date.parse(since)) / 1000));
  const text = s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return <>{text} so far</>;
}
/** The selected run: its output, progress, metrics, screenshots, worktree and actions. */
export function RunPanel({
  api,
  run,
  command,
  onLive,
}: {
  api: BoardApi;
  run: RunResult;
  /** The card's command as the inspector shows it. */
  command: string | undefined;
  onLive: (s: RunLiveState) => void;
}) {
  const [live, setLive] = useState<RunLiveState>({ ended: run.status !== 'running' });
  const pct = live.progress?.fraction;
  // computer-use runs: their step events (the filmstrip) and whether the worker writes live frames
  const [filmEvents, setFilmEvents] = useState<RunEvent[]>([]);
  const steps = useMemo(() => filmstripOf(filmEvents), [filmEvents]);
  const liveView = filmEvents.some((e) => (e.data as { kind?: unknown } | undefined)?.kind === 'cu-live');
  // its asks at the tool call and how each ended (AskLog.tsx)
  const [askEvents, setAskEvents] = useState<RunEvent[]>([]);
  return (
    <div className="run-panel">
      <dl className="metrics">
        <div>
          <dt>Status</dt>
          <dd className={`status ${STATUS_CLASS[run.status] ?? ''}`}>{run.status}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>
            {run.status === 'running' && !live.ended ? (
              <Elapsed since={run.startedAt} />
            ) : (
              fmtMs(run.durationMs)
            )}
          </dd>
        </div>
        {run.status !== 'running' && (
          <div>
            {/* a stopped run has no exit code: what stopped it instead of an empty "–" */}
            <dt>{run.exitCode === null ? 'Stopped by' : 'Exit code'}</dt>
            <dd>{run.exitCode ?? run.signal ?? run.termination?.reason ?? run.status}</dd>
          </div>
        )}
        {run.status !== 'running' && (
          <>
            <div className="figure">
              <dt>Output</dt>
              <dd>{`${fmtBytes(run.stdoutBytes)} out · ${fmtBytes(run.stderrBytes)} err`}</dd>
            </div>
            <div className="figure">
              <dt>I/O</dt>
              <dd>
                {fmtBytes(run.bytesRead)} read · {fmtBytes(run.bytesWritten)} written
              </dd>
            </div>
            <div className="wide">
              <dt>Ended because</dt>
              <dd>
                {run.termination ? `${run.termination.reason}: ${run.termination.detail}` : 'still running'}
              </dd>
            </div>
          </>
        )}
      </dl>
      {run.status === 'running' && !live.ended && (
        <div className="run-progress">
          <ProgressBar fraction={pct} />
          {/* (a command run's progress message is its command, shown above already) */}
          {live.progress?.message && !(command && live.progress.message.includes(command)) && (
            <span>{live.progress.message}</span>
          )}
        </div>
      )}
      {liveView && run.status === 'running' && !live.ended && <LiveDisplay api={api} runId={run.runId} />}
      {steps.length > 0 ? (
        <Filmstrip api={api} runId={run.runId} steps={steps} />
      ) : (
        <Screenshots api={api} runId={run.runId} ended={live.ended} />
      )}
      <DebugLog key={run.runId} api={api} runId={run.runId} ended={live.ended} />
      <LogView
        api={api}
        runId={run.runId}
        onLive={(s) => {
          setLive(s);
          onLive(s);
        }}
        onEvent={(e) => {
          if (isFilmEvent(e)) setFilmEvents((prev) => [...prev, e]);
          if (isAskEvent(e)) setAskEvents((prev) => [...prev, e]);
        }}
      />
      <AskLog events={askEvents} />
    </div>
  );
}
