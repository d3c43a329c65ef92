/**
 * A card's launch key (`run/launch` `key`; the supervisor's launch-keys.ts): its queue generation, the
 * same for every launch of one queueing of the card and new for the next. A launch the board repeats
 * for one queueing (the run's start could not be saved on the card, the disk holding the board's
 * state full, and the board was restarted or dropped that write; the launch's answer was lost) then
 * gets the run the first launch started, never a second run (docs/soak.md, "no run counted twice").
 *
 * What tells one queueing from the next is on the card before its launch: every run's start and end
 * write `lastRun`, so a card queued again after a run (a retry, "Run again", a move) names that run.
 * A card that never ran has no `lastRun`: its key is its work (title, flow, command, body), so a new
 * card put at the same path later with other work is not mistaken for the old one.
 */
import { createHash } from 'node:crypto';
import type { Card } from './project.ts';

export function launchKey(card: Card): string {
  const h = createHash('sha256').update(`${card.file}\0`);
  if (card.front.lastRun) h.update(`after\0${card.front.lastRun}`);
  else
    h.update(
      `first\0${JSON.stringify([card.front.id, card.front.title, card.front.flow, card.front.command, card.front.workspace, card.body])}`,
    );
  return h.digest('hex');
}
