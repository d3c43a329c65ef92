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
 *
 * Both also carry the card file's identity on disk (its inode and change time): a repeated launch
 * finds the very file the first one read, since the only write that could land in between is the
 * run's start, which writes `lastRun`. A file written anew at the path (a card deleted and made again
 * the same, a template card re-made each day, one put back from git or the trash) is another file,
 * so its launch is another queueing and runs (decision 96).
 */
import { createHash } from 'node:crypto';
import { lstatSync } from 'node:fs';
import type { Card } from './project.ts';

/**
 * The card file's identity: its inode and change time (ns), which a file written anew at the path
 * cannot share with the old one (a rename or a write changes the change time). Not its device: a
 * device number may differ after a reboot. `gone` when the file cannot be read (the key then says so).
 */
export function cardFileIdentity(file: string): string {
  try {
    const s = lstatSync(file, { bigint: true });
    return `${s.ino}:${s.ctimeNs}`;
  } catch {
    return 'gone';
  }
}

export function launchKey(card: Card, identity = cardFileIdentity(card.file)): string {
  const h = createHash('sha256').update(`${card.file}\0${identity}\0`);
  if (card.front.lastRun) h.update(`after\0${card.front.lastRun}`);
  else
    h.update(
      `first\0${JSON.stringify([card.front.id, card.front.title, card.front.flow, card.front.command, card.front.workspace, card.body])}`,
    );
  return h.digest('hex');
}
