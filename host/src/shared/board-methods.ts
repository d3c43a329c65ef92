/**
 * The board's methods: ONE table, each method with its HTTP route and the schema of its parameters
 * (and the type of its result). Both shells dispatch from it: `runboard serve`
 * (host/src/server/server.ts) routes HTTP requests by it and Electron's main process
 * (host/src/electron/ipc.ts) answers IPC by it, both validating the parameters with the same schema
 * (host/src/core/board-dispatch.ts) before the host core sees them; the renderer's clients
 * (http-client.ts, electron/preload.ts) are built from it. A method is added here once.
 *
 * Kinds: `call` (parameters in, JSON out), `file` (bytes: an image, a frame, an export), `stream`
 * (server-sent events over HTTP; push messages over IPC), `upload` (bytes in: the request's body is a
 * file, its parameters are in the query; JSON out; over HTTP only: Electron hands over the file's path). Parameters are one object: over HTTP the
 * route's `:name` segments, then the JSON body (POST, PUT) or the query (GET); over IPC the one
 * argument. Pure: imported by the untrusted renderer and by the host core (no Node, no DOM).
 */
import * as z from 'zod/mini';
import {
  COLUMNS,
  type Answer,
  type BoardView,
  type CardDetail,
  type ExtractStart,
  type CardFields,
  type CardForm,
  type CardSource,
  type FolderListing,
  type KeyCheck,
  type ProviderView,
  type RunFiles,
  type RunResult,
  type ScheduleEdit,
  type SchedulePreview,
  type ConfigView,
  type Settings,
  type DiskUsageView,
  type TrashedCard,
  type WorktreeDiff,
} from './board-types.ts';
import type { ReplayParamsView } from './replay-params.ts';
import type { DebugLogPage } from './debug-log-types.ts';
import type { CardWorkflowView, WorkflowSaveResult } from './workflow-edit.ts';
import type { ContextAnswer, RecordingOutcome, RecordingsView } from './recording-types.ts';

export const ColumnParam = z.enum(COLUMNS);
const CardId = z.string().check(z.minLength(1), z.maxLength(512));
/** Checked as a run id by the host (the protocol's RunId); here only bounded. */
const RunIdParam = z.string().check(z.minLength(1), z.maxLength(64));
const Count = (max: number) => z.int().check(z.minimum(0), z.maximum(max));

export const AnswerList = z
  .array(z.object({ index: Count(1000), answer: z.string().check(z.maxLength(65_536)) }))
  .check(z.maxLength(1000));

export const SettingsParams = z.object({
  maxConcurrency: z.int().check(z.minimum(1), z.maximum(1000)),
  flows: z
    .array(z.object({ name: z.string().check(z.minLength(1), z.maxLength(256)), cap: Count(1000) }))
    .check(z.maxLength(10_000)),
  columnLimits: z.partialRecord(ColumnParam, Count(100_000)),
});

export const ScheduleEditParams = z.object({
  text: z.string().check(z.maxLength(500)),
  timezone: z.optional(z.string().check(z.maxLength(100))),
  missed: z.optional(z.enum(['skip', 'latest_once', 'all'])),
  overlap: z.optional(z.enum(['skip', 'queue'])),
});

/** A card's text (its markdown, or its whole file): bounded so text and base fit one 1 MiB request. */
const CardText = z.string().check(z.maxLength(300_000));

export const CardFieldsParams = z.object({
  title: z.string().check(z.minLength(1), z.maxLength(500)),
  flow: z.string().check(z.minLength(1), z.maxLength(256)),
  workspace: z.optional(z.string().check(z.maxLength(4096))),
  command: z.optional(
    z.union([
      z.string().check(z.maxLength(65_536)),
      z.array(z.string().check(z.maxLength(65_536))).check(z.minLength(1), z.maxLength(4096)),
    ]),
  ),
  body: CardText,
});

const ProviderParam = z
  .string()
  .check(z.regex(/^[a-z][a-z0-9-]{0,39}$/, 'provider names are lowercase words'));

type Verb = 'GET' | 'POST' | 'PUT';
export type Kind = 'call' | 'file' | 'stream' | 'upload';

export interface Method<K extends Kind = Kind, P extends z.ZodMiniType = z.ZodMiniType, R = unknown> {
  kind: K;
  verb: Verb;
  /** `/api/...`, with `:name` segments taken from the parameters. */
  path: string;
  params: P;
  /** Type only: what a call answers. */
  readonly result?: R;
}

