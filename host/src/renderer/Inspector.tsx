/**
 * The card inspector: the card's markdown and questions, its runs (newest first), and the
 * selected run's panel (RunPanel.tsx: output, progress, metrics, screenshots, filmstrip, trend).
 */
import { useEffect, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { CardDetail } from '../shared/board-types.ts';
import { Markdown } from './Markdown.tsx';
import { PermissionAskPanel } from './PermissionAsks.tsx';
import { ScheduleSection } from './Schedule.tsx';
import { ReplayParamsSection } from './ReplayParams.tsx';
import { WorkflowSection } from './WorkflowEditor.tsx';
import { RunPanel, STATUS_CLASS, TrendChart, Worktree, fmtMs } from './RunPanel.tsx';
import { WorkspaceCopy } from './WorkspaceCopy.tsx';
import { AttemptsSection } from './Attempts.tsx';
import { StaleDraft, useCardDraft } from './CardDraft.tsx';
import { sumUsage, usageText } from '../shared/usage-text.ts';

/**
 * The card's questions (its `## Questions`): open ones with an answer box, answered ones with their
 * answer. Answers are written into the card file (seed format); "Answer & re-queue" also queues it.
 * Answers typed and not sent stay with the card while another card is looked at (CardDraft.tsx).
 */
function Questions({
  api,
  detail,
  onChanged,
  onError,
}: {
  api: BoardApi;
  detail: CardDetail;
  onChanged: () => void;
  onError: (m: string) => void;
}) {
  const list = detail.questionList;
  // answers typed and not sent stay with the card (decision 137), made on the questions as listed now:
  // once the card's questions change (answered elsewhere, a run asked more), they are not sent by number
  const answers = useCardDraft<Record<number, string>>(
    detail.card.id,
    'answers',
    {},
    JSON.stringify(list.map((q) => [q.text, q.answered])),
  );
  const draft = answers.value;
  const setDraft = (i: number, a: string): void =>
    answers.set((cur) => {
      const next = { ...cur, [i]: a };
      if (!a) delete next[i];
      return next;
    });
  const open = list.filter((q) => !q.answered).length;
  const save = (requeue: boolean): void => {
    const typed = Object.entries(draft)
      .filter(([, a]) => a.trim())
      .map(([i, answer]) => ({ index: Number(i), answer }));
    api.answer({ id: detail.card.id, answers: typed, requeue }).then(
      () => {
        answers.drop();
        onChanged();
      },
      (e: Error) => onError(e.message),
    );
  };
  return (
    <section className="questions" aria-label="Questions">
      <h3>
        Questions ({open} open of {list.length})
      </h3>
      <ol className="question-list">
        {list.map((q, i) => (
          <li key={i} className={q.answered ? 'answered' : 'open'}>
            <p className="question">{q.text}</p>
            {q.answered ? (
              <p className="answer">Answer: {q.answer ?? ''}</p>
            ) : (
              <>
                {q.options && (
                  <div className="question-options" role="group" aria-label={`Choices for: ${q.text}`}>
                    {q.options.map((o) => (
                      <button
                        key={o}
                        type="button"
                        className={`option${o === q.recommended ? ' recommended' : ''}`}
                        aria-pressed={(draft[i] ?? '') === o}
                        disabled={detail.card.locked}
                        title={o === q.recommended ? 'recommended' : undefined}
                        onClick={() => setDraft(i, o)}
                      >
                        {o}
                        {o === q.recommended && <span className="rec"> · recommended</span>}
                      </button>
                    ))}
                  </div>
                )}
                <textarea
                  rows={2}
                  aria-label={`Answer to: ${q.text}`}
                  value={draft[i] ?? ''}
                  disabled={detail.card.locked}
                  onChange={(e) => setDraft(i, e.target.value)}
                  placeholder={q.options ? 'or answer in your own words' : undefined}
                />
              </>
            )}
          </li>
        ))}
      </ol>
      {answers.stale && <StaleDraft what="Its questions" onDiscard={answers.drop} />}
      {open > 0 && !detail.card.locked && (
        <div className="question-actions">
          <button disabled={answers.stale} onClick={() => save(false)}>
            Save answers
          </button>
          <button className="primary" disabled={answers.stale} onClick={() => save(true)}>
            Answer &amp; re-queue
          </button>
        </div>
      )}
    </section>
  );
}

/** The card's `## Questions` section (up to the next heading), which the inspector shows on its own. */
const QUESTIONS_SECTION = /^##\s+Questions\s*$[\s\S]*?(?=^#{1,2}\s|$(?![\s\S]))/m;
/** What is left of a questions section once `- None.` placeholders are taken out. */
const realQuestions = (text: string): string =>
  text
    .split('\n')
    .filter((l) => !/^[-*]\s+None\b/i.test(l.trim()))
    .join('\n')
    .trim();

/** A user's cancel is no error: shown in a neutral tone. */
const isCancel = (lastError: string | undefined): boolean => lastError === 'cancelled';
/** Why Run is off for a card whose file does not read now (being written: decision 114). */
const BEING_WRITTEN = 'Its file is being written: it can run once the file reads again';

export function Inspector({
  api,
  detail,
  onClose,
  onChanged,
  onEdit,
  onDuplicate,
  onTrash,
}: {
  api: BoardApi;
  detail: CardDetail;
  onClose: () => void;
  onChanged: () => void;
  /** Opens the card editor on this card. */
  onEdit?: () => void;
  onDuplicate?: () => void;
  /** Moves the card file to the trash (the board offers Undo). */
  onTrash?: () => void;
}) {
  const [runId, setRunId] = useState<string | undefined>(detail.runs[0]?.runId);
  const [error, setError] = useState<string>();
  const newest = detail.runs[0]?.runId;
  useEffect(() => {
    // a new run of this card: follow it
    setRunId(newest);
  }, [newest, detail.card.id]);
  const run = detail.runs.find((r) => r.runId === runId) ?? detail.runs[0];
  const { card } = detail;
  // Opening a card moves the focus into the inspector (its title), so the keyboard is there at once.
  const title = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    title.current?.focus();
  }, [card.id]);
  // Escape closes the inspector when the focus is in it (or nowhere: a button that went away), unless
  // a screenshot is open over it (Escape closes that first)
  const aside = useRef<HTMLElement>(null);
  useEffect(() => {
    const key = (e: KeyboardEvent): void => {
      const at = document.activeElement;
      const mine = !at || at === document.body || !!aside.current?.contains(at);
      if (e.key === 'Escape' && !e.defaultPrevented && mine && !document.querySelector('.lightbox')) {
        e.preventDefault();
        onClose();
      }
    };
    window.addEventListener('keydown', key);
    return () => window.removeEventListener('keydown', key);
  }, [onClose]);
  /** An intent on the card: the inspector refreshes after it, or says why it was refused. */
  const act = (p: Promise<unknown>): void => {
    p.then(onChanged).catch((e: Error) => setError(e.message));
  };
  const body = detail.questions ? detail.body.replace(QUESTIONS_SECTION, '') : detail.body;
  const commandText =
    detail.command === undefined
      ? undefined
      : Array.isArray(detail.command)
        ? detail.command.join(' ')
        : detail.command;
  const otherQuestionText = detail.questions ? realQuestions(detail.questions) : '';
  return (
    <aside ref={aside} className="inspector" aria-label={`Inspector: ${card.title}`}>
      <header>
        <h2 ref={title} tabIndex={-1}>
          {card.title}
        </h2>
        <button className="close" onClick={onClose} aria-label="Close inspector">
          ✕
        </button>
      </header>
      <div className="inspector-meta">
        <span className="flow">{card.flow}</span> · <span>{card.file}</span> · <span>{card.column}</span>
        {(card.column === 'done' || card.column === 'failed' || (card.column === 'backlog' && run)) && (
          <button
            className="primary push-right"
            disabled={!!card.unreadable}
            title={card.unreadable ? BEING_WRITTEN : undefined}
            onClick={() => act(api.requeue({ id: card.id }))}
          >
            Run again
          </button>
        )}
        {card.column === 'backlog' && !run && !card.broken && (
          <button
            className="primary push-right"
            disabled={!!card.unreadable}
            title={
              card.unreadable ? BEING_WRITTEN : 'Moves the card into Queued: it starts when its flow has room'
            }
            onClick={() => act(api.requeue({ id: card.id }))}
          >
            Run
          </button>
        )}
        {card.column === 'queued' && card.nextTryAt && (
          <button
            className="primary push-right"
            title={`instead of waiting until ${new Date(card.nextTryAt).toLocaleTimeString()}`}
            onClick={() => act(api.requeue({ id: card.id }))}
          >
            Retry now
          </button>
        )}
        {card.locked && (
          <button className="danger" onClick={() => act(api.cancel({ id: card.id }))}>
            Cancel run
          </button>
        )}
      </div>
      <div className="card-actions" role="group" aria-label="Card">
        {!card.locked && onEdit && <button onClick={onEdit}>Edit</button>}
        {onDuplicate && <button onClick={onDuplicate}>Duplicate</button>}
        {!card.locked && onTrash && (
          <button className="danger" onClick={onTrash}>
            Delete
          </button>
        )}
      </div>
      {error && <div className="banner error">{error}</div>}
      {card.lastError && card.column !== 'done' && !isCancel(card.lastError) && (
        <div className="banner error clamp-error">
          <span className="clamp" title={card.lastError}>
            Last error: {card.lastError}
          </span>
        </div>
      )}
      {isCancel(card.lastError) && card.column === 'backlog' && (
        <div className="banner note">The last run was cancelled.</div>
      )}
      {card.column === 'queued' &&
        card.waiting &&
        !card.unreadable &&
        !card.waiting.startsWith('backoff') && (
          <div className="banner warn" role="status">
            Waiting: {card.waiting}
          </div>
        )}
      {card.unreadable && (
        <div className="banner warn" role="status">
          ⚠ {card.unreadable}.
        </div>
      )}
      {card.needs && <div className="banner warn">Needs: {card.needs}</div>}
      {card.needsMet && (
        <div className="banner note" title={`the card's file says needs: ${card.needsWas ?? ''}`}>
          <span>
            ✓ Needs met: {card.needsMet} (the <code>needs:</code> line in the card&apos;s file is out of date)
          </span>
        </div>
      )}
      <PermissionAskPanel api={api} detail={detail} onChanged={onChanged} onError={setError} />
      {card.grant && (
        <div className="banner warn">
          <span>
            Runs of this card cannot start: {card.grant.reason}
            {card.grant.state === 'stale' ? '. Grant it again if this is the folder you mean.' : '.'}
          </span>
          <button onClick={() => act(api.grantFolder({ path: card.grant!.folder }))}>
            {card.grant.state === 'stale' ? 'Grant again' : `Grant ${card.grant.folder}`}
          </button>
        </div>
      )}
      {/* open until the card has runs: then the run and its live log get the room (a click opens it) */}
      <details
        key={`${card.id}:${detail.runs.length > 0}`}
        open={detail.runs.length === 0}
        className="card-body"
      >
        <summary>Task</summary>
        {commandText !== undefined && <pre className="command">$ {commandText}</pre>}
        {/* focusable: a long text scrolls in its box, by keyboard too */}
        <div className="markdown rendered" tabIndex={0}>
          <Markdown text={body.trim()} />
        </div>
      </details>
      {/* each card's own forms are remounted for another card (keyed by it): what was typed or being edited
          for one card, or a late answer for it, never shows under another, nor is saved into it; what was
          typed comes back with its card (CardDraft.tsx, decision 137) */}
      {detail.questionList.length > 0 ? (
        <Questions key={card.id} api={api} detail={detail} onChanged={onChanged} onError={setError} />
      ) : (
        otherQuestionText && (
          <section className="questions" aria-label="Questions">
            <h3>Questions</h3>
            <pre className="markdown">{otherQuestionText}</pre>
          </section>
        )
      )}
      <ScheduleSection key={`schedule-${card.id}`} api={api} detail={detail} onChanged={onChanged} />
      <WorkflowSection key={`workflow-${card.id}`} api={api} cardId={card.id} locked={!!card.locked} />
      <ReplayParamsSection
        key={`params-${card.id}`}
        api={api}
        cardId={card.id}
        locked={!!card.locked}
        onChanged={onChanged}
      />
      <AttemptsSection api={api} detail={detail} selected={run?.runId} onSelect={setRunId} />
      <section className="runs" aria-label="Runs">
        <h3>
          Runs ({detail.runs.length})
          {sumUsage(detail.runs.map((r) => r.usage)) && (
            <span className="usage" title="Model tokens and cost of all this card's runs">
              {' '}
              · {usageText(sumUsage(detail.runs.map((r) => r.usage)))}
            </span>
          )}
        </h3>
        <TrendChart runs={detail.runs} />
        {detail.runs.length === 0 &&
          (card.lastError && !isCancel(card.lastError) ? (
            <p className="muted">No run started: the last try failed before launch (the error is above).</p>
          ) : (
            <p className="muted">
              {card.column === 'queued'
                ? card.waiting
                  ? 'No runs yet: it waits (why is above).'
                  : 'No runs yet: it starts when its flow has room.'
                : card.unreadable
                  ? 'No runs yet: it can run once its file reads again.'
                  : 'No runs yet: press Run (or drag the card into Queued).'}
            </p>
          ))}
        <ol className="run-list">
          {detail.runs.slice(0, 50).map((r) => (
            <li key={r.runId}>
              <button
                className={r.runId === run?.runId ? 'run-item selected' : 'run-item'}
                onClick={() => setRunId(r.runId)}
                aria-pressed={r.runId === run?.runId}
              >
                <span className={`status ${STATUS_CLASS[r.status] ?? ''}`}>{r.status}</span>
                <span>{new Date(r.startedAt).toLocaleString()}</span>
                <span>{r.status === 'running' ? 'running' : fmtMs(r.durationMs)}</span>
                {r.usage && <span className="usage">{usageText(r.usage)}</span>}
              </button>
            </li>
          ))}
        </ol>
      </section>
      {run && (
        <section className="run" aria-label={`Run ${run.runId}`}>
          <h3>
            Run {run.runId}
            <button className="export" onClick={() => void api.exportRun(run.runId)}>
              Export run
            </button>
          </h3>
          {run.usage && (
            <p className="usage" aria-label="Model usage">
              Model usage: {usageText(run.usage, true)}
              {Object.keys(run.usage.models).length > 1 &&
                ` (${Object.entries(run.usage.models)
                  .map(([m, u]) => `${m}: ${usageText({ ...u, models: {} })}`)
                  .join('; ')})`}
            </p>
          )}
          <Worktree key={`wt-${run.runId}`} api={api} run={run} onChanged={onChanged} />
          <WorkspaceCopy key={`copy-${run.runId}`} api={api} run={run} onChanged={onChanged} />
          <RunPanel
            key={run.runId}
            api={api}
            run={run}
            command={commandText}
            onLive={(s) => s.ended && onChanged()}
          />
        </section>
      )}
    </aside>
  );
}
