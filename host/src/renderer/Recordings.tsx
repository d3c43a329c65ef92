/**
 * Recordings (seed 000/002): Record from the board (a card in Backlog gets the recording), the one
 * going (pause, stop, and the question Ctrl+I asks: an extract or details), and the project's
 * recordings with their duration, size, event count and a thumbnail strip; deletable. The host runs
 * the recorder (host/src/core/recordings.ts); this asks it every second while something is going.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { ActiveRecording, RecordingItem, RecordingsView } from '../shared/recording-types.ts';

const POLL_BUSY_MS = 1000;
const POLL_IDLE_MS = 5000;

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(0)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GB`;
}

/** The question Ctrl+I asks while the recording waits: an extract, a note for the next step, or nothing. */
function AskDialog({ api, onDone }: { api: BoardApi; onDone: (error?: string) => void }) {
  const [kind, setKind] = useState<'extract' | 'details'>('extract');
  const [text, setText] = useState('');
  const [candidates, setCandidates] = useState('');
  const [problem, setProblem] = useState<string>();
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);
  const send = (answer: Parameters<BoardApi['answerRecording']>[0]): void => {
    api.answerRecording(answer).then(
      () => onDone(),
      (e: Error) => onDone(e.message),
    );
  };
  const add = (): void => {
    if (!text.trim()) {
      setProblem(kind === 'extract' ? 'Say what to read off the screen.' : 'Write the note.');
      return;
    }
    const list = candidates
      .split(',')
      .map((c) => c.trim())
      .filter(Boolean);
    send(
      kind === 'extract'
        ? { kind: 'extract', query: text.trim(), candidates: list }
        : { kind: 'details', note: text.trim() },
    );
  };
  return (
    <div className="settings ask" role="dialog" aria-modal="true" aria-labelledby="ask-title">
      <h2 id="ask-title">Recording paused (Ctrl+I)</h2>
      <p className="muted">
        Extract: what a replay should read off the screen as it is now. Details: a note for the next step.
      </p>
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          add();
        }}
      >
        <fieldset>
          <legend>Add</legend>
          <label>
            <input
              ref={first}
              type="radio"
              name="ask-kind"
              checked={kind === 'extract'}
              onChange={() => setKind('extract')}
            />{' '}
            Extract
          </label>{' '}
          <label>
            <input
              type="radio"
              name="ask-kind"
              checked={kind === 'details'}
              onChange={() => setKind('details')}
            />{' '}
            Details
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor="ask-text">
            {kind === 'extract' ? 'What to read off the screen' : 'Note for the next step'}
          </label>
          <input
            id="ask-text"
            type="text"
            value={text}
            aria-invalid={problem ? true : undefined}
            aria-describedby={problem ? 'ask-problem' : undefined}
            onChange={(e) => {
              setText(e.target.value);
              setProblem(undefined);
            }}
          />
        </div>
        {kind === 'extract' && (
          <div className="field">
            <label htmlFor="ask-candidates">Candidate values (optional, comma-separated)</label>
            <input
              id="ask-candidates"
              type="text"
              value={candidates}
              onChange={(e) => setCandidates(e.target.value)}
            />
          </div>
        )}
        {problem && (
          <p id="ask-problem" className="error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" className="primary">
          Add and resume
        </button>{' '}
        <button type="button" onClick={() => send({ kind: 'none' })}>
          Resume without adding
        </button>
      </form>
    </div>
  );
}

function Going({
  api,
  active,
  onError,
  onChanged,
}: {
  api: BoardApi;
  active: ActiveRecording;
  onError: (m: string) => void;
  onChanged: () => void;
}) {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const act = (p: Promise<unknown>): void => void p.then(onChanged, (e: Error) => onError(e.message));
  return (
    <span className="recording-going" role="status" aria-label="Recording">
      <span className="rec-dot" aria-hidden="true" />
      {active.paused ? 'Paused' : 'Recording'} {duration(now - Date.parse(active.startedAt))}
      <button onClick={() => act(api.pauseRecording({ paused: !active.paused }))} disabled={active.asking}>
        {active.paused ? 'Resume' : 'Pause'}
      </button>
      <button onClick={() => act(api.stopRecording())}>Stop recording</button>
    </span>
  );
}

