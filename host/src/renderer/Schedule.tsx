/**
 * A card's schedule: the line on the card (next fire) and the inspector's section: the schedule in
 * words, its next five fires, fires waiting for the board, what became of each fire, and an editor
 * that shows what a phrase means (or why it is refused) before it is saved, and keeps what was typed
 * while other cards are looked at (CardDraft.tsx).
 */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { CardDetail, CardSchedule, ScheduleEdit, SchedulePreview } from '../shared/board-types.ts';
import { dropCardDraft, hasCardDraft, StaleDraft, useCardDraft } from './CardDraft.tsx';

const when = (iso: string): string =>
  new Date(iso).toLocaleString(undefined, {
    weekday: 'short',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });

export function ScheduleNote({ schedule }: { schedule: CardSchedule }) {
  if (schedule.error)
    return (
      <div className="card-note error" title={schedule.error}>
        schedule not used: {schedule.error}
      </div>
    );
  return (
    <div className="card-note schedule" title={schedule.text}>
      scheduled · next {schedule.next ? when(schedule.next) : 'never'}
    </div>
  );
}

/** A text field whose accessible name is its visible label (no aria-label that says something else). */
function TextField(p: { label: string; value: string; set: (v: string) => void; hint: string }) {
  return (
    <label>
      {p.label} <input value={p.value} onChange={(e) => p.set(e.target.value)} placeholder={p.hint} />
    </label>
  );
}

/** The editor's fields as typed ('' for a policy: its default). */
interface ScheduleForm {
  text: string;
  timezone: string;
  missed: ScheduleEdit['missed'] | '';
  overlap: ScheduleEdit['overlap'] | '';
}

