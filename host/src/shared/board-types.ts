/**
 * The data the board's views and intents carry between the host core and the renderer (the methods
 * themselves: board-methods.ts). Plain data and pure code only: the untrusted renderer and the host
 * core both import it, so nothing here may touch Node, the DOM or host state.
 */
import type { PermissionAsk, RunEvent, RunResult, ScheduleInfo } from '@runboard/supervisor/protocol/data';
export type { PermissionAsk, RunResult, ScheduleInfo };

/** The board's columns, in order: the one list (card `status` values, column limits, the UI). */
export const COLUMNS = ['backlog', 'queued', 'running', 'needs-input', 'done', 'failed'] as const;
export type Column = (typeof COLUMNS)[number];

export const COLUMN_TITLES: Record<Column, string> = {
  backlog: 'Backlog',
  queued: 'Queued',
  running: 'Running',
  'needs-input': 'Needs input',
  done: 'Done',
  failed: 'Failed',
};

/** A card's schedule on the board: in words and its next fire (ISO), or why it cannot fire. */
export interface CardSchedule {
  text: string;
  /** What the card's front matter says (the phrase or cron), for editing. */
  source: string;
  timezone?: string;
  missed?: 'skip' | 'latest_once' | 'all';
  overlap?: 'skip' | 'queue';
  next?: string;
  error?: string;
}

export interface CardView {
  id: string;
  /** Path relative to the project folder. */
  file: string;
  title: string;
  flow: string;
  column: Column;
  /** Order within the column (lower first; none: after those with one, by `arrival`, then file). */
  rank?: number;
  /** A card without a rank: when the board first saw it (ms since the epoch). */
  arrival?: number;
  /** Running cards are locked: not editable, not draggable (cancel first). */
  locked: boolean;
  /**
   * The version of the card's file the board holds: it changes whenever the file was taken in anew
   * (an edit outside, the board's own write), also when nothing else here changed (a task's text, a
   * question answered and asked again within one update): the page then asks for the card's details
   * again (decision 138).
   */
  rev?: number;
  /** The parse error of a broken card (then most other fields are empty). */
  broken?: string;
  /**
   * The card's file does not read now (being written, or broken by an edit): the card shows its last
   * good version, says this, and is not written or started until the file reads again.
   */
  unreadable?: string;
  runId?: string;
  progress?: { fraction?: number | undefined; message?: string | undefined };
  /** Why a queued card has not started. */
  waiting?: string;
  failures?: number;
  /** ISO time of the next try when in backoff. */
  nextTryAt?: string;
  lastError?: string;
  /** Open questions in the card's `## Questions` (answer them in the inspector). */
  openQuestions?: number;
  /** What the card needs before it can run (e.g. a provider key and where to set it). */
  needs?: string;
  /** Set by the page (renderer/key-needs.ts): the card's `needs:` was about keys that are saved now. */
  needsMet?: string;
  /** The `needs:` text that is met (`needsMet`), for its tooltip. */
  needsWas?: string;
  /** The card's `schedule:` in words and its next fire (ISO), or why it cannot fire. */
  schedule?: CardSchedule;
  /** Its folder is not granted, or its grant is stale (the folder was replaced): why. None: granted. */
  grant?: CardGrant;
  /**
   * It would run by itself (queued, or a schedule) but its file changed outside the board: it waits
   * for a person's Confirm, which names this digest of the text shown (docs/user-guide-board.md).
   */
  confirm?: { digest: string; reason: string };
}

/** A card folder's grant problem, and the folder to grant (again) to fix it. */
export interface CardGrant {
  state: 'none' | 'stale';
  /** The folder to grant: the card's workspace, or the stale grant's folder. */
  folder: string;
  reason: string;
}

/** A folder of the folder picker and its subfolders (hidden ones left out). */
export interface FolderListing {
  path: string;
  parent?: string;
  home: string;
  folders: { name: string; path: string; granted: boolean }[];
}

export interface FlowView {
  name: string;
  runner: string;
  cap: number;
  running: number;
  /** ISO time until which the flow starts nothing: a provider rate limit resets then. */
  parkedUntil?: string;
}