function Item({
  api,
  r,
  onOpenCard,
  onDeleted,
}: {
  api: BoardApi;
  r: RecordingItem;
  onOpenCard: (id: string) => void;
  /** Deleted (or a request about it failed, with why). */
  onDeleted: (error?: string) => void;
}) {
  const [confirm, setConfirm] = useState(false);
  const [extracting, setExtracting] = useState(false);
  const when = new Date(r.startedAt).toLocaleString();
  // Recording → task (seed 000): an extraction run writes the task into the recording's card.
  const extract = (): void => {
    setExtracting(true);
    api.extractTask({ recording: r.id, ...(r.card ? { card: r.card.id } : {}) }).then(
      ({ cardId }) => {
        setExtracting(false);
        onOpenCard(cardId);
      },
      (e: Error) => {
        setExtracting(false);
        onDeleted(e.message);
      },
    );
  };
  return (
    <li className="recording" aria-label={`Recording of ${when}`}>
      <div className="recording-head">
        <strong>{when}</strong>
        <span>{duration(r.durationMs)}</span>
        <span>{size(r.bytes)}</span>
        <span>
          {r.steps} event{r.steps === 1 ? '' : 's'}
        </span>
        {r.video && <span className="muted">video</span>}
        {r.message && r.message !== 'stopped' && <span className="muted">{r.message}</span>}
        {r.card && (
          <button className="link" onClick={() => onOpenCard(r.card!.id)}>
            Card: {r.card.title}
          </button>
        )}
        {r.durationMs !== undefined && (
          <button onClick={extract} disabled={extracting}>
            {extracting ? 'Starting…' : 'Turn into a task'}
          </button>
        )}
        {confirm ? (
          <>
            <button
              className="danger"
              onClick={() =>
                void api.deleteRecording({ recordingId: r.id }).then(
                  () => onDeleted(),
                  (e: Error) => onDeleted(e.message),
                )
              }
            >
              Delete for good
            </button>
            <button onClick={() => setConfirm(false)}>Keep</button>
          </>
        ) : (
          <button onClick={() => setConfirm(true)} aria-label={`Delete the recording of ${when}`}>
            Delete
          </button>
        )}
      </div>
      <div className="thumbs">
        {r.thumbnails.map((t, i) => (
          <img
            key={`${i}:${t}`}
            src={api.recordingFileUrl(r.id, t)}
            alt={
              i === 0
                ? 'the screen at the start'
                : `the screen before step ${t.replace(/\D/g, '').replace(/^0+/, '')}`
            }
          />
        ))}
      </div>
    </li>
  );
}

/**
 * Import a video: an .mp4 chosen on this computer (the browser uploads it into the project's videos/
 * folder; Electron hands over its path), or named by its path in a folder granted to runs (the
 * extraction run reads that folder, read-only). It becomes a task as a recording does (POST
 * /api/extract/video or /api/extract with `file`; the host probes it through native/src/media-input.ts
 * and refuses what is not a short .mp4, saying why).
 */
