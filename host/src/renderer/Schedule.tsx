/**
 * A card's schedule: the line on the card (next fire) and the inspector's section (the schedule in
 * words, its next five fires, fires waiting for the board, and what became of each fire).
 */
import type { CardView, ScheduleInfo } from '../shared/board-types.ts';

const when = (iso: string): string =>
  new Date(iso).toLocaleString(undefined, {
    weekday: 'short',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
  });

export function ScheduleNote({ schedule }: { schedule: NonNullable<CardView['schedule']> }) {
  if (schedule.error)
    return (
      <div className="card-note error" title={schedule.error}>
        ⏲ schedule not used: {schedule.error}
      </div>
    );
  return (
    <div className="card-note schedule" title={schedule.text}>
      ⏲ next {schedule.next ? when(schedule.next) : 'never'}
    </div>
  );
}

export function ScheduleSection({ card, info }: { card: CardView; info: ScheduleInfo | undefined }) {
  const s = card.schedule;
  if (!s) return null;
  return (
    <section className="schedule" aria-label="Schedule">
      <h3>Schedule</h3>
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
      {info && (
        <>
          <div className="schedule-next">
            Next: {info.next.length ? info.next.map(when).join(' · ') : 'never'}
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