const method =
  <K extends Kind, R = void>(kind: K) =>
  <P extends z.ZodMiniType>(verb: Verb, path: string, params: P): Method<K, P, R> => ({
    kind,
    verb,
    path,
    params,
  });

const none = z.object({});
/** A digest of a file's text as the board showed it (base64url SHA-256). */
const Digest = z.string().check(z.regex(/^[A-Za-z0-9_-]{43}$/, 'not a digest the board showed'));
const card = z.object({ id: CardId });
const run = z.object({ runId: RunIdParam });
/** A whole number as a query gives it (a string of digits). */
const Digits = z.string().check(z.regex(/^\d{1,15}$/, 'a whole number'));
const recording = z.object({ recordingId: z.string().check(z.minLength(1), z.maxLength(64)) });
const Text = (max: number) => z.string().check(z.maxLength(max));
export const ContextAnswerParams = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('extract'),
    query: Text(2000),
    candidates: z.optional(z.array(Text(500)).check(z.maxLength(100))),
  }),
  z.object({ kind: z.literal('details'), note: Text(10_000) }),
  z.object({ kind: z.literal('none') }),
]);

export const boardMethods = {
  board: method<'call', BoardView>('call')('GET', '/api/board', none),
  card: method<'call', CardDetail>('call')('GET', '/api/cards/:id', card),
  move: method('call')('POST', '/api/cards/:id/move', z.extend(card, { to: ColumnParam, index: Count(1e9) })),
  cancel: method('call')('POST', '/api/cards/:id/cancel', card),
  /**
   * A person confirms a card changed outside the board (CardView.confirm), as the board showed it:
   * `digest` names that text; a card changed again since is refused (409).
   */
  confirmCard: method('call')('POST', '/api/cards/:id/confirm', z.extend(card, { digest: Digest })),
  /** A person confirms config.yaml changed outside the board (BoardView.configChange), as shown. */
  confirmConfig: method('call')('POST', '/api/config/confirm', z.object({ digest: Digest })),
  /**
   * Run again (an ended card: to the end of Queued) or Retry now (a queued card waiting out its
   * backoff: it keeps its place, the wait is dropped). Either way failures and the backoff start afresh.
   */
  requeue: method('call')('POST', '/api/cards/:id/requeue', card),
  /** Writes answers into the card's `## Questions`; with `requeue`, moves the card to the end of Queued. */
  answer: method('call')(
    'POST',
    '/api/cards/:id/answer',
    z.extend(card, { answers: AnswerList, requeue: z.optional(z.boolean()) }),
  ),
  /**
   * The person's answer to one of the card's permission asks (`ask`: its id in run `runId`'s record):
   * allow once, allow always for the card's flow (config.yaml), or deny. What is allowed is the
   * supervisor's record of the ask; nothing else in the request can widen it.
   */
  answerAsk: method<'call', { state: 'queued' | 'failed' | 'waiting' | 'running' }>('call')(
    'POST',
    '/api/cards/:id/asks',
    z.extend(card, {
      runId: RunIdParam,
      ask: z.string().check(z.regex(/^a[0-9]{1,2}$/, 'not an ask id (a1, a2, …)')),
      choice: z.enum(['once', 'always', 'deny']),
    }),
  ),
  /** What a schedule would mean (in words, cron, next five fires), or why it is refused; saves nothing. */
  previewSchedule: method<'call', SchedulePreview>('call')(
    'POST',
    '/api/schedule/preview',
    ScheduleEditParams,
  ),
  /** Writes the card's `schedule:` (null removes it); refused, saying why, when it cannot fire. */
  setSchedule: method('call')(
    'PUT',
    '/api/cards/:id/schedule',
    z.extend(card, { schedule: z.nullable(ScheduleEditParams) }),
  ),
  /**
   * Recording → task (seed 000): starts an extraction run over an in-app recording (`recording`, its
   * id in the project's recordings/) or a video file (`file`, an absolute path to an .mp4 of at most
   * 5 minutes and 2 GB). The task goes into card `card`, or a new card in Backlog (its flow: `flow`,
   * default the project's first computer-use flow). Answers at once; the card says how it went.
   */
  extractTask: method<'call', ExtractStart>('call')(
    'POST',
    '/api/extract',
    z.object({
      recording: z.optional(z.string().check(z.regex(/^rec-[0-9a-z-]{1,64}$/, 'not a recording id (rec-…)'))),
      file: z.optional(
        z.string().check(
          z.maxLength(4096),
          z.refine((p) => p.startsWith('/'), 'the video file is named by its absolute path'),
        ),
      ),
      card: z.optional(CardId),
      flow: z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
    }),
  ),
  /**
   * Import a video from the person's computer (the browser's file chooser): the body is the .mp4's
   * bytes (at most 2 GB), kept in the project's `videos/` folder under `name` (made safe, never over
   * another file), then made a task as `extractTask` with `file` does. A video the extraction refuses
   * (not an .mp4 ffprobe reads, over 5 minutes) is removed again, and the answer says why.
   */
  importVideo: method<'upload', ExtractStart>('upload')(
    'POST',
    '/api/extract/video',
    z.object({
      name: z.string().check(
        z.minLength(1),
        z.maxLength(255),
        z.refine((n) => /\.mp4$/i.test(n), 'import an .mp4 video (the name ends in .mp4)'),
      ),
      card: z.optional(CardId),
      flow: z.optional(z.string().check(z.minLength(1), z.maxLength(100))),
    }),
  ),
  /** The folder picker: a folder's subfolders (default: the user's home), each marked when granted. */
  folders: method<'call', FolderListing>('call')(
    'GET',
    '/api/folders',
    z.object({ path: z.optional(z.string().check(z.maxLength(4096))) }),
  ),
  /** Grants runs a folder the person chose (refused, saying why, for one holding Runboard's state). */
  grantFolder: method<'call', { path: string }>('call')(
    'POST',
    '/api/grants',
    z.object({ path: z.string().check(z.minLength(1), z.maxLength(4096)) }),
  ),
  /** What the card editor offers (the granted folders a card may work in). */
  cardForm: method<'call', CardForm>('call')('GET', '/api/card-form', none),
  /**
   * A new card file, written as a person would write it; in Backlog, or with `queue` at the end of
   * Queued. Refused, saying why, for an unknown flow, a folder that is not granted, a bad schedule.
   */
  createCard: method<'call', { id: string }>('call')(
    'POST',
    '/api/cards',
    z.extend(CardFieldsParams, {
      schedule: z.optional(ScheduleEditParams),
      queue: z.optional(z.boolean()),
    }),
  ),
  /**
   * Changes a card: only the fields that differ are written (comments and order stay). `baseBody` is
   * the text the editor started from: when the file's changed meanwhile, nothing is written (409).
   */
  editCard: method('call')(
    'PUT',
    '/api/cards/:id',
    z.extend(card, { ...CardFieldsParams.shape, baseBody: CardText }),
  ),
  /** A copy of the card in Backlog, without its runs' state; answers the copy's id. */
  duplicateCard: method<'call', { id: string }>('call')('POST', '/api/cards/:id/duplicate', card),
  /** Moves the card file (or a broken card's entry) into the trash folder; `restoreCard` undoes it. */
  trashCard: method<'call', TrashedCard>('call')('POST', '/api/cards/:id/trash', card),
  /** The trash's cards, newest first. */
  trash: method<'call', TrashedCard[]>('call')('GET', '/api/trash', none),
  /** Puts a trashed card back (under its old file name, or a new one when that was taken). */
  restoreCard: method<'call', { id?: string; file: string }>('call')(
    'POST',
    '/api/trash/:name/restore',
    z.object({ name: z.string().check(z.minLength(1), z.maxLength(512)) }),
  ),
  /** A card file's whole text (a broken card's too), to edit as text. */
  cardSource: method<'call', CardSource>('call')('GET', '/api/cards/:id/source', card),
  /** Replaces a card file's text, if it still holds `base` (409 otherwise); answers the card's id if it reads. */
  saveCardSource: method<'call', { id?: string }>('call')(
    'PUT',
    '/api/cards/:id/source',
    z.extend(card, { text: CardText, base: CardText }),
  ),
  /** The card's workflow (cards/<card>/schema.json, docs/workflows.md), with what is wrong with it. */
  workflow: method<'call', CardWorkflowView>('call')('GET', '/api/cards/:id/workflow', card),
  /** What is wrong with an edited workflow (the editor shows it while editing); saves nothing. */
  checkWorkflow: method<'call', WorkflowSaveResult>('call')(
    'POST',
    '/api/cards/:id/workflow/check',
    z.extend(card, { workflow: z.unknown() }),
  ),
  /**
   * Saves the card's workflow when it is valid, whole and atomically; `base` is the text the editor
   * opened (absent: there was none): when the file changed meanwhile, nothing is written.
   */
  saveWorkflow: method<'call', WorkflowSaveResult>('call')(
    'PUT',
    '/api/cards/:id/workflow',
    z.extend(card, { workflow: z.unknown(), base: z.optional(z.string().check(z.maxLength(10_000_000))) }),
  ),
  /** A replay card's parameters (its workflow's task_params) with the card's values (`params:`). */
  replayParams: method<'call', ReplayParamsView>('call')('GET', '/api/cards/:id/params', card),
  /**
   * Writes the card's `params:` (only its workflow's parameters; an empty value is left out, so the run
   * uses the recorded one); with `queue`, then moves the card to the end of Queued.
   */
  setReplayParams: method('call')(
    'PUT',
    '/api/cards/:id/params',
    z.extend(card, { params: z.record(z.string(), Text(20_000)), queue: z.optional(z.boolean()) }),
  ),
  /** The model providers: whether each has a key (never the key) and which flows use it. */
  providers: method<'call', ProviderView[]>('call')('GET', '/api/providers', none),
  /**
   * Stores (or with null removes) a provider's key with the supervisor; the key goes no further than
   * that and is never sent back. Cards waiting for it start.
   */
  setProviderKey: method<'call', { hasKey: boolean }>('call')(
    'PUT',
    '/api/providers/:provider/key',
    z.object({
      provider: ProviderParam,
      key: z.nullable(z.string().check(z.minLength(1), z.maxLength(4096))),
    }),
  ),
  /** Asks the provider (through the supervisor, which holds the key) whether it accepts the stored key. */
  checkProviderKey: method<'call', KeyCheck>('call')(
    'POST',
    '/api/providers/:provider/check',
    z.object({ provider: ProviderParam }),
  ),
  settings: method<'call', Settings>('call')('GET', '/api/settings', none),
  /** The effective config, each value with its origin, and the config's warnings. */
  configView: method<'call', ConfigView>('call')('GET', '/api/config', none),
  /** The project's run logs, artifacts and recordings on disk (what `runboard gc` prunes). */
  diskUsage: method<'call', DiskUsageView>('call')('GET', '/api/disk', none),
  saveSettings: method('call')('PUT', '/api/settings', SettingsParams),
  runFiles: method<'call', RunFiles>('call')('GET', '/api/runs/:runId/files', run),
  /**
   * A page of the run's model debug log (a flow's `debug: true`), from a byte offset (`offset`, the
   * previous page's `next`; `index`: entries before it; `limit` entries, 20 by default): only runs of
   * this board's project.
   */
  runDebugLog: method<'call', DebugLogPage>('call')(
    'GET',
    '/api/runs/:runId/debug',
    z.extend(run, { offset: z.optional(Digits), index: z.optional(Digits), limit: z.optional(Digits) }),
  ),
  /** The run's worktree diff (base → the run's commit). */
  runDiff: method<'call', WorktreeDiff>('call')('GET', '/api/runs/:runId/diff', run),
  /** Keep the run's worktree (merge into its base branch) or discard it; answers the run as it is then. */
  settleWorktree: method<'call', RunResult>('call')(
    'POST',
    '/api/runs/:runId/:how',
    z.extend(run, { how: z.enum(['keep', 'discard']) }),
  ),
  /** A screenshot of the run (one of runFiles). */
  runFile: method('file')(
    'GET',
    '/api/runs/:runId/file',
    z.extend(run, { name: z.string().check(z.minLength(1), z.maxLength(1024)) }),
  ),
  /**
   * The live frame of a running computer-use run on a private display (404 before the first frame and
   * after the end); a query `n` only makes each refresh a new URL.
   */
  liveFrame: method('file')('GET', '/api/runs/:runId/live', run),
  /** The run dir as one .tar.gz. */
  exportRun: method('file')('GET', '/api/runs/:runId/export', run),
  /** The project's recordings, the one going, the microphones (RecordingsView). */
  recordings: method<'call', RecordingsView>('call')('GET', '/api/recordings', none),
  /**
   * Records the board's display (and the microphone `mic`: 'default', 'none' or a source name) and
   * makes a card in Backlog with the recording attached.
   */
  startRecording: method<'call', { id: string; cardId?: string }>('call')(
    'POST',
    '/api/recordings',
    z.object({
      mic: z.string().check(z.minLength(1), z.maxLength(512)),
      /** A screen video too (default true); without it nothing on the screen is kept but the screenshots. */
      video: z.optional(z.boolean()),
      /** Fields (labels) whose typing is a secret though they show it: kept out, greyed (a PIN). */
      secretFields: z.optional(
        z.array(z.string().check(z.minLength(1), z.maxLength(200))).check(z.maxLength(50)),
      ),
    }),
  ),
  stopRecording: method<'call', RecordingOutcome | null>('call')('POST', '/api/recordings/stop', none),
  pauseRecording: method('call')('POST', '/api/recordings/pause', z.object({ paused: z.boolean() })),
  /** The answer to Ctrl+I during a recording: an extract, details for the next step, or nothing. */
  answerRecording: method('call')('POST', '/api/recordings/answer', ContextAnswerParams),
  deleteRecording: method('call')('POST', '/api/recordings/:recordingId/delete', recording),
  /** A screenshot of a recording (its thumbnails). */
  recordingFile: method('file')(
    'GET',
    '/api/recordings/:recordingId/file',
    z.extend(recording, { name: z.string().check(z.minLength(1), z.maxLength(256)) }),
  ),
  /** Board deltas (BoardDelta) as they happen. */
  boardEvents: method('stream')('GET', '/api/events', none),
  /** A run's output (its tail first) and events until it ends (RunStreamMessage). */
  runStream: method('stream')('GET', '/api/runs/:runId/stream', run),
} as const;

