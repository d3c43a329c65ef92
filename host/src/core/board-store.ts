/**
 * The board on disk: a project folder with config.yaml and cards/*.md. The host is the only writer of
 * card state; every write is atomic (write a temp file beside it, then rename: card-files.ts). Edits
 * made outside the app (an editor, a script, `git pull`) are picked up live (board-watch.ts). A card
 * that fails to parse becomes a broken card with its error; an invalid config.yaml keeps the last good
 * config and reports the error. Only regular files are read, without blocking (regular-file.ts): a
 * directory or a FIFO named *.md is a broken card saying so. Cards and config.yaml changed outside the
 * board wait for a person's confirm (the ledger: board-confirm.ts; config-changes.ts says what changed);
 * config.yaml as the board holds it is board-config.ts; deleted cards go to the trash folder
 * (card-trash.ts).
 */
import { EventEmitter } from 'node:events';
import { cpSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseCard, type Card, type CardFrontMatter, type ProjectConfig } from './project.ts';
import type { TrashedCard } from '../shared/board-types.ts';
import { cardText, duplicateText, slugOf } from './card-edit.ts';
import type { CardParseCache } from './card-parse-cache.ts';
import { digestOf, type Ledger } from '@runboard/supervisor/ledger';
import { readRegularFileSync } from './regular-file.ts';
import { MoveRefused } from './board-errors.ts';
import { cardTransition } from './card-lifecycle.ts';
import {
  cardFolder,
  idFromFile,
  patchFrontMatter,
  readCard,
  writeAtomic,
  writeBoundFile,
  writeNew,
} from './card-files.ts';
import {
  confirmationOf,
  confirmFirst,
  wouldRun,
  type ConfigChange,
  type Confirmation,
} from './board-confirm.ts';
import { BoardConfig } from './board-config.ts';
import { restoreCardFile, trashCardFile, trashedCards } from './card-trash.ts';
import { BoardWatch } from './board-watch.ts';
import { UnreadableCards } from './card-unreadable.ts';
import { diskError } from './disk-error.ts';

export { patchFrontMatter, questionsOf, writeAtomic } from './card-files.ts';
export { configChanges } from './config-changes.ts';
export type { ConfigChange, Confirmation } from './board-confirm.ts';

export interface BrokenCard {
  /** Absolute path. */
  file: string;
  error: string;
}

export interface StoreEvents {
  /** A card was added, changed or removed (by the host or from outside); `id` when known. */
  cards: [changed: { file: string; id?: string; external: boolean }];
  /** config.yaml changed: a new good config, or an error (the last good config stays). */
  config: [];
}

export class BoardStore extends EventEmitter<StoreEvents> {
  readonly cardsDir: string;
  readonly configFile: string;
  /** config.yaml as the board holds it: its config, error and waiting change (board-config.ts). */
  private readonly held: BoardConfig;
  /** Cards by id. */
  private readonly cards = new Map<string, Card>();
  /** id by file. */
  private readonly idOf = new Map<string, string>();
  private readonly broken = new Map<string, BrokenCard>();
  /** Cards kept at their last good version while their file does not read (card-unreadable.ts). */
  private readonly unreadable: UnreadableCards;
  /** What the host last wrote to each file: a watcher event with that content is our own echo. */
  private readonly written = new Map<string, string>();
  /** The watchers of cards/, config.yaml and the user config (board-watch.ts). */
  private readonly watching: BoardWatch;
  /**
   * What load() read of each card file (undefined: it could not be read or parsed), until the watcher is
   * ready: what changed in between is read then (catchUp).
   */
  private loaded: Map<string, string | undefined> | undefined;
  private loadedConfig: string | undefined;
  private readonly cache: CardParseCache | undefined;
  private cacheSave: ReturnType<typeof setTimeout> | undefined;
  /** What a person confirmed (ledger.ts); none: every card and config counts as confirmed. */
  private readonly ledger: Ledger | undefined;
  /** The digest of each card file's text as last read. */
  private readonly digests = new Map<string, string>();