export interface BoardView {
  /** The delta this view includes (BoardDelta.to); a client applies deltas from here on. */
  version: number;
  project: string;
  cards: CardView[];
  maxConcurrency: number;
  /** Runs the caps count now (a card's run, each attempt's, a judge's; one that waits for you too). */
  running: number;
  /** Of those, the runs that wait at a tool call for the person's answer (their cards in Needs input). */
  waitingForYou: number;
  flows: FlowView[];
  columnLimits: Partial<Record<Column, number>>;
  /** config.yaml does not load: the last good config is in use. */
  configError?: string;
  /**
   * config.yaml changed outside the board: the last confirmed config is in use until a person
   * confirms this one (its digest), and what changed, in words.
   */
  configChange?: { digest: string; changes: string[] };
}

/**
 * The board as a first screen needs it, sent with the page before the whole board: each column's
 * first cards only, and every column's count.
 */
export interface FirstScreenView extends BoardView {
  counts: Record<Column, number>;
}

/** One question of a card's `## Questions` section (seed format: `- [ ] q`, `- [x] q` + `Answer: a`). */
export interface Question {
  /** The question (continuation lines joined with newlines). */
  text: string;
  answered: boolean;
  answer?: string;
  /** Choices offered with it (an `Options: a | b` line); the person may still answer otherwise. */
  options?: string[];
  /** The option the asker recommends (marked `(recommended)` in the file). */
  recommended?: string;
}

export interface Answer {
  /** Index among the card's questions (CardDetail.questionList). */
  index: number;
  answer: string;
}

/** Everything of BoardView but its cards. */
export type BoardMeta = Omit<BoardView, 'cards' | 'version'>;

/**
 * What changed on the board since version `from`: the cards whose view changed (whole views, so
 * applying a delta twice, or to a newer board, is harmless), the ids removed, and the rest of the
 * board when it changed. A client whose board is not at `from` fetches the whole board instead.
 */
export interface BoardDelta {
  from: number;
  to: number;
  cards: CardView[];
  removed: string[];
  meta?: BoardMeta;
}

export interface CardDetail {
  card: CardView;
  /** The card file's markdown body. */
  body: string;
  /** The `## Questions` section, when there is one. */
  questions?: string;
  /** The questions of that section, parsed (open and answered). */
  questionList: Question[];
  command?: string | string[];
  workspace: string;
  /** This card's runs, newest first. */
  runs: RunResult[];
  /** The supervisor's record of the card's schedule: next five fires, pending fires, decisions. */
  schedule?: ScheduleInfo;
  /**
   * Permissions the sandbox refused the card's last run that wait for the person's answer (the card is
   * in Needs input): from the supervisor's record of that run. Of a card whose live runs wait at a tool
   * call, the run that waited first.
   */
  asks?: CardAsks;
  /**
   * The card's other live runs that wait at a tool call (its other attempts), in the order they
   * started to wait: each is answerable as `asks` is, and the header counts each of their asks.
   */
  otherAsks?: CardAsks[];
  /**
   * The card's last run as attempts (config `attempts:`; host/src/core/scheduler-attempts.ts): each
   * attempt's run (null: never started), the judge's run, the winner (from 1) and the verdict.
   */
  attempts?: { runs: (string | null)[]; judgeRun?: string; winner?: number; verdict?: string };
}

/** What one run of a card asks the person (CardDetail `asks`). */
export interface CardAsks {
  runId: string;
  flow: string;
  open: PermissionAsk[];
  /** The card's run is live and waits at a tool call for the answer (supervisor run/answer). */
  live?: boolean;
  /** The run is attempt `n` of `of` of the card's (config `attempts:`). */
  attempt?: { n: number; of: number };
}

/** The person's answer to a permission ask: allow once, allow always for the flow, or deny. */
export type AskChoice = 'once' | 'always' | 'deny';

/** A schedule as the inspector edits it (written into the card's `schedule:`). */
export interface ScheduleEdit {
  /** Plain language ("every weekday at 9:00") or a cron expression. */
  text: string;
  /** IANA zone; none: the zone of the host's machine. */
  timezone?: string | undefined;
  missed?: 'skip' | 'latest_once' | 'all' | undefined;
  overlap?: 'skip' | 'queue' | undefined;
}

/** What a schedule means before it is saved: in words, as cron, its next five fires; or why not. */
export type SchedulePreview =
  { ok: true; text: string; cron: string; timezone: string; next: string[] } | { ok: false; error: string };

export interface Settings {
  maxConcurrency: number;
  flows: { name: string; cap: number }[];
  columnLimits: Partial<Record<Column, number>>;
}

