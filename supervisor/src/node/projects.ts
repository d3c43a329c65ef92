/**
 * The projects registered with the supervisor (`runboard init`, `project/register`), kept in
 * `<state>/supervisor/projects.json`. The supervisor reads their cards' schedules itself (the same
 * parse as the board: @runboard/project/project and /schedule) when a project is registered, when it
 * starts, when asked for the list and every minute, and hands them to the schedule book while no board
 * of the project is open (an open board tells its schedules itself). So a scheduled card fires with no
 * board ever opened, and `runboard schedules` lists the cards whose schedule is refused, with why.
 */
import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { loadCard } from '@runboard/project/project';
import { resolveSchedule } from '@runboard/project/schedule';
import {
  handle,
  JsonRpcCodes,
  ListProjects,
  RegisterProject,
  ResponseError,
  type MessageConnection,
  type ProjectInfo,
  type RefusedSchedule,
  type ScheduleSpec,
} from '../protocol/index.ts';
import type { ScheduleBook } from './schedules.ts';

const RESCAN_MS = 60_000;

/** The zone a schedule without `timezone` means (the board's localZone). */
const localZone = (): string => Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

/** A project's schedules as read from its files now. */
export function scanProject(project: string): { specs: ScheduleSpec[]; info: ProjectInfo } {
  const specs: ScheduleSpec[] = [];
  const refused: RefusedSchedule[] = [];
  const info = (error?: string): ProjectInfo => ({
    project,
    schedules: specs.length,
    refused,
    ...(error ? { error } : {}),
  });
  let names: string[];
  try {
    if (!statSync(path.join(project, 'config.yaml')).isFile()) throw new Error('config.yaml is no file');
    names = readdirSync(path.join(project, 'cards'))
      .filter((n) => n.endsWith('.md'))
      .sort();
  } catch (err) {
    return {
      specs,
      info: info(
        `cannot read the project (${(err as Error).message}); run \`runboard init\` in ${project} to make it one again`,
      ),
    };
  }
  const zone = localZone();
  for (const name of names) {
    const file = path.join(project, 'cards', name);
    let card;
    try {
      card = loadCard(file, project);
    } catch {
      continue; // a broken card has no schedule (the board shows why it is broken)
    }
    const raw = card.front.schedule;
    if (raw === undefined || raw === null) continue;
    const r = resolveSchedule(raw, zone);
    if (!r.ok) {
      refused.push({ cardPath: file, title: card.front.title.slice(0, 500), error: r.error.slice(0, 2000) });
      continue;
    }
    const { cron, timezone, text, missed, overlap } = r.value;
    specs.push({
      cardPath: file,
      cardId: String(card.front.id ?? name.slice(0, -3)),
      title: card.front.title.slice(0, 500),
      cron,
      timezone,
      text,
      missed,
      overlap,
    });
  }
  return { specs, info: info() };
}

const specKey = (specs: ScheduleSpec[]): string =>
  JSON.stringify(
    specs.map((s) => [s.cardPath, s.cardId, s.title, s.cron, s.timezone, s.text, s.missed, s.overlap]).sort(),
  );
/** The book already holds these schedules (nothing to set: no write of the book every minute). */
const sameSpecs = (held: ScheduleSpec[], read: ScheduleSpec[]): boolean => specKey(held) === specKey(read);

export class ProjectBook {
  private projects: string[] = [];
  private readonly last = new Map<string, ProjectInfo>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly file: string,
    private readonly book: ScheduleBook,
    private readonly log: Logger,
  ) {}

  start(): void {
    try {
      const saved = JSON.parse(readFileSync(this.file, 'utf8')) as { projects?: unknown };
      if (Array.isArray(saved.projects))
        this.projects = saved.projects.filter(
          (p): p is string => typeof p === 'string' && path.isAbsolute(p),
        );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log.error({ err: (err as Error).message, file: this.file }, 'projects file unreadable');
    }
    this.rescan();
    this.timer = setInterval(() => this.rescan(), RESCAN_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Registers `project` when it can be read (else nothing changes: the info says why). */
  register(project: string): ProjectInfo {
    const info = this.scan(project);
    if (!info.error && !this.projects.includes(project)) {
      this.projects.push(project);
      this.save();
    }
    return info;
  }

  /** The registered projects' folders. */
  registered(): string[] {
    return [...this.projects];
  }

  list(): ProjectInfo[] {
    this.rescan();
    return this.projects.map((p) => this.last.get(p)!);
  }

  private rescan(): void {
    for (const p of this.projects) this.scan(p);
  }

  /** Reads the project's cards; hands their schedules to the book unless a board of it is open. */
  private scan(project: string): ProjectInfo {
    const { specs, info } = scanProject(project);
    this.last.set(project, info);
    // An unreadable project keeps the schedules it had: a folder on a disk not mounted yet comes back.
    if (!info.error && !this.book.hasBoard(project) && !sameSpecs(this.book.list(project), specs)) {
      const err = this.book.set(project, specs);
      if (err) this.log.warn({ project, err }, 'schedules of a registered project refused');
    }
    return info;
  }

  private save(): void {
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      writeFileSync(tmp, JSON.stringify({ version: 1, projects: this.projects }), { mode: 0o600 });
      renameSync(tmp, this.file);
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'cannot write the projects file');
    }
  }
}

export function serveProjects(conn: MessageConnection, projects: ProjectBook): void {
  handle(conn, RegisterProject, (p) => {
    const info = projects.register(path.resolve(p.project));
    if (info.error) throw new ResponseError(JsonRpcCodes.InvalidParams, info.error);
    return info;
  });
  handle(conn, ListProjects, () => ({ projects: projects.list() }));
}