  /**
   * `cache`: earlier front matter parses (card-parse-cache.ts); without it every card is parsed.
   * `ledger`: what a person confirmed; cards and config.yaml changed outside the board wait for them.
   */
  constructor(
    readonly projectDir: string,
    opts: { cache?: CardParseCache; ledger?: Ledger } = {},
  ) {
    super();
    this.cache = opts.cache;
    this.ledger = opts.ledger;
    this.projectDir = path.resolve(projectDir);
    this.cardsDir = path.join(this.projectDir, 'cards');
    this.configFile = path.join(this.projectDir, 'config.yaml');
    this.held = new BoardConfig(this.configFile, this.projectDir, this.ledger, () => this.emit('config'));
    this.unreadable = new UnreadableCards(this.projectDir);
    this.watching = new BoardWatch({
      projectDir: this.projectDir,
      cardsDir: this.cardsDir,
      configFile: this.configFile,
      cardFiles: () => this.cardFiles(),
      knownFiles: () => [...this.idOf.keys(), ...this.broken.keys()],
      configText: () => this.configText(),
      reread: (file) => this.reread(file),
      unsettled: () => this.unreadable.files(),
      recheck: (file, outside) => this.recheck(file, outside),
      forget: (file) => this.forget(file),
      ingestConfig: (text) => this.held.ingest(text),
      takeLoaded: () => {
        const loaded = this.loaded && { cards: this.loaded, config: this.loadedConfig };
        this.loaded = undefined;
        this.loadedConfig = undefined;
        return loaded;
      },
    });
  }

  /** The config the board launches with (the last good and confirmed one). */
  get config(): ProjectConfig {
    return this.held.config;
  }
  /** Why config.yaml does not load now (the last good config stays), or undefined. */
  get configError(): string | undefined {
    return this.held.error;
  }
  /** config.yaml changed outside the board and waits for a person's confirm. */
  get configChange(): ConfigChange | undefined {
    return this.held.change;
  }

  /** Loads everything (throws when there was never a good config), assigns missing ids/status. */
  load(): void {
    const ledger = this.ledger;
    this.loadedConfig = this.held.load();
    this.loaded = new Map();
    for (const file of this.cardFiles()) {
      let text: string;
      try {
        text = readCard(file);
      } catch (err) {
        this.loaded.set(file, undefined);
        this.markBroken(file, (err as Error).message);
        continue;
      }
      this.loaded.set(file, this.ingest(file, text) ? text : undefined);
    }
    // A project opened for the first time: a person chose to open it, so what it holds is theirs.
    if (ledger?.fresh) ledger.record([...this.digests].map(([file, digest]) => ({ file, digest })));
    this.saveCacheSoon();
  }

  /**
   * Why the card waits for a person's confirm: it would run by itself (queued, or a schedule) and its
   * text is not what a person confirmed or the board wrote. Undefined: it may run.
   */
  confirmation(card: Card): Confirmation | undefined {
    return confirmationOf(card, this.ledger, this.digests.get(card.file));
  }

  /** Is this text of the card file confirmed (or is there no ledger)? */
  isConfirmed(file: string, text: string): boolean {
    return !this.ledger || this.ledger.confirmed(file, digestOf(text));
  }

  /**
   * A person confirms the card as the board showed it (`digest`): refused when the file says
   * something else now (changed again since it was shown).
   */
  confirmCard(id: string, digest: string): void {
    const card = this.cards.get(id);
    if (!card) throw new Error(`no card ${id}`);
    if (digestOf(readCard(card.file)) !== digest || this.digests.get(card.file) !== digest)
      throw new MoveRefused(
        `${path.relative(this.projectDir, card.file)} changed again since the board showed it: look at it again, then confirm`,
      );
    this.ledger?.record([{ file: card.file, digest }]);
    this.emit('cards', { file: card.file, id, external: false });
  }

  /** A person confirms config.yaml as the board showed it (`digest`): the board launches with it. */
  confirmConfig(digest: string): void {
    this.held.confirm(digest);
  }

  /** The card files in cards/ now (absolute paths, sorted). */
  private cardFiles(): string[] {
    mkdirSync(this.cardsDir, { recursive: true });
    return readdirSync(this.cardsDir)
      .filter((f) => f.endsWith('.md') && !f.startsWith('.'))
      .sort()
      .map((f) => path.join(this.cardsDir, f));
  }

