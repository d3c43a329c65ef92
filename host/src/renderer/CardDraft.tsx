/**
 * What a person typed into a card's form and has not saved, kept per card and field while the
 * inspector shows other cards (decision 137). In this page's memory only: never localStorage,
 * sessionStorage or the host (a typed answer may be a secret); a reload starts without drafts. A
 * sensitive replay parameter is never put here (ReplayParams.tsx keeps it in its field only).
 *
 * A draft remembers what the card held when it was started (`base`): when the card's own value has
 * changed since (another editor, a run, another board), the draft is `stale`. It is kept and shown, as
 * the workflow editor's edits always were, and its form refuses to save it over the newer value until
 * the person discards it (the workflow editor's save is refused by the host, by the file's text).
 */
import { useState } from 'react';

interface Draft {
  value: unknown;
  /** What the card held when the draft was started (its `base` string). */
  base: string;
}

const drafts = new Map<string, Draft>();
const keyOf = (cardId: string, field: string): string => `${cardId}\u0000${field}`;

/** Whether card `cardId` has a draft of `field` (e.g. to open its editor again on coming back). */
export function hasCardDraft(cardId: string, field: string): boolean {
  return drafts.has(keyOf(cardId, field));
}

/** Forgets card `cardId`'s draft of `field` (an editor closed from outside the form). */
export function dropCardDraft(cardId: string, field: string): void {
  drafts.delete(keyOf(cardId, field));
}

export interface CardDraft<T> {
  /** The draft, or `initial` when there is none. */
  value: T;
  /** Sets the draft; a value equal to `initial` drops it (nothing unsaved is left). */
  set: (next: T | ((cur: T) => T)) => void;
  /** Forgets the draft: after it was saved or sent, or when the person discards it. */
  drop: () => void;
  drafted: boolean;
  /** The card's value changed since the draft was started: saving it would overwrite that. */
  stale: boolean;
  /** What the card held when the draft was started (`base` now when there is no draft). */
  base: string;
}

/**
 * Card `cardId`'s unsaved `field`: `initial` is what the card holds now, `base` what a draft made now
 * would be made on (by default `initial` itself, as JSON; the workflow editor gives the file's text).
 */
export function useCardDraft<T>(
  cardId: string,
  field: string,
  initial: T,
  base: string = JSON.stringify(initial) ?? '',
): CardDraft<T> {
  const [, render] = useState(0);
  const key = keyOf(cardId, field);
  const draft = drafts.get(key);
  const value = draft ? (draft.value as T) : initial;
  const changed = (): void => render((n) => n + 1);
  return {
    value,
    set: (next) => {
      const cur = drafts.get(key);
      const v = typeof next === 'function' ? (next as (c: T) => T)(cur ? (cur.value as T) : initial) : next;
      // typed back to what the card holds (and the card still holds what the draft was made on): no draft
      if (JSON.stringify(v) === JSON.stringify(initial) && (cur?.base ?? base) === base) drafts.delete(key);
      else drafts.set(key, { value: v, base: cur?.base ?? base });
      changed();
    },
    drop: () => {
      drafts.delete(key);
      changed();
    },
    drafted: !!draft,
    stale: !!draft && draft.base !== base,
    base: draft?.base ?? base,
  };
}

/**
 * Says that a draft is stale (the card's value changed since it was typed) and offers to discard it;
 * the form's save stays off meanwhile.
 */
export function StaleDraft({ what, onDiscard }: { what: string; onDiscard: () => void }) {
  return (
    <div className="banner warn stale-draft" role="status">
      <span>
        {what} changed on the card since you typed this, so it is not saved over it. Copy what you need, then
        discard your text to see the card&apos;s.
      </span>
      <button type="button" onClick={onDiscard}>
        Discard my text
      </button>
    </div>
  );
}
