/**
 * The board store's watchers (board-store.ts): edits made outside the app (an editor, a script, `git
 * pull`, a run) are picked up live. cards/ and the project folder are watched with `fs.watch`, and every
 * burst of events is answered by a sweep (decision 106): each card file an event named is read again
 * (a file gone is forgotten, a directory or link named *.md is a broken card saying so), and when an
 * event named nothing, or cards/ itself was replaced, every file in cards/ is. Nothing waits on a clock:
 * an event that comes while a sweep runs brings another sweep after it, so no change is dropped however
 * slow the disk or busy the board (chokidar's scan of a folder forgot events that came while it ran
 * once the scan took more than a second: a card written then never appeared). A card file read while
 * it is being written keeps its last good version (card-unreadable.ts) until the rest of its write,
 * an event of its own, is read; a new file read half-written is a broken card until then.
 * What changed between the store's load() and the watchers being armed is read then (catchUp). The
 * user config is watched too (chokidar: one file outside the project, that may not exist yet): it is a
 * layer of the effective config.
 */
import { watch as fsWatch, statSync, type FSWatcher as FsWatcher } from 'node:fs';
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { readCard } from './card-files.ts';
import { userConfigPath } from './project.ts';

/** What the watchers do through the store (which keeps the cards). */
export interface WatchedStore {
  readonly projectDir: string;
  readonly cardsDir: string;
  readonly configFile: string;
  /** The card files in cards/ now (absolute paths, sorted); throws when cards/ cannot be listed. */
  cardFiles(): string[];
  /** The card files the store holds (cards and broken entries). */
  knownFiles(): string[];
  configText(): string;
  /**
   * Reads a file again (a card or config.yaml) and takes in what it says now (or that it is gone);
   * false when it holds what the board last wrote there (the event was the board's own write).
   */
  reread(file: string): boolean;
  /** Cards kept at their last good version while their file does not read (card-unreadable.ts). */
  unsettled(): string[];
  /**
   * A kept card no event named since it was found unreadable: read again if it changed; broken if it
   * did not and `outside` (something else changed meanwhile, not by the board).
   */
  recheck(file: string, outside: boolean): void;
  /** The file is gone. */
  forget(file: string): void;
  /** Takes in config.yaml's text (the user config changed under it). */
  ingestConfig(text: string): void;
  /** What load() read (once; undefined after): each card file's text, and config.yaml's. */
  takeLoaded(): { cards: Map<string, string | undefined>; config: string | undefined } | undefined;
}

/** A name in cards/ that may be a card: `*.md`, not hidden (editors' and the host's temp files are). */
const cardName = (name: string): boolean => name.endsWith('.md') && !name.startsWith('.');

export class BoardWatch {
  private projectWatch: FsWatcher | undefined;
  private cardsWatch: FsWatcher | undefined;
  /** The folder the cards watcher follows (device and inode): another one at cards/ is watched anew. */
  private cardsId: string | undefined;
  private userWatcher: FSWatcher | undefined;
  private closed = false;
  /** Names in cards/ that events named since the last sweep. */
  private readonly dirty = new Set<string>();
  /** Every file in cards/ is read at the next sweep (an event that named nothing, a new cards/). */
  private everything = false;
  private configDirty = false;
  private sweepQueued = false;

  constructor(private readonly store: WatchedStore) {}

  /** Starts following changes made outside the app. */
  async start(): Promise<void> {
    if (this.closed) return;
    const { projectDir, configFile } = this.store;
    // The project folder: config.yaml (saved in place or renamed over, deleted and made again) and
    // cards/ itself (removed, replaced by a checkout).
    this.projectWatch = fsWatch(projectDir, (_event, name) => {
      if (!name || name === 'cards') this.everything = true;
      if (!name || name === path.basename(configFile)) this.configDirty = true;
      this.sweepSoon();
    });
    this.projectWatch.on('error', () => {
      // the project folder itself is gone: nothing to follow until a board opens it again
      this.projectWatch?.close();
      this.projectWatch = undefined;
    });
    // Armed before anything is listed: a change from here on brings a sweep.
    this.armCards();
    this.catchUp();
    // The user config is a layer of the effective config: a change there is read as one of config.yaml.
    this.userWatcher = watch(userConfigPath(), {
      ignoreInitial: true,
      awaitWriteFinish: { stabilityThreshold: 60, pollInterval: 20 },
    });
    const again = (): void => {
      let text: string;
      try {
        text = this.store.configText();
      } catch {
        return; // config.yaml itself cannot be read: its own watcher reports that
      }
      this.store.ingestConfig(text);
    };
    this.userWatcher.on('add', again).on('change', again).on('unlink', again);
    await new Promise<void>((resolve) => this.userWatcher!.once('ready', () => resolve()));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.projectWatch?.close();
    this.cardsWatch?.close();
    await this.userWatcher?.close();
  }