  /** Writes the parse cache a moment after the cards changed (off the start's critical path). */
  private saveCacheSoon(): void {
    if (!this.cache || this.cacheSave) return;
    this.cacheSave = setTimeout(() => {
      this.cacheSave = undefined;
      this.cache?.save();
    }, 2000);
    this.cacheSave.unref();
  }

  /** Starts following changes made outside the app (board-watch.ts). */
  watch(): Promise<void> {
    return this.watching.start();
  }

  async close(): Promise<void> {
    if (this.cacheSave) clearTimeout(this.cacheSave);
    this.cacheSave = undefined;
    this.cache?.save();
    await this.watching.close();
  }

  all(): Card[] {
    return [...this.cards.values()];
  }
  brokenCards(): BrokenCard[] {
    return [...this.broken.values()];
  }
  get(id: string): Card | undefined {
    return this.cards.get(id);
  }
  idForFile(file: string): string | undefined {
    return this.idOf.get(path.resolve(file));
  }
  /** Why a card shows its last good version (its file does not read now), or undefined. */
  unreadableReason(file: string): string | undefined {
    return this.unreadable.reason(file);
  }

  /**
   * Changes a card's front matter (undefined removes a field), preserving everything else in the file
   * (comments, order, the body), and writes it atomically.
   */
  update(
    id: string,
    patch: Partial<Record<keyof CardFrontMatter | string, unknown>>,
    /** Changes the markdown body in the same atomic write (e.g. appending questions). */
    editBody?: (body: string) => string,
    /**
     * `confirm`: a person's explicit act on the card (a drag to Queued, Run again): the new text is
     * confirmed. Otherwise the new text is confirmed only when the text it changes was.
     */
    opts: { confirm?: boolean } = {},
  ): Card {
    const card = this.writable(id);
    // Read, change, write only if nobody wrote in between; else again on what they wrote (their edit
    // and ours both stay: ours touches only the fields in `patch`).
    for (let attempt = 1; ; attempt++) {
      const text = readCard(card.file);
      const next = patchFrontMatter(text, patch, editBody);
      if (this.write(card.file, next, attempt < 5 ? text : undefined, opts.confirm ? true : text))
        return this.ingest(card.file, next, false) ?? card;
    }
  }

  /** Takes in a card file the host has just written (a new card); undefined when it does not parse. */
  ingestNew(file: string): Card | undefined {
    const text = readRegularFileSync(file);
    this.written.set(file, text);
    return this.ingest(file, text, false);
  }

  /** Rewrites config.yaml with `edit` (core/config-edit.ts changes only the values it sets). */
  updateConfig(edit: (text: string) => string): void {
    const next = this.held.edited(edit);
    this.write(this.configFile, next, undefined, true);
    this.held.ingest(next);
  }

  /** The file of a broken card, by its path relative to the project folder. */
  brokenFile(relative: string): BrokenCard | undefined {
    return this.broken.get(path.resolve(this.projectDir, relative));
  }

  /**
   * A new card file in cards/, named after its title (`fix-the-login.md`, `-2` and on when taken); an
   * existing file is never replaced. Returns the card as read back.
   */
  create(front: Record<string, unknown>, body: string): Card {
    const stem = slugOf(String(front.title ?? ''));
    const text = cardText(front, body);
    for (let n = 1; ; n++) {
      const file = path.join(this.cardsDir, `${n === 1 ? stem : `${stem}-${n}`}.md`);
      if (this.placeNew(file, text, true)) {
        const card = this.ingest(file, text, false);
        if (!card)
          throw new Error(`${file}: the new card does not read back: ${this.broken.get(file)?.error}`);
        return card;
      }
    }
  }

  /** A copy of the card in a new file (its run state left out, its title marked as a copy). */
  duplicate(id: string): Card {
    const card = this.writable(id);
    const source = readCard(card.file);
    const text = duplicateText(source, card.front.title);
    const stem = path.basename(card.file, '.md').replace(/-copy(-\d+)?$/, '');
    for (let n = 1; ; n++) {
      const file = path.join(this.cardsDir, `${stem}-copy${n === 1 ? '' : `-${n}`}.md`);
      // the copy is as confirmed as the card it copies
      if (this.placeNew(file, text, this.isConfirmed(card.file, source))) {
        const folder = cardFolder(card.file);
        // the copy gets its own copy of the card's folder (its workflow); links in it are left out
        if (folder)
          cpSync(folder, file.replace(/\.md$/, ''), {
            recursive: true,
            errorOnExist: true,
            force: false,
            filter: (src) => !lstatSync(src).isSymbolicLink(),
          });
        const copy = this.ingest(file, text, false);
        if (!copy) throw new Error(`${file}: the copy does not read back: ${this.broken.get(file)?.error}`);
        return copy;
      }
    }
  }

