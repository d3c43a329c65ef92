/**
 * The board store's watchers (board-store.ts): edits made outside the app (an editor, a script, `git
 * pull`) are picked up live through chokidar, which smooths over the platform differences of fs.watch
 * (rename-based saves, duplicate events, editors' temp files). What changed between the store's load()
 * and the watcher being ready is read then (catchUp). The user config is watched too: it is a layer of
 * the effective config.
 */
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { readCard } from './card-files.ts';
import { userConfigPath } from './project.ts';

/** What the watchers do through the store (which keeps the cards). */
export interface WatchedStore {
  readonly cardsDir: string;
  readonly configFile: string;
  /** The card files in cards/ now (absolute paths, sorted). */
  cardFiles(): string[];
  configText(): string;
  /** Reads a file again (a card or config.yaml) and takes in what it says now. */
  reread(file: string): void;
  /** The file is gone. */
  forget(file: string): void;
  /** The entry is no card (a directory named *.md): a broken card saying so. */
  markBroken(file: string, error: string): void;
  /** Takes in config.yaml's text (the user config changed under it). */
  ingestConfig(text: string): void;
  /** What load() read (once; undefined after): each card file's text, and config.yaml's. */
  takeLoaded(): { cards: Map<string, string | undefined>; config: string | undefined } | undefined;
}

export class BoardWatch {
  private watcher: FSWatcher | undefined;
  private userWatcher: FSWatcher | undefined;
  private closed = false;

  constructor(private readonly store: WatchedStore) {}

  /** Starts following changes made outside the app. */
  async start(): Promise<void> {
    if (this.closed) return;
    const { cardsDir, configFile } = this.store;
    this.watcher = watch([cardsDir, configFile], {
      ignoreInitial: true,
      depth: 0,
      // a link is reported as what it is (a broken card saying so), not as what it points to
      followSymlinks: false,
      ignored: (p: string) => {
        const base = path.basename(p);
        return base.startsWith('.') || (p !== cardsDir && p !== configFile && !base.endsWith('.md'));
      },
      // A save in progress must not show as a broken card: wait until the file stops changing.
      awaitWriteFinish: { stabilityThreshold: 60, pollInterval: 20 },
    });
    const onFile = (file: string): void => {
      this.store.reread(file);
    };
    this.watcher
      .on('add', onFile)
      .on('change', onFile)
      .on('unlink', (file) => this.store.forget(file))
      // a directory named *.md: a broken card saying so (chokidar reports it as a directory)
      .on('addDir', (dir) => {
        if (dir !== cardsDir) this.store.markBroken(dir, 'a directory, not a regular file');
      })
      .on('unlinkDir', (dir) => this.store.forget(dir));
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    if (this.closed) return;
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
    await this.watcher?.close();
    await this.userWatcher?.close();
  }

  /**
   * Reads what changed between load() and the watcher being ready (the watcher reports only what
   * changes after that): files whose text is not what load() read, new files, and files gone since.
   */
  private catchUp(): void {
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
