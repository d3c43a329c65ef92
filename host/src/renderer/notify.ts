/**
 * Browser notifications of runs (opt-in, Settings): which cards a board change is worth telling the
 * person about (a run ended, or a card came to need input) and the setting, kept in this browser. Pure
 * but for the setting's storage.
 */
import { COLUMN_TITLES, type CardView, type Column } from '../shared/board-types.ts';

export interface Note {
  /** The card, also the notification's tag (a newer note of a card replaces the older one). */
  id: string;
  title: string;
  body: string;
}

/** What ended or came to need input between two boards (by each card's column). */
export function notesBetween(before: ReadonlyMap<string, Column>, after: readonly CardView[]): Note[] {
  const out: Note[] = [];
  for (const c of after) {
    const was = before.get(c.id);
    if (was === undefined || was === c.column) continue;
    if (c.column === 'needs-input')
      out.push({
        id: c.id,
        title: `Needs input: ${c.title}`,
        body: 'The run asks a question: answer it on the board.',
      });
    else if (was === 'running')
      out.push({
        id: c.id,
        title: `Run ${c.column === 'done' ? 'finished' : c.column === 'failed' ? 'failed' : 'ended'}: ${c.title}`,
        body:
          c.column === 'done' || !c.lastError
            ? `Now in ${COLUMN_TITLES[c.column]}.`
            : c.lastError.slice(0, 200),
      });
  }
  return out;
}

const KEY = 'runboard.notify';

/** The person's choice in this browser (notifications are a per-browser permission anyway). */
export function notifySetting(): boolean {
  try {
    return localStorage.getItem(KEY) === 'on';
  } catch {
    return false;
  }
}

export function setNotifySetting(on: boolean): void {
  try {
    localStorage.setItem(KEY, on ? 'on' : 'off');
  } catch {
    // storage refused (a private window): the choice lasts until the page closes
  }
}