  /** The card, unless its file does not read now: a write would cut off the rest of a write going on. */
  private writable(id: string): Card {
    const card = this.cards.get(id);
    if (!card) throw new Error(`no card ${id}`);
    const why = this.unreadable.reason(card.file);
    if (why) throw new MoveRefused(why);
    return card;
  }

  /** Writes a new card file only if no entry has that name (card-files.ts); false when it was taken. */
  private placeNew(file: string, text: string, confirm: boolean): boolean {
    if (!writeNew(file, text)) return false;
    this.written.set(file, text);
    if (confirm) this.ledger?.record([{ file, digest: digestOf(text) }]);
    return true;
  }

  /** Replaces a card file's whole text (a person's edit of the file), if it still holds `base`. */
  replaceText(file: string, text: string, base: string): boolean {
    if (!this.write(file, text, base, true)) return false;
    this.ingest(file, text, false);
    return true;
  }

  /** The text of a card file (a regular file only). */
  readText(file: string): string {
    return readCard(file);
  }

  get trashDir(): string {
    return path.join(this.cardsDir, '.trash');
  }

  /** Moves a card file (or a broken entry) into the trash folder (card-trash.ts); `restore` brings it back. */
  trash(file: string): TrashedCard {
    const t = trashCardFile(this.trashDir, file);
    this.ledger?.record([{ file, digest: null }]); // a file put back later is confirmed anew
    this.written.delete(file);
    this.forget(file);
    return t;
  }

  /** The trash folder's cards, newest first. */
  trashed(): TrashedCard[] {
    return trashedCards(this.trashDir);
  }

  /** Puts a trashed card back under its old file name (or `-restored-N` when that is taken). */
  restore(name: string): string {
    const file = restoreCardFile(this.trashDir, this.cardsDir, name);
    this.reread(file);
    return file;
  }

  configText(): string {
    return this.held.text();
  }

  /**
   * Writes a file of the board. `confirm`: true, a person's act (the text is confirmed); a string, the
   * text this one replaces (the new text is confirmed when that one was: the board's own changes to a
   * card, such as its run state, neither confirm nor unconfirm it).
   */
  private write(
    file: string,
    text: string,
    unchangedFrom: string | undefined,
    confirm: boolean | string,
  ): boolean {
    // The ledger first, then the file: a file whose new text the ledger never got (the state root's
    // disk full, the host killed in between) would read as changed outside the board, and a queued
    // card would wait for a person's confirm for ever. A file that could not be written gets its
    // confirmation back.
    const undo =
      this.ledger && (confirm === true || (typeof confirm === 'string' && this.isConfirmed(file, confirm)))
        ? confirmFirst(this.ledger, file === this.configFile, file, text)
        : undefined;
    this.written.set(file, text);
    let done: boolean;
    try {
      // config.yaml in place: a rename over it would detach the read-only mount of it in the runs
      // working in this folder (docs/security-model.md "Write"); cards/ is a folder and keeps its own.
      done =
        file === this.configFile
          ? writeBoundFile(file, text, unchangedFrom)
          : writeAtomic(file, text, unchangedFrom);
    } catch (err) {
      this.written.delete(file);
      undo?.();
      throw diskError(err, path.dirname(file));
    }
    if (!done) {
      this.written.delete(file);
      undo?.();
    }
    return done;
  }

