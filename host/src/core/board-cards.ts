/**
 * A person's cards on the board: a new card, an edit of its fields or of its whole file, a copy, the
 * trash and back. Every write goes through the store (board-store.ts: the ledger first, then the file);
 * a running card is not edited or deleted (cancel first), and a file changed since the person opened it
 * is not overwritten.
 */
import path from 'node:path';
import { resolveSchedule } from '@runboard/project/schedule';
import type { CardFields, CardForm, CardSource, ScheduleEdit, TrashedCard } from '../shared/board-types.ts';
import { Invalid, MoveRefused, NotFound } from './board-errors.ts';
import { cardForm, workspaceValue } from './board-folders.ts';
import type { BoardStore } from './board-store.ts';
import type { GrantStore } from './grant-store.ts';
import type { Card } from './project.ts';
import type { Scheduler } from './scheduler.ts';
import { localZone, scheduleFrontMatter } from './schedules.ts';

export interface BoardCardsDeps {
  store: BoardStore;
  grants: GrantStore;
  scheduler: Scheduler;
  /** The card by id, or NotFound. */
  card(id: string): Card;
  /** Queues the card at the end of Queued, as a person's move does. */
  queue(id: string): void;
  /** A card with a schedule was made: the schedules are registered again. */
  schedulesChanged(): void;
  /** The board changed: its view is sent again soon. */
  changed(): void;
}

export class BoardCards {
  constructor(private readonly deps: BoardCardsDeps) {}

  /** The granted folders a card may work in (the editor's choices). */
  form(): CardForm {
    return cardForm(this.deps.grants, this.deps.store.projectDir);
  }

  /** The checked fields of an edited or new card; `card` is the card as it is (an edit). */
  private checkFields(f: CardFields, card?: Card): void {
    if (!f.title.trim()) throw new Invalid('a card needs a title');
    const flows = this.deps.store.config.flows;
    if (!Object.hasOwn(flows, f.flow))
      throw new Invalid(
        `no flow ${f.flow} in config.yaml (flows: ${Object.keys(flows).join(', ') || 'none'})`,
      );
    const ws = f.workspace ? path.resolve(f.workspace) : this.deps.store.projectDir;
    if (!path.isAbsolute(f.workspace || '/'))
      throw new Invalid(`the workspace must be an absolute folder path (got ${f.workspace})`);
    // a folder the card had already stays as it is; a new one must be granted, or its runs could not start
    if (ws !== card?.workspace && !this.deps.grants.find(ws))
      throw new Invalid(
        `${ws} is not granted to runs: grant it first (Grant a folder… in the editor, or \`runboard grant ${ws}\`)`,
      );
    const runner = flows[f.flow]!.runner;
    const command = typeof f.command === 'string' ? f.command.trim() : f.command;
    if (runner === 'command' && !command)
      throw new Invalid(`flow ${f.flow} runs a command: give the command the card runs`);
  }

  /** The card's front matter for these fields (undefined: the field is left out). */
  private frontOf(f: CardFields): Record<string, unknown> {
    const command = typeof f.command === 'string' ? f.command.trim() || undefined : f.command;
    return {
      title: f.title.trim(),
      flow: f.flow,
      workspace: f.workspace
        ? workspaceValue(this.deps.store.projectDir, path.resolve(f.workspace))
        : undefined,
      command,
    };
  }

  /** A person writes a new card from the board: a card file as they would write it, in Backlog (or queued). */
  create(f: CardFields, schedule?: ScheduleEdit, queue?: boolean): { id: string } {
    this.checkFields(f);
    let raw: unknown;
    if (schedule?.text.trim()) {
      raw = scheduleFrontMatter(schedule);
      const r = resolveSchedule(raw, localZone());
      if (!r.ok) throw new Invalid(r.error);
    }
    const card = this.deps.store.create({ ...this.frontOf(f), schedule: raw }, f.body);
    const id = String(card.front.id);
    if (queue) this.deps.queue(id);
    if (raw !== undefined) this.deps.schedulesChanged();
    this.deps.changed();
    return { id };
  }

