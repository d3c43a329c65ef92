/**
 * A run's model debug log in the inspector (a flow's `debug: true`): its model requests a page at a
 * time (the host reads each page from a byte offset of the file, never the whole file:
 * host/src/core/debug-log.ts), each with its status, model, tokens and time, and open on a click: the
 * model's answer, the rendered request (prompt, tools, parameters) and the raw answer, images shown as
 * their size. Shown only for runs that recorded one.
 */
import { useCallback, useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { DebugEntryView, DebugLogPage } from '../shared/debug-log-types.ts';

const fmtMs = (ms: number | null): string =>
  ms === null ? '…' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;

const tokens = (e: DebugEntryView): string =>
  e.tokens
    ? `${(e.tokens.input ?? 0).toLocaleString('en-US')} in / ${(e.tokens.output ?? 0).toLocaleString('en-US')} out`
    : 'no usage';

function Entry({ e }: { e: DebugEntryView }) {
  const ok = e.status >= 200 && e.status < 300;
  return (
    <li>
      <details>
        <summary aria-label={`Model request ${e.n}`}>
          <span className="debug-n">#{e.n}</span>
          <span className={`status ${ok ? 'ok' : 'bad'}`}>{e.status || '–'}</span>
          <code>
            {e.method} {e.path}
          </code>
          {e.model && <span>{e.model}</span>}
          <span className="muted">{tokens(e)}</span>
          <span className="muted">{fmtMs(e.ms)}</span>
          {e.cut && <span className="muted">(shortened)</span>}
        </summary>
        <h5>Answer</h5>
        <pre className="debug-text">{e.text || '(no text)'}</pre>
        <h5>Request (rendered prompt)</h5>
        <pre className="debug-json" aria-label={`Request ${e.n}`}>
          {e.request}
        </pre>
        <h5>Raw answer</h5>
        <pre className="debug-json" aria-label={`Raw answer ${e.n}`}>
          {e.response}
        </pre>
      </details>
    </li>
  );
}

/** Keyed by the run id where it is used: another run starts at its first page. */
export function DebugLog({ api, runId, ended }: { api: BoardApi; runId: string; ended: boolean }) {
  /** The offsets of the pages before this one (Previous goes back to the last). */
  const [back, setBack] = useState<{ offset: number; index: number }[]>([]);
  const [at, setAt] = useState({ offset: 0, index: 0 });
  const [page, setPage] = useState<DebugLogPage | null>(null);
  const [error, setError] = useState('');
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    api
      .runDebugLog({ runId, offset: String(at.offset), index: String(at.index) })
      .then((p) => live && (setPage(p), setError('')))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [api, runId, at, ended, tick]);
  const next = useCallback(() => {
    if (page?.next === null || page?.next === undefined) return;
    setBack((b) => [...b, at]);
    setAt({ offset: page.next, index: at.index + page.entries.length });
  }, [page, at]);
  const previous = useCallback(() => {
    const last = back.at(-1);
    if (!last) return;
    setBack((b) => b.slice(0, -1));
    setAt(last);
  }, [back]);
  if (error) return <p className="error">Model debug log: {error}</p>;
  if (!page?.exists) return null;
  const first = page.entries[0]?.n;
  const last = page.entries.at(-1)?.n;
  return (
    <section className="debug-log" aria-label="Model debug log">
      <h4>
        Model requests (debug log){' '}
        <span className="muted">
          {first ? `${first}–${last}` : 'none yet'} · {(page.size / 1024).toFixed(0)} KiB in model-debug.jsonl
        </span>
      </h4>
      <ol className="debug-entries">
        {page.entries.map((e) => (
          <Entry key={e.n} e={e} />
        ))}
      </ol>
      <div className="debug-pages">
        <button disabled={!back.length} onClick={previous}>
          Previous
        </button>
        <button disabled={page.next === null} onClick={next}>
          Next
        </button>
        {!ended && <button onClick={() => setTick((t) => t + 1)}>Refresh</button>}
      </div>
    </section>
  );
}