function ImportVideo({
  api,
  onOpenCard,
  onError,
}: {
  api: BoardApi;
  onOpenCard: (id: string) => void;
  onError: (e: string | undefined) => void;
}) {
  const [file, setFile] = useState('');
  const [starting, setStarting] = useState(false);
  /** Of an upload going: the share sent, 0–100. */
  const [sent, setSent] = useState<number>();
  const chooser = useRef<HTMLInputElement>(null);
  const started = (p: Promise<{ cardId: string }>): void => {
    setStarting(true);
    onError(undefined);
    p.then(
      ({ cardId }) => {
        setStarting(false);
        setSent(undefined);
        setFile('');
        onOpenCard(cardId);
      },
      (e: Error) => {
        setStarting(false);
        setSent(undefined);
        onError(e.message);
      },
    );
  };
  const start = (): void => {
    const f = file.trim();
    if (!f.startsWith('/') || !/\.mp4$/i.test(f)) {
      onError('Name the video by its full path, ending in .mp4 (e.g. /home/you/videos/demo.mp4).');
      return;
    }
    started(api.extractTask({ file: f }));
  };
  const upload = (chosen: File | undefined): void => {
    if (!chosen) return;
    if (!/\.mp4$/i.test(chosen.name)) {
      onError(`${chosen.name} is not an .mp4 video: choose an .mp4 (at most 5 minutes).`);
      return;
    }
    setSent(0);
    started(
      api.importVideoFile(chosen, {}, (n, total) =>
        setSent(total > 0 ? Math.floor((100 * n) / total) : undefined),
      ),
    );
  };
  return (
    <form
      className="record-row import-video"
      onSubmit={(e) => {
        e.preventDefault();
        start();
      }}
    >
      <span className="import-video-title">Import a video (.mp4, at most 5 minutes)</span>
      <input
        ref={chooser}
        type="file"
        accept="video/mp4,.mp4"
        hidden
        aria-hidden="true"
        tabIndex={-1}
        onChange={(e) => {
          upload(e.target.files?.[0]);
          e.target.value = '';
        }}
      />
      <button type="button" disabled={starting} onClick={() => chooser.current?.click()}>
        {sent !== undefined ? `Uploading… ${sent} %` : 'Choose a video…'}
      </button>
      <label htmlFor="import-video">or its path, in a granted folder</label>
      <input
        id="import-video"
        aria-label="Import a video (.mp4, in a granted folder)"
        type="text"
        value={file}
        placeholder="/home/you/videos/demo.mp4"
        spellCheck={false}
        onChange={(e) => {
          setFile(e.target.value);
          onError(undefined);
        }}
      />
      <button type="submit" disabled={starting || !file.trim()}>
        {starting && sent === undefined ? 'Starting…' : 'Make a task from it'}
      </button>
    </form>
  );
}