  /**
   * A person changes a card: only what differs is written, so comments, field order and the host's
   * state stay. The body is replaced only if the file's body is still what the editor started from.
   */
  edit(id: string, f: CardFields, baseBody: string): void {
    const card = this.deps.card(id);
    if (this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: cancel the run to edit it');
    this.checkFields(f, card);
    const next = this.frontOf(f);
    const patch: Record<string, unknown> = {};
    if (next.title !== card.front.title) patch.title = next.title;
    if (next.flow !== card.front.flow) patch.flow = next.flow;
    const ws = f.workspace ? path.resolve(f.workspace) : this.deps.store.projectDir;
    if (ws !== card.workspace) patch.workspace = next.workspace;
    if (JSON.stringify(next.command) !== JSON.stringify(card.front.command)) patch.command = next.command;
    const body = f.body.replace(/\r\n/g, '\n');
    const bodyChanged = body !== card.body;
    if (bodyChanged && baseBody.replace(/\r\n/g, '\n') !== card.body)
      throw new MoveRefused(
        `${path.relative(this.deps.store.projectDir, card.file)} changed since you opened it (edited outside the board, or by a run): copy your text, reopen the card and edit again`,
      );
    if (!Object.keys(patch).length && !bodyChanged) return;
    this.deps.store.update(id, patch, bodyChanged ? () => body : undefined);
    this.deps.changed();
    this.deps.scheduler.kick();
  }

  /** A copy of the card in Backlog, without its runs' state. */
  duplicate(id: string): { id: string } {
    this.deps.card(id);
    const copy = this.deps.store.duplicate(id);
    this.deps.changed();
    return { id: String(copy.front.id) };
  }

  /** The file of a card or of a broken card (`broken:<file>`), by the id the board shows. */
  private fileOf(id: string): { file: string; card?: Card } {
    if (id.startsWith('broken:')) {
      const b = this.deps.store.brokenFile(id.slice('broken:'.length));
      if (!b) throw new NotFound(`no broken card ${id.slice('broken:'.length)}`);
      return { file: b.file };
    }
    const card = this.deps.card(id);
    return { file: card.file, card };
  }

  /** Moves a card file into the trash folder (a running card is cancelled first, by the person). */
  trashOne(id: string): TrashedCard {
    const { file, card } = this.fileOf(id);
    if (card && this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: cancel the run to delete it');
    const t = this.deps.store.trash(file);
    this.deps.changed();
    return t;
  }

  trash(): TrashedCard[] {
    return this.deps.store.trashed();
  }

  /** Puts a trashed card back (under its old name, or a new one when that is taken meanwhile). */
  restore(name: string): { id?: string; file: string } {
    let file: string;
    try {
      file = this.deps.store.restore(name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new NotFound(`no card ${name} in the trash`);
      throw new Invalid((err as Error).message);
    }
    this.deps.changed();
    const id = this.deps.store.idForFile(file);
    return { ...(id ? { id } : {}), file: path.relative(this.deps.store.projectDir, file) };
  }

  /** A card file's whole text (a broken card's too, when it is a regular file). */
  source(id: string): CardSource {
    const { file } = this.fileOf(id);
    const rel = path.relative(this.deps.store.projectDir, file);
    try {
      return { file: rel, text: this.deps.store.readText(file) };
    } catch (err) {
      return { file: rel, error: (err as Error).message };
    }
  }

  /** A person's edit of a card file's whole text; refused when the file changed since `base` was read. */
  saveSource(id: string, text: string, base: string): { id?: string } {
    const { file, card } = this.fileOf(id);
    if (card && this.deps.scheduler.isActive(id))
      throw new MoveRefused('the card is running: cancel the run to edit it');
    let saved: boolean;
    try {
      saved = this.deps.store.replaceText(file, text.replace(/\r\n/g, '\n'), base);
    } catch (err) {
      throw new MoveRefused(
        `${path.relative(this.deps.store.projectDir, file)}: ${(err as Error).message}: move it to the trash, or fix it outside the board`,
      );
    }
    if (!saved)
      throw new MoveRefused(
        `${path.relative(this.deps.store.projectDir, file)} changed since you opened it: copy your text, reopen it and edit again`,
      );
    this.deps.changed();
    this.deps.scheduler.kick();
    const newId = this.deps.store.idForFile(file);
    return newId ? { id: newId } : {};
  }
}