  /**
   * Watches the folder now at cards/ when it is not the one watched (the first time, or cards/ was
   * removed or replaced): everything in it is read at the next sweep. False when there is no cards/.
   */
  private armCards(): boolean {
    const { cardsDir } = this.store;
    let id: string | undefined;
    try {
      const st = statSync(cardsDir);
      if (st.isDirectory()) id = `${st.dev}:${st.ino}`;
    } catch {
      // no cards/ (removed): what it held is gone
    }
    if (id === this.cardsId && (this.cardsWatch || id === undefined)) return id !== undefined;
    this.cardsWatch?.close();
    this.cardsWatch = undefined;
    this.cardsId = id;
    this.everything = true;
    if (id === undefined) return false;
    try {
      this.cardsWatch = fsWatch(cardsDir, (_event, name) => {
        if (!name) this.everything = true;
        else if (cardName(name)) this.dirty.add(name);
        this.sweepSoon();
      });
    } catch {
      this.cardsId = undefined; // gone again in between: the project folder's event comes
      return false;
    }
    this.cardsWatch.on('error', () => {
      // cards/ went away under the watcher: the next sweep looks at what is there now
      this.cardsWatch?.close();
      this.cardsWatch = undefined;
      this.cardsId = undefined;
      this.everything = true;
      this.sweepSoon();
    });
    return true;
  }

  /** One sweep for a burst of events (all those delivered at once), after the current turn. */
  private sweepSoon(): void {
    if (this.sweepQueued || this.closed) return;
    this.sweepQueued = true;
    setImmediate(() => this.sweep());
  }

  /**
   * Reads what the events since the last sweep named. Synchronous, like the host's own writes (a read
   * that waited in the thread pool could return a version the host has replaced since): the events of
   * anything that changes meanwhile arrive after it and bring the next sweep.
   */
  private sweep(): void {
    this.sweepQueued = false;
    if (this.closed) return;
    const { store } = this;
    // whether anything changed that the board did not write itself (its own writes come back as events)
    let outside = false;
    if (this.configDirty) {
      this.configDirty = false;
      outside = store.reread(store.configFile);
    }
    const names = [...this.dirty];
    this.dirty.clear();
    // Cards kept at their last good version while their file did not read (a write going on, decision
    // 114): one that no event named since is looked at again below.
    const kept = store.unsettled();
    const named = new Set(names.map((name) => path.join(store.cardsDir, name)));
    if (this.everything || !this.cardsWatch) {
      // cards/ may be another folder now (or none): watch the one there, and read all it holds
      const haveCards = this.armCards();
      this.everything = false;
      outside = true;
      let now: string[] = [];
      try {
        if (haveCards) now = store.cardFiles();
      } catch {
        // cards/ went away meanwhile: its event comes
      }
      const present = new Set(now);
      for (const file of store.knownFiles()) if (!present.has(file)) store.forget(file);
      for (const file of now) if (!kept.includes(file) || named.has(file)) store.reread(file);
    } else for (const file of named) outside = store.reread(file) || outside;
    // ...read again if it changed, and shown broken if it stayed as it was while something else changed
    // outside the board (the board's own writes say nothing of a writer that is still going)
    for (const file of kept) if (!named.has(file)) store.recheck(file, outside);
  }

  /**
   * Reads what changed between load() and the watchers being armed: files whose text is not what
   * load() read, new files, and files gone since.
   */
  private catchUp(): void {
    this.everything = false;
    const loaded = this.store.takeLoaded();
    if (!loaded) return;
    const { configFile } = this.store;
    try {
      if (this.store.configText() !== loaded.config) this.store.reread(configFile);
    } catch {
      this.store.reread(configFile); // says what is wrong with it
    }
    let now: string[];
    try {
      now = this.store.cardFiles();
    } catch {
      return; // cards/ itself is gone: the watcher reports it
    }
    for (const file of now) {
      const before = loaded.cards.get(file);
      loaded.cards.delete(file);
      if (before !== undefined) {
        let text: string | undefined;
        try {
          text = readCard(file);
        } catch {
          // reread says what is wrong
        }
        if (text === before) continue;
      }
      this.store.reread(file);
    }
    for (const file of loaded.cards.keys()) this.store.forget(file);
  }
}