export type Methods = typeof boardMethods;
export type MethodName = keyof Methods;
export type NamesOf<K extends Kind> = {
  [N in MethodName]: Methods[N]['kind'] extends K ? N : never;
}[MethodName];
export type CallName = NamesOf<'call'>;
export type ParamsIn<N extends MethodName> = z.input<Methods[N]['params']>;
export type Params<N extends MethodName> = z.output<Methods[N]['params']>;
export type Result<N extends MethodName> =
  Methods[N] extends Method<Kind, z.ZodMiniType, infer R> ? R : never;

export const methodNames = Object.keys(boardMethods) as MethodName[];
export const callNames = methodNames.filter((n) => boardMethods[n].kind === 'call') as CallName[];

/** The renderer-facing function of a call: its parameters (optional when it has none) to its result. */
export type CallFn<N extends CallName> =
  Record<never, never> extends ParamsIn<N>
    ? (params?: ParamsIn<N>) => Promise<Result<N>>
    : (params: ParamsIn<N>) => Promise<Result<N>>;
export type BoardCalls = { [N in CallName]: CallFn<N> };

// The shared data types and the schemas must agree.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const agree: [
  Same<Params<'saveSettings'>, Settings>,
  Same<z.output<typeof AnswerList>, Answer[]>,
  Same<Required<z.output<typeof ScheduleEditParams>>, Required<ScheduleEdit>>,
  Same<z.output<typeof ContextAnswerParams>, ContextAnswer>,
  Same<Required<z.output<typeof CardFieldsParams>>, Required<CardFields>>,
] = [true, true, true, true, true];
void agree;