  /** False when the file holds what the host last wrote (the event was our own write's). */
  private reread(file: string): boolean {
    let text: string;
    try {
      // Read at once, in step with the host's own writes (synchronous too): a read that waited in the
      // thread pool could return a version the host has replaced since, which then looked like an
      // outside edit and put old state back (a card "running" again after its run had ended).
      text = file === this.configFile ? readRegularFileSync(file) : readCard(file);
    } catch (err) {
      const gone = (err as NodeJS.ErrnoException).code === 'ENOENT';
      if (gone && file !== this.configFile) {
        this.forget(file);
        return true;
      }
      if (file === this.configFile) this.held.unreadable(err as NodeJS.ErrnoException);
      else this.notCard(file, (err as Error).message);
      return true;
    }
    if (this.written.get(file) === text && !this.unreadable.has(file)) return false;
    this.written.delete(file);
    if (file === this.configFile) this.held.ingest(text);
    else this.ingest(file, text, true);
    return true;
  }

  /**
   * A sweep after the one that found the card unreadable, with no event of the file since: read again
   * when it changed; when it did not, broken if something else changed outside the board meanwhile.
   */
  private recheck(file: string, outside: boolean): void {
    const error = this.unreadable.stayed(file);
    if (error === undefined) this.reread(file);
    else if (outside) this.markBroken(file, error, true);
  }

  /**
   * The file changed and does not read (or parse) as a card now: a card that read before keeps its
   * last good version until it stays so (card-unreadable.ts); anything else is broken at once.
   */
  private notCard(file: string, error: string): void {
    const id = this.idOf.get(file);
    if (!id) return this.markBroken(file, error, true);
    this.unreadable.keep(file, error);
    this.emit('cards', { file, id, external: true });
  }

  private forget(file: string): void {
    this.unreadable.drop(file);
    this.cache?.forget(file);
    this.digests.delete(file);
    const id = this.idOf.get(file);
    this.idOf.delete(file);
    if (id) this.cards.delete(id);
    const wasBroken = this.broken.delete(file);
    if (id || wasBroken) this.emit('cards', { file, ...(id ? { id } : {}), external: true });
  }

  /** The entry at `file` is no card: shown as a broken card with `error` (`emit` as in ingest). */
  private markBroken(file: string, error: string, external?: boolean): void {
    this.unreadable.drop(file);
    const oldId = this.idOf.get(file);
    if (oldId) this.cards.delete(oldId);
    this.idOf.delete(file);
    this.broken.set(file, { file, error });
    if (external !== undefined) this.emit('cards', { file, external });
  }

  /**
   * Parses a card's text and takes it in. A card without `id` or `status` gets them and is written
   * back. `emit` is false for the host's own writes made while loading.
   */
  private ingest(file: string, text: string, external?: boolean): Card | undefined {
    let card: Card;
    const cache = this.cache;
    const parseYaml = cache && ((front: string): unknown => cache.parse(file, front));
    try {
      card = parseCard(file, text, this.projectDir, parseYaml);
    } catch (err) {
      const error = (err as Error).message.replace(`${file}: `, '');
      if (external) this.notCard(file, error);
      else this.markBroken(file, error, external);
      return undefined;
    }
    const patch: Record<string, unknown> = {};
    let id = card.front.id !== undefined ? String(card.front.id) : undefined;
    const owner = id !== undefined ? this.cards.get(id) : undefined;
    if (id === undefined || (owner && owner.file !== file)) {
      // no id, or another file already has it (a copied card): give this one its own
      let candidate = idFromFile(file);
      for (let n = 2; this.cards.has(candidate) && this.cards.get(candidate)!.file !== file; n++)
        candidate = `${idFromFile(file)}-${n}`;
      id = candidate;
      patch.id = id;
    }
    if (card.front.status === undefined) patch.status = cardTransition('created', undefined, 'backlog');
    if (Object.keys(patch).length) {
      const before = text;
      text = patchFrontMatter(text, patch);
      this.write(file, text, undefined, before);
      card = parseCard(file, text, this.projectDir, parseYaml);
    }
    // the digest only where a confirm can be asked (all of them at a first open, to record them)
    if (this.ledger && (this.ledger.fresh || wouldRun(card))) this.digests.set(file, digestOf(text));
    else this.digests.delete(file);
    const oldId = this.idOf.get(file);
    if (oldId && oldId !== id) this.cards.delete(oldId);
    this.broken.delete(file);
    this.unreadable.drop(file);
    this.cards.set(id, card);
    this.idOf.set(file, id);
    this.saveCacheSoon();
    if (external !== undefined) this.emit('cards', { file, id, external });
    return card;
  }
}
