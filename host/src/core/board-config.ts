/**
 * config.yaml as the board holds it (board-store.ts): the config the board launches with, the error
 * of a config.yaml that does not load (the last good config stays), and a change made outside the
 * board that waits for a person's confirm while the board keeps the last confirmed config (the ledger:
 * board-confirm.ts; config-changes.ts says what changed). Older config files are written as the
 * current version when the board opens the project. The store writes the file (its `write`: the ledger
 * first, then the file in place) and follows it (board-watch.ts); this holds what was read.
 */
import { digestOf, type Ledger } from '@runboard/supervisor/ledger';
import { parseConfig, readUserConfig, upgradeConfigFiles, type ProjectConfig } from './project.ts';
import { readRegularFileSync } from './regular-file.ts';
import { MoveRefused } from './board-errors.ts';
import { configState, type ConfigChange } from './board-confirm.ts';

export class BoardConfig {
  config!: ProjectConfig;
  error: string | undefined;
  /** config.yaml changed outside the board and waits for a person's confirm. */
  change: ConfigChange | undefined;
  /** The confirmed config.yaml text the board launches with while a changed one waits. */
  private confirmedText: string | undefined;

  /** `changed`: the config, its error or its waiting change is new (the store's 'config' event). */
  constructor(
    readonly file: string,
    private readonly projectDir: string,
    private readonly ledger: Ledger | undefined,
    private readonly changed: () => void,
  ) {}

  /** Reads config.yaml as the board opens the project (throws when there was never a good config); its text. */
  load(): string {
    const ledger = this.ledger;
    let before: string | undefined;
    try {
      before = readRegularFileSync(this.file);
    } catch {
      // said below
    }
    // Older config files are written as the current version first (comments kept; config.ts).
    upgradeConfigFiles(this.projectDir);
    let text: string;
    try {
      text = readRegularFileSync(this.file);
    } catch (err) {
      throw new Error(`${this.file}: ${(err as Error).message}`);
    }
    // the upgrade of a confirmed config is confirmed too (the board wrote it on top of that)
    if (ledger && !ledger.fresh && before !== undefined && before !== text)
      if (ledger.confirmed(this.file, digestOf(before))) ledger.recordConfig(text);
    if (ledger?.fresh) ledger.recordConfig(text);
    this.confirmedText = ledger ? ledger.confirmedConfig() : text;
    this.config = parseConfig(this.file, text, readUserConfig());
    if (this.confirmedText !== text) this.ingest(text, false);
    return text;
  }

  text(): string {
    return readRegularFileSync(this.file);
  }

  /**
   * Takes in config.yaml's text: a confirmed one (or any, without a ledger) becomes the config; a
   * changed one waits as `change` while the board keeps the last confirmed config.
   */
  ingest(text: string, emit = true): void {
    try {
      const next = configState(this.file, text, readUserConfig(), this.ledger, {
        config: this.config,
        confirmedText: this.confirmedText,
      });
      this.error = undefined;
      ({ config: this.config, confirmedText: this.confirmedText, configChange: this.change } = next);
    } catch (err) {
      this.error = (err as Error).message;
    }
    if (emit) this.changed();
  }

  /** config.yaml does not read now: the last good config stays; its return (or a new one) is read when it comes. */
  unreadable(err: NodeJS.ErrnoException): void {
    this.error =
      err.code === 'ENOENT'
        ? `${this.file} is gone (deleted or renamed): the board keeps its last good config until the file is back`
        : `${this.file}: ${err.message}`;
    this.changed();
  }

  /** A person confirms config.yaml as the board showed it (`digest`): the board launches with it. */
  confirm(digest: string): void {
    const text = this.text();
    const change = this.change;
    if (!change || change.digest !== digest || digestOf(text) !== digest)
      throw new MoveRefused(
        'config.yaml changed again since the board showed it (or has no change to confirm): look at it again, then confirm',
      );
    this.ledger?.recordConfig(text);
    this.confirmedText = text;
    this.ingest(text);
  }

  /**
   * The text `edit` makes of config.yaml (core/config-edit.ts changes only the values it sets), for
   * the store to write: refused while a change made outside the board waits, or when it would not load.
   */
  edited(edit: (text: string) => string): string {
    if (this.change)
      throw new MoveRefused(
        'config.yaml changed outside the board and waits for your confirm: confirm it (or undo that change) first',
      );
    const next = edit(this.text());
    parseConfig(this.file, next, readUserConfig()); // refuse to write a config that would not load
    return next;
  }
}