/**
 * A route's path for these parameters: `:name` segments filled in (encoded), the other parameters
 * left over (for the query or the body).
 */
export function fillPath(
  path: string,
  params: Record<string, unknown>,
): { path: string; rest: Record<string, unknown> } {
  const rest = { ...params };
  const filled = path.replace(/:(\w+)/g, (_m, name: string) => {
    const v = rest[name];
    delete rest[name];
    return encodeURIComponent(String(v));
  });
  return { path: filled, rest };
}

/** A query string for `rest` (strings and numbers), '' when empty. */
export function queryOf(rest: Record<string, unknown>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(rest)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * The method a request is for, and the parameters its path carries. `segments` are the path's
 * decoded segments.
 */
export function matchRoute(
  verb: string,
  segments: readonly string[],
): { name: MethodName; pathParams: Record<string, string> } | undefined {
  for (const name of methodNames) {
    const m = boardMethods[name];
    if (m.verb !== verb) continue;
    const pattern = m.path.split('/').filter(Boolean);
    if (pattern.length !== segments.length) continue;
    const pathParams: Record<string, string> = {};
    if (
      pattern.every((p, i) => {
        if (p.startsWith(':')) return ((pathParams[p.slice(1)] = segments[i]!), true);
        return p === segments[i];
      })
    )
      return { name, pathParams };
  }
  return undefined;
}

/** The renderer's calls, each sent by `send` (HTTP request or IPC invoke) under its method's name. */
export function buildCalls(
  send: (name: CallName, params: Record<string, unknown>) => Promise<unknown>,
): BoardCalls {
  return Object.fromEntries(
    callNames.map((name) => [name, (params?: Record<string, unknown>) => send(name, params ?? {})]),
  ) as unknown as BoardCalls;
}

/** The URL path (with query) of a method for these parameters: the same in both shells. */
export function urlOf<N extends MethodName>(name: N, params: ParamsIn<N> & Record<string, unknown>): string {
  const { path, rest } = fillPath(boardMethods[name].path, params);
  return path + queryOf(rest);
}