/** The project's disk use (Settings → Disk): bytes of its run logs, their artifacts and its recordings. */
export interface DiskUsageView {
  runLogs: number;
  artifacts: number;
  recordings: number;
  runs: number;
  recordingCount: number;
  /** Workspace copies of attempts never kept or discarded: bytes and how many. */
  copies: number;
  copyCount: number;
  /** The retention policy in words (`runboard gc` applies it, and the supervisor by itself). */
  policy: string;
  /** When the supervisor applies it by itself, in words (retention.auto, interval, minFree). */
  auto: string;
  /** What the supervisor's last pass of the policy removed by itself. */
  lastAuto?: AutoGcPass;
}

/** One pass of the retention policy the supervisor made by itself (supervisor/src/node/gc-auto.ts). */
export interface AutoGcPass {
  at: string;
  /** `interval`: its period came; `low-space`: free space below `minFree`; `disk-full`: a write failed ENOSPC. */
  trigger: 'interval' | 'low-space' | 'disk-full';
  removedRuns: number;
  removedCopies: number;
  removedRecordings: number;
  freed: number;
  errors: number;
}

/** The effective config (Settings → Configuration): each value with where it came from, and what to fix. */
export interface ConfigView {
  files: { user: string; project: string; userExists: boolean };
  /** Old key names, unknown keys, placeholders in profiles, files to upgrade or newer than this Runboard. */
  warnings: string[];
  rows: {
    key: string;
    /** The value as text (lists and maps as JSON). */
    value: string;
    layer: 'default' | 'user' | 'project' | 'profile';
    file?: string;
    /** layer profile: the llm_profiles entry the flow selects. */
    profile?: string;
  }[];
  /** The files as they are now cannot be read (the board keeps the last good config meanwhile). */
  error?: string;
}

export interface RunFiles {
  screenshots: string[];
}

/** What a run stream delivers: lines are whole lines of stdout/stderr, in order. */
export type RunStreamMessage =
  | { type: 'start'; run: RunResult; skippedBytes: number }
  | { type: 'lines'; stream: 'stdout' | 'stderr'; lines: string[] }
  | { type: 'event'; event: RunEvent }
  | { type: 'end'; result: RunResult };

/** A run's worktree changes as a unified diff. */
export interface WorktreeDiff {
  text: string;
  /** Cut at 1 MiB. */
  truncated: boolean;
}

/**
 * What `extractTask` answers: the card that gets the task (made in Backlog when none was named) and
 * the extraction run going for it. The card shows the run's progress as `needs` while it goes and, when
 * it ends, either the task (with its questions) or, unchanged, why not (`lastError`).
 */
export interface ExtractStart {
  cardId: string;
  runId: string;
}

/** A card as the board's editor writes it (new or changed). */
export interface CardFields {
  title: string;
  /** One of config.yaml's flows. */
  flow: string;
  /** Absolute folder the card's runs work in (a granted one); none or '': the project folder. */
  workspace?: string | undefined;
  /** What a `command` flow runs (a shell line, or argv); none: the flow's runner reads the task text. */
  command?: string | string[] | undefined;
  /** The card's markdown (the task text). */
  body: string;
}

/** A folder a card may work in: a granted folder. */
export interface WorkspaceOption {
  /** Absolute path. */
  path: string;
  /** As a card writes it: relative to the project folder when inside it. */
  label: string;
}

/** What the card editor offers: the folders a card may work in. */
export interface CardForm {
  projectDir: string;
  workspaces: WorkspaceOption[];
}

/** A card in the trash (`cards/.trash`), restorable. */
export interface TrashedCard {
  /** Its name in the trash folder. */
  name: string;
  /** The file name it had. */
  file: string;
  /** When it was trashed (ISO). */
  at: string;
}

/** A card file's whole text, for editing it as text (a broken card's too, when it is a regular file). */
export interface CardSource {
  /** Relative to the project folder. */
  file: string;
  text?: string;
  /** Why there is no text (a directory, a link, a FIFO named *.md). */
  error?: string;
}

/** A model provider as the board shows it: never its key, only whether one is stored. */
export interface ProviderView {
  name: string;
  /** Where the supervisor forwards its requests (empty when the supervisor knows no such provider). */
  baseUrl: string;
  hasKey: boolean;
  /** The supervisor knows this provider (a flow may name one it does not). */
  known: boolean;
  /** config.yaml's flows that use it. */
  flows: string[];
}

/** What the provider said to a check of its stored key. */
export interface KeyCheck {
  ok: boolean;
  status?: number | undefined;
  message: string;
}
