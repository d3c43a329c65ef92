/**
 * What only root may read in /etc (reads.ts `rootOnlyEntries`), for the runs of a supervisor started as
 * root: walked at the first run that needs it, not at the supervisor's start (~1,300 lstat calls, ~20 ms
 * of CPU), and kept while nothing in the folders the walk read changed. Each folder is watched
 * (inotify) before it is listed, so a change made during or after the walk (a new key file, a chmod, a
 * folder made or removed) drops the list and the next run walks again: a run reads /etc as it is when
 * it is launched, not as it was when the supervisor started. Where a folder cannot be watched (no
 * inotify watches left), nothing is kept: every run walks.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';
import { rootOnlyEntries } from './reads.ts';

export class RootOnlyEntries {
  #entries: string[] | undefined;
  #watchers: FSWatcher[] = [];
  /** Bumped when the list is dropped: events of an older walk's watchers change nothing. */
  #generation = 0;
  #unwatchable = false;
  /** How many walks were made (tests: a kept list is not walked again). */
  walks = 0;

  constructor(
    private readonly dir = '/etc',
    private readonly log?: Pick<Logger, 'warn'>,
  ) {}

  /** The entries as they are now (walked again if anything changed since the last walk). */
  current(): string[] {
    if (this.#entries) return this.#entries;
    this.#drop();
    const generation = this.#generation;
    let watched = true;
    const entries = rootOnlyEntries(this.dir, 1000, (folder) => {
      if (!watched) return;
      try {
        const w = watch(folder, { persistent: false }, () => this.#changed(generation));
        w.on('error', () => this.#changed(generation));
        this.#watchers.push(w);
      } catch (err) {
        watched = false;
        if (!this.#unwatchable)
          this.log?.warn(
            { folder, err: (err as Error).message },
            `cannot watch ${folder} (${(err as Error).message}): root runs look through ${this.dir} at every launch`,
          );
        this.#unwatchable = true;
      }
    });
    this.walks++;
    if (watched && generation === this.#generation) this.#entries = entries;
    else this.#drop();
    return entries;
  }

  /** Stop watching (the supervisor's shutdown; tests). */
  close(): void {
    this.#drop();
  }

  #changed(generation: number): void {
    if (generation === this.#generation) this.#drop();
  }

  #drop(): void {
    this.#generation++;
    this.#entries = undefined;
    for (const w of this.#watchers.splice(0)) w.close();
  }
}
