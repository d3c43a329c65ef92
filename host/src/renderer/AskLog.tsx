/**
 * A run's asks at the tool call, in its log (docs/user-guide-board.md "When a run asks for a
 * permission"): each ask the run waited on and how it ended: allowed, denied by the person, or
 * denied because no answer came within the flow's time limit. From the run's events (the
 * supervisor's `ask` and `ask-answer`), never the run's own words.
 */
import type { RunEvent } from '@runboard/supervisor/protocol/data';
import type { PermissionAsk } from '@runboard/supervisor/protocol/data';
import { describeAsk } from '../shared/asks.ts';

type AskData = { kind?: unknown; live?: unknown; asks?: unknown; ask?: unknown; choice?: unknown };

/** Whether a run event is one of the asks at the tool call (what AskLog shows). */
export function isAskEvent(e: RunEvent): boolean {
  const d = e.data as AskData | undefined;
  return (d?.kind === 'ask' && d.live === true) || d?.kind === 'ask-answer';
}

const OUTCOME: Record<string, string> = {
  allow: 'allowed by you',
  deny: 'denied by you',
  timeout: 'denied: no answer within the time limit',
};

export function AskLog({ events }: { events: readonly RunEvent[] }) {
  const asks = new Map<string, { what: string; outcome?: string }>();
  for (const e of events) {
    const d = e.data as AskData | undefined;
    if (d?.kind === 'ask' && Array.isArray(d.asks))
      for (const a of d.asks as PermissionAsk[]) asks.set(a.id, { what: describeAsk(a) });
    else if (d?.kind === 'ask-answer' && typeof d.ask === 'string' && typeof d.choice === 'string') {
      const a = asks.get(d.ask);
      if (a) a.outcome = OUTCOME[d.choice] ?? d.choice;
    }
  }
  if (asks.size === 0) return null;
  return (
    <section className="ask-log" aria-label="Asks at the tool call">
      <h4>Asked at the tool call</h4>
      <ul>
        {[...asks].map(([id, a]) => (
          <li key={id} className={a.outcome?.startsWith('denied') ? 'denied' : ''}>
            {a.what}: {a.outcome ?? 'waits for your answer'}
          </li>
        ))}
      </ul>
    </section>
  );
}
