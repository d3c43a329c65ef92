/**
 * Launch keys (`run/launch` `key`): a launch that names a key the supervisor has seen for the same card
 * is the same launch, and gets the run the first one started instead of a second run. The board's key
 * is the card's queue generation (host/src/core/scheduler-launch-key.ts): a board that could not save
 * a run's start on its card (the disk holding its state full) and was restarted, or that lost the
 * launch's answer, launches the card again with the same key, and the run is not run twice (the soak's
 * c0139, c0146, c0536: two succeeded runs of one card, docs/soak.md).
 *
 * Each key is a symlink `<supervisor>/launch-keys/<sha256(card path, key)>` → the run id, made with
 * one `symlink(2)` before the run's record (result.json) exists and before anything is spawned: it
 * is on disk whole or not at all, and a key whose run has no record (the supervisor died in between,
 * or gc removed the run) names no run and is taken over by the next launch. Such keys, and keys older
 * than 30 days, are pruned by retention's passes while the supervisor lives (`prune`); the keys of the
 * runs a pass or `runboard gc` removes go with them (common/gc.ts `collect`).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { pruneKeys } from '../common/launch-keys.ts';

/** Keys older than this are removed (a board launches a card again within minutes, or days at most). */
const KEY_TTL_MS = 30 * 24 * 3600_000;

export class LaunchKeys {
  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  private file(card: string, key: string): string {
    return path.join(this.dir, createHash('sha256').update(`${card}\0${key}`).digest('hex'));
  }

  /** The run the key of `card` names, if any (it may have no record any more: the caller checks). */
  runOf(card: string, key: string): string | undefined {
    try {
      return readlinkSync(this.file(card, key));
    } catch {
      return undefined;
    }
  }

  /**
   * Records that the key of `card` names `runId` (replacing a key whose run has no record). Throws
   * when the disk cannot take it: the launch is then refused, nothing started.
   */
  record(card: string, key: string, runId: string, replace: boolean): void {
    const file = this.file(card, key);
    if (replace) rmSync(file, { force: true });
    symlinkSync(runId, file);
  }

  /** Forgets the key (the launch it was recorded for started no run). */
  forget(card: string, key: string): void {
    rmSync(this.file(card, key), { force: true });
  }

  /**
   * Removes the keys no launch can use any more: those older than KEY_TTL_MS, and those naming a run
   * with no record (`known` says no: retention or gc removed it, or the supervisor died before
   * writing it; such a key would only be taken over). Retention's passes call it while the supervisor
   * lives (gc-auto.ts), so keys stay as many as the runs kept. Listed and looked at off the event
   * loop; the removal itself is decided again at once, in one synchronous step with it, so a launch
   * that took the key over meanwhile (it names that launch's run now) keeps it. Returns how many went.
   */
  async prune(known: (runId: string) => Promise<boolean>, now = Date.now()): Promise<number> {
    return pruneKeys(this.dir, async (runId, madeMs) => now - madeMs > KEY_TTL_MS || !(await known(runId)));
  }
}