function ScheduleEditor({
  api,
  cardId,
  current,
  onDone,
}: {
  api: BoardApi;
  cardId: string;
  current: CardSchedule | undefined;
  onDone: () => void;
}) {
  // the form is a draft of the card's schedule (decision 137): it stays while other cards are looked at
  const draft = useCardDraft<ScheduleForm>(cardId, 'schedule', {
    text: current?.source ?? '',
    timezone: current?.timezone ?? '',
    missed: current?.missed ?? '',
    overlap: current?.overlap ?? '',
  });
  const { text, timezone, missed, overlap } = draft.value;
  const setText = (v: string): void => draft.set((f) => ({ ...f, text: v }));
  const setTimezone = (v: string): void => draft.set((f) => ({ ...f, timezone: v }));
  const setMissed = (v: ScheduleForm['missed']): void => draft.set((f) => ({ ...f, missed: v }));
  const setOverlap = (v: ScheduleForm['overlap']): void => draft.set((f) => ({ ...f, overlap: v }));
  // The preview of what is in the form now: an answer for an earlier text (a slow host answers out of
  // order, or after the person typed on) is never shown, and never enables Save.
  const [answer, setAnswer] = useState<{ key: string; preview: SchedulePreview }>();
  const [error, setError] = useState('');
  const edit: ScheduleEdit = {
    text,
    ...(timezone.trim() ? { timezone: timezone.trim() } : {}),
    ...(missed ? { missed } : {}),
    ...(overlap ? { overlap } : {}),
  };
  const key = JSON.stringify(edit);
  const preview = answer?.key === key ? answer.preview : undefined;
  // while the new text is checked, the last answer stays in place, dimmed (no jump), and Save is off
  const shown = preview ?? (text.trim() ? answer?.preview : undefined);
  const checking = shown !== undefined && preview === undefined;
  useEffect(() => {
    if (!text.trim()) return setAnswer(undefined);
    let live = true;
    const shown = (p: SchedulePreview): void => {
      if (live) setAnswer({ key, preview: p });
    };
    const t = setTimeout(() => {
      api
        .previewSchedule(JSON.parse(key) as ScheduleEdit)
        .then(shown, (e: Error) => shown({ ok: false, error: e.message }));
    }, 200);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [api, key, text]);
  const save = (schedule: ScheduleEdit | null): void => {
    api.setSchedule({ id: cardId, schedule }).then(
      () => {
        draft.drop();
        onDone();
      },
      (e: Error) => setError(e.message),
    );
  };
  return (
    <form
      className="schedule-editor"
      onSubmit={(e) => {
        e.preventDefault();
        if (preview?.ok && !draft.stale) save(edit);
      }}
    >
      <TextField label="Schedule" value={text} set={setText} hint="every weekday at 9:00" />
      <TextField label="Time zone" value={timezone} set={setTimezone} hint="this machine's" />
      <label>
        Missed runs{' '}
        <select value={missed} onChange={(e) => setMissed(e.target.value as ScheduleForm['missed'])}>
          <option value="">latest once (default)</option>
          <option value="skip">skip</option>
          <option value="all">all (at most 10)</option>
        </select>
      </label>
      <label>
        While running{' '}
        <select value={overlap} onChange={(e) => setOverlap(e.target.value as ScheduleForm['overlap'])}>
          <option value="">skip the fire (default)</option>
          <option value="queue">queue it</option>
        </select>
      </label>
      {shown &&
        (shown.ok ? (
          <div
            className={`schedule-preview${checking ? ' checking' : ''}`}
            role="status"
            aria-busy={checking}
          >
            ✓ {shown.text} · cron <code>{shown.cron}</code>
            <br />
            Next (your time): {shown.next.map(when).join(' · ')}
          </div>
        ) : (
          <div className={`banner error${checking ? ' checking' : ''}`} role="status" aria-busy={checking}>
            {shown.error}
          </div>
        ))}
      {error && <div className="banner error">{error}</div>}
      {draft.stale && <StaleDraft what="Its schedule" onDiscard={draft.drop} />}
      <div className="schedule-buttons">
        <button type="submit" disabled={!preview?.ok || draft.stale}>
          Save schedule
        </button>
        {current && (
          <button type="button" className="danger" onClick={() => save(null)}>
            Remove schedule
          </button>
        )}
      </div>
    </form>
  );
}

export function ScheduleSection({
  api,
  detail,
  onChanged,
}: {
  api: BoardApi;
  detail: CardDetail;
  onChanged: () => void;
}) {
  const { card, schedule: info } = detail;
  const s = card.schedule;
  // open again on coming back to a card whose schedule was being typed (the section is keyed by the card)
  const [editing, setEditingState] = useState(() => hasCardDraft(card.id, 'schedule'));
  const setEditing = (open: boolean): void => {
    // closing the editor is its cancel: what was typed is dropped
    if (!open) dropCardDraft(card.id, 'schedule');
    setEditingState(open);
  };
  const editor = (
    <ScheduleEditor
      api={api}
      cardId={card.id}
      current={s}
      onDone={() => {
        setEditing(false);
        onChanged();
      }}
    />
  );
  if (!s)
    return (
      <details className="schedule" open={editing} onToggle={(e) => setEditing(e.currentTarget.open)}>
        <summary>Schedule: none</summary>
        {editing && editor}
      </details>
    );
  return (
    <section className="schedule" aria-label="Schedule">
      <h3>
        Schedule{' '}
        <button type="button" onClick={() => setEditing(!editing)}>
          {editing ? 'Close' : 'Edit'}
        </button>
      </h3>
      {s.error ? (
        <div className="banner error">{s.error}</div>
      ) : (
        <p>
          {s.text}
          {info && (
            <span className="muted">
              {' '}
              · cron <code>{info.cron}</code> · missed runs: {info.missed} · overlap: {info.overlap}
            </span>
          )}
        </p>
      )}
      {editing && editor}
      {info && (
        <>
          <div className="schedule-next">
            Next (your time): {info.next.length ? info.next.map(when).join(' · ') : 'never'}
          </div>
          {info.pending.length > 0 && (
            <div className="banner warn">Waiting to be queued: {info.pending.map(when).join(', ')}</div>
          )}
          <details className="schedule-history">
            <summary>History ({info.history.length})</summary>
            <ol>
              {[...info.history].reverse().map((d, i) => (
                <li key={i} className={`decision ${d.decision}`}>
                  <time dateTime={d.fireAt}>{when(d.fireAt)}</time> <b>{d.decision}</b> — {d.reason}
                </li>
              ))}
            </ol>
          </details>
        </>
      )}
    </section>
  );
}
