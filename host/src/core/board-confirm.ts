/**
 * What a person confirmed, for the board store (board-store.ts; the ledger: @runboard/supervisor/ledger).
 * A card that would run by itself (queued, or with a schedule) and whose text is not what a person
 * confirmed or the board wrote waits for a confirm; a config.yaml changed outside the board waits as a
 * `ConfigChange` while the board keeps its last confirmed config (config-changes.ts says what changed).
 * The ledger is written before the file it confirms (`confirmFirst`): see DEVELOPERS.md's lesson.
 */
import path from 'node:path';
import { digestOf, type Ledger } from '@runboard/supervisor/ledger';
import { configChanges } from './config-changes.ts';
import { diskError } from './disk-error.ts';
import { parseConfig, type Card, type ProjectConfig, type readUserConfig } from './project.ts';

/** Why a card that would run by itself (queued, or with a schedule) waits for a person's confirm. */
export interface Confirmation {
  /** The digest of the card's text as it is now: a confirm names it (a later change needs its own). */
  digest: string;
  reason: string;
}

/** A config.yaml that changed outside the board: the board keeps the last confirmed one until then. */
export interface ConfigChange {
  digest: string;
  /** What changed, in words (new flows, a flow's sandbox, the scheduler). */
  changes: string[];
  /** No confirmed config is known: nothing launches until the person confirms this one. */
  noBase?: boolean;
}

/** Would the card run without a person's act: queued in its file, or a schedule? */
export const wouldRun = (card: Card): boolean =>
  card.front.status === 'queued' || (card.front.schedule !== undefined && card.front.schedule !== null);

/**
 * Why the card waits for a person's confirm (`digest`: its text's as last read), or undefined: it may
 * run (no ledger, it would not run by itself, or its text is confirmed).
 */
export function confirmationOf(
  card: Card,
  ledger: Ledger | undefined,
  digest: string | undefined,
): Confirmation | undefined {
  const f = card.front;
  const scheduled = f.schedule !== undefined && f.schedule !== null;
  if (!ledger || !wouldRun(card)) return undefined;
  if (digest === undefined || ledger.confirmed(card.file, digest)) return undefined;
  const what =
    f.status === 'queued'
      ? scheduled
        ? 'to run it and its schedule'
        : 'to run it'
      : 'for its schedule to fire';
  return { digest, reason: `changed outside the board: Confirm ${what}` };
}

/**
 * Records `text` as the confirmed text of `file` (config.yaml when `isConfig`) before the file is
 * written; returns how to put the confirmation back when the write fails.
 */
export function confirmFirst(ledger: Ledger, isConfig: boolean, file: string, text: string): () => void {
  try {
    if (isConfig) {
      const before = ledger.confirmedConfig();
      ledger.recordConfig(text);
      return () =>
        before === undefined ? ledger.record([{ file, digest: null }]) : ledger.recordConfig(before);
    }
    const before = ledger.entry(file);
    ledger.record([{ file, digest: digestOf(text) }]);
    return () => ledger.record([{ file, digest: before ?? null }]);
  } catch (err) {
    throw diskError(err, path.dirname(ledger.file));
  }
}

/** What the board launches with, after config.yaml read `text`. */
export interface ConfigState {
  config: ProjectConfig;
  /** The confirmed text now (unchanged when the new one waits). */
  confirmedText: string | undefined;
  configChange: ConfigChange | undefined;
}

/**
 * config.yaml's `text` taken in: a confirmed one (or any, without a ledger) becomes the config; a changed
 * one waits as the change while the board keeps the last confirmed config (`was`). Throws when `text`
 * does not load.
 */
export function configState(
  file: string,
  text: string,
  user: ReturnType<typeof readUserConfig>,
  ledger: Ledger | undefined,
  was: { config: ProjectConfig | undefined; confirmedText: string | undefined },
): ConfigState {
  const parsed = parseConfig(file, text, user);
  const digest = digestOf(text);
  if (!ledger || ledger.confirmed(file, digest))
    return { config: parsed, confirmedText: text, configChange: undefined };
  let base: ProjectConfig | undefined;
  try {
    if (was.confirmedText !== undefined) base = parseConfig(file, was.confirmedText, user);
  } catch {
    // the confirmed text no longer loads (a user config change): no base
  }
  return {
    config: base ?? was.config ?? parsed,
    confirmedText: was.confirmedText,
    configChange: base
      ? { digest, changes: configChanges(base, parsed) }
      : {
          digest,
          changes: [
            'config.yaml changed outside the board and its last confirmed version is not known: no card starts until you confirm it',
          ],
          noBase: true,
        },
  };
}