/** The header's part: Record / the recording going, the Ctrl+I question, and the list (a panel). */
export function Recordings({ api, onOpenCard }: { api: BoardApi; onOpenCard: (id: string) => void }) {
  const [view, setView] = useState<RecordingsView>();
  const [open, setOpen] = useState(false);
  const [mic, setMic] = useState('default');
  const [video, setVideo] = useState(true);
  const [secretFields, setSecretFields] = useState('');
  const [error, setError] = useState<string>();
  const [starting, setStarting] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  /**
   * The polls, a Stop's, a Record's and a Delete's asks for the view are answered in parallel: an older
   * poll's answer could come after the Stop's and show the recording going again until the next poll.
   * Each ask takes a number; an answer older than the one shown is dropped (as App.tsx `askDetail`).
   */
  const asks = useRef({ asked: 0, shown: 0 });
  const load = useCallback(() => {
    const n = ++asks.current.asked;
    api.recordings().then(
      (v) => {
        if (n < asks.current.shown) return;
        asks.current.shown = n;
        setView(v);
      },
      (e: Error) => {
        if (n > asks.current.shown) setError(e.message);
      },
    );
  }, [api]);
  const busy = open || !!view?.active;
  useEffect(() => {
    load();
    const t = setInterval(load, busy ? POLL_BUSY_MS : POLL_IDLE_MS);
    return () => clearInterval(t);
  }, [load, busy]);
  const close = (): void => {
    setOpen(false);
    button.current?.focus();
  };
  const record = (): void => {
    setStarting(true);
    setError(undefined);
    const secret = secretFields
      .split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    api.startRecording({ mic, video, ...(secret.length ? { secretFields: secret } : {}) }).then(
      () => {
        setStarting(false);
        load();
      },
      (e: Error) => {
        setStarting(false);
        setError(e.message);
      },
    );
  };
  const active = view?.active;
  return (
    <>
      {active && <Going api={api} active={active} onError={setError} onChanged={load} />}
      <button ref={button} onClick={() => setOpen(true)}>
        Recordings
      </button>
      {active?.asking && (
        <AskDialog
          api={api}
          onDone={(e) => {
            if (e) setError(e);
            load();
          }}
        />
      )}
      {open && (
        <div
          className="settings recordings-panel"
          role="dialog"
          aria-labelledby="recordings-title"
          onKeyDown={(e) => {
            if (e.key === 'Escape') {
              e.preventDefault();
              close();
            }
          }}
        >
          <div className="settings-head">
            <h2 id="recordings-title">Recordings</h2>
            <button className="close" onClick={close} aria-label="Close recordings">
              ✕
            </button>
          </div>
          <p className="muted">
            Record a demonstration on this desktop: a red border shows what is recorded; Ctrl+I pauses and
            asks for an extract or details. The recording gets a card in Backlog.
          </p>
          {view?.cannotRecord ? (
            <p className="error">{view.cannotRecord}</p>
          ) : (
            <div className="record-row">
              <label>
                <input
                  type="checkbox"
                  checked={video}
                  onChange={(e) => setVideo(e.target.checked)}
                  disabled={!!active}
                />{' '}
                Screen video
              </label>
              <label htmlFor="rec-mic">Microphone</label>
              <select
                id="rec-mic"
                value={mic}
                onChange={(e) => setMic(e.target.value)}
                disabled={!!active || !video}
              >
                <option value="default">System default microphone</option>
                {view?.microphones
                  .filter((m) => !m.monitor)
                  .map((m) => (
                    <option key={m.name} value={m.name}>
                      {m.name}
                    </option>
                  ))}
                {view?.microphones
                  .filter((m) => m.monitor)
                  .map((m) => (
                    <option key={m.name} value={m.name}>
                      {m.name} (what is played)
                    </option>
                  ))}
                <option value="none">No microphone</option>
              </select>
              <label htmlFor="rec-secret">Secret fields</label>
              <input
                id="rec-secret"
                value={secretFields}
                placeholder="PIN, Card number"
                title="Labels of fields whose typing is a secret though they show it: kept out of the recording and greyed"
                onChange={(e) => setSecretFields(e.target.value)}
                disabled={!!active}
                spellCheck={false}
              />
              {active ? (
                <button
                  onClick={() => void api.stopRecording().then(load, (e: Error) => setError(e.message))}
                >
                  Stop recording
                </button>
              ) : (
                <button className="primary" onClick={record} disabled={starting}>
                  {starting ? 'Starting…' : 'Record'}
                </button>
              )}
              {view?.microphoneError && <span className="muted">{view.microphoneError}</span>}
            </div>
          )}
          <ImportVideo
            api={api}
            onOpenCard={(id) => {
              close();
              onOpenCard(id);
            }}
            onError={setError}
          />
          {error && (
            <p className="error" role="alert">
              {error}
            </p>
          )}
          {active && active.warnings.length > 0 && (
            <ul className="warnings">
              {active.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
          {view?.last && (
            <p role="status" className={view.last.failed ? 'error' : 'ok'}>
              Last recording: {view.last.message}
              {view.last.warnings.map((w) => ` · ${w}`).join('')}
            </p>
          )}
          {view && view.recordings.length === 0 && <p className="muted">No recordings yet.</p>}
          <ul className="recording-list">
            {view?.recordings.map((r) => (
              <Item
                key={r.id}
                api={api}
                r={r}
                onOpenCard={(id) => {
                  close();
                  onOpenCard(id);
                }}
                onDeleted={(e) => {
                  if (e) setError(e);
                  load();
                }}
              />
            ))}
          </ul>
        </div>
      )}
    </>
  );
}
