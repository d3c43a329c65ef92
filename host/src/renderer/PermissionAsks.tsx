/**
 * The card's permission asks (docs/user-guide-board.md, "When a run asks for a permission"): what the
 * sandbox refused the card's last run, or what its live run waits for at a tool call, as the
 * supervisor recorded it, with Allow once, Allow always for the flow, and Deny. The run's own words
 * are shown as evidence, never as what will be allowed. A live ask of one of the card's attempts says
 * which attempt waits (every attempt that waits is shown, each answerable), and every live ask the
 * `runboard answer` command that answers it too. What each answer does is said once for the card,
 * below its asks (the attempts of a card ask the same, and each had repeated it).
 */
import { useState } from 'react';
import type { PermissionAsk } from '@runboard/supervisor/protocol/data';
import { describeAsk } from '../shared/asks.ts';
import type { BoardApi } from '../shared/board-api.ts';
import type { AskChoice, CardAsks, CardDetail } from '../shared/board-types.ts';

function once(a: PermissionAsk): string {
  switch (a.kind) {
    case 'write':
      return `lets the card's next run write anywhere in ${a.path} (and the folders in it), that run only`;
    case 'read':
      return `lets the card's next run read (not write) ${a.path} and the folders in it, that run only`;
    case 'connect':
      return `lets the card's next run connect to TCP port ${a.port}, that run only`;
    case 'delete':
      return `lets the card's next run delete files in ${a.path} (and the folders in it), that run only`;
  }
}

/** Allow once for an ask its live run waits on (supervisor live-asks.ts, live-grant.ts). */
function onceLive(a: PermissionAsk, attempt: boolean): string {
  const what =
    a.kind === 'read'
      ? `read (not write) ${a.path}`
      : `${a.kind === 'delete' ? 'delete files' : 'write anywhere'} in ${a.path}`;
  return attempt
    ? `lets this attempt's run ${what} (and the folders in it) from now on, that run only: its tool goes on. Where that run cannot gain it, the attempt stops and counts as failed; the other attempts go on`
    : `lets this run ${what} (and the folders in it) from now on, this run only: the agent's tool goes on. Where this run cannot gain it, it stops and the card runs again at once with it`;
}

/**
 * Allow always is the flow's, not the card's (decision 96): the words on the button and here say so.
 * A flow's sandbox is where a person sees and removes a standing permission (config.yaml).
 */
function always(a: PermissionAsk, flow: string): string {
  const every = `every run of flow ${flow} from now, this card's and every other card's of that flow`;
  switch (a.kind) {
    case 'write':
      return `gives ${every}: adds ${a.path} to flow ${flow}'s sandbox.writable in config.yaml and grants that folder`;
    case 'read':
      return `gives ${every}: adds ${a.path} to flow ${flow}'s sandbox.read in config.yaml (read only)`;
    case 'connect':
      return `gives ${every}: adds port ${a.port} to flow ${flow}'s sandbox.tcpPorts in config.yaml`;
    case 'delete':
      return `gives ${every}: adds the folder to flow ${flow}'s sandbox.deletable in config.yaml`;
  }
}

/** What Allow once, Allow always and Deny do for this ask of this run. */
function noteOf(asks: CardAsks, a: PermissionAsk): string {
  const live = asks.live === true;
  return (
    `Allow once ${live ? onceLive(a, !!asks.attempt) : once(a)}. Allow always ${always(a, asks.flow)}` +
    `${live ? ', and continues as Allow once does' : ''}. ` +
    (live ? 'Deny tells the agent no: it goes on without it, and so does the run.' : 'Deny fails the card.')
  );
}

/**
 * What each answer does, once for the card: one paragraph when every ask's is the same (a card's
 * attempts asking alike), else one per different ask, each saying which ask it is for.
 */
function AnswerNotes({ groups }: { groups: CardAsks[] }) {
  const notes = new Map<string, string>();
  for (const g of groups) for (const a of g.open) notes.set(noteOf(g, a), describeAsk(a));
  return (
    <div className="ask-help">
      <h4>What each answer does</h4>
      {notes.size === 1 ? (
        <p className="muted ask-note">{[...notes.keys()][0]}</p>
      ) : (
        <ul className="ask-notes">
          {[...notes].map(([note, what]) => (
            <li key={note} className="muted ask-note">
              <strong>{what}</strong>: {note}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

interface Props {
  api: BoardApi;
  detail: CardDetail;
  /** After an answer: the inspector reloads the card. */
  onChanged: () => void;
  onError: (m: string) => void;
}

export function PermissionAskPanel({ api, detail, onChanged, onError }: Props) {
  const [busy, setBusy] = useState(false);
  // the run that waited first, then the card's other live runs that wait (its other attempts): the
  // header counts every one of their asks, so each is shown, with its attempt, and answerable
  const groups = [detail.asks, ...(detail.otherAsks ?? [])].filter(
    (g): g is CardAsks => !!g && g.open.length > 0,
  );
  if (groups.length === 0) return null;
  const answer = (asks: CardAsks, ask: PermissionAsk, choice: AskChoice): void => {
    setBusy(true);
    api
      .answerAsk({ id: detail.card.id, runId: asks.runId, ask: ask.id, choice })
      .then(onChanged, (e: Error) => onError(e.message))
      .finally(() => setBusy(false));
  };
  return (
    <section className="asks" aria-label="Permission asks">
      {groups.map((asks) => (
        <AskGroup key={asks.runId} asks={asks} busy={busy} answer={answer} />
      ))}
      <AnswerNotes groups={groups} />
    </section>
  );
}

/** One run's asks: a heading saying whose (the run, or which attempt), then each ask with its answers. */
function AskGroup({
  asks,
  busy,
  answer,
}: {
  asks: CardAsks;
  busy: boolean;
  answer: (asks: CardAsks, ask: PermissionAsk, choice: AskChoice) => void;
}) {
  const live = asks.live === true;
  const heading = live
    ? asks.attempt
      ? `Attempt ${asks.attempt.n} of ${asks.attempt.of} waits for your answer`
      : 'The run waits for your answer'
    : 'The run asks for a permission';
  const headingId = `asks-${asks.runId}`;
  return (
    <div className="ask-run" role="group" aria-labelledby={headingId}>
      <h3 id={headingId}>{heading}</h3>
      <ol className="ask-list">
        {asks.open.map((a) => {
          const what = describeAsk(a);
          return (
            <li key={a.id} className="ask">
              <p className="ask-what">
                {live
                  ? 'It asks, before the act'
                  : a.source === 'agent'
                    ? 'The agent was refused'
                    : 'The sandbox refused'}
                : <strong>{what}</strong>
              </p>
              <p className="muted ask-evidence">
                {live ? 'Asked for' : 'The run printed'}: <code>{a.evidence}</code>
              </p>
              <div className="ask-actions" role="group" aria-label={`Answer: ${what}`}>
                <button className="primary" disabled={busy} onClick={() => answer(asks, a, 'once')}>
                  Allow once
                </button>
                <button
                  className="always"
                  disabled={busy}
                  title={always(a, asks.flow)}
                  onClick={() => answer(asks, a, 'always')}
                >
                  <span>Allow always</span> <span>for flow {asks.flow}</span>
                </button>
                <button className="danger" disabled={busy} onClick={() => answer(asks, a, 'deny')}>
                  Deny
                </button>
              </div>
              {live && (
                <p className="muted ask-cli">
                  From a terminal:{' '}
                  <code>
                    runboard answer <span className="ask-id">{asks.runId}</span> {a.id} allow|deny
                  </code>
                </p>
              )}
            </li>
          );
        })}
      </ol>
    </div>
  );
}
