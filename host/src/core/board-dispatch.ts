/**
 * The host's side of the board's methods (host/src/shared/board-methods.ts): parameters validated by
 * the method's schema, then handed to the BoardService. Both shells dispatch through here, so a value
 * reaches the host core (and config.yaml, and the cards) only after the same check, whichever shell
 * it came from; a refusal says what was wrong.
 */
import type { Writable } from 'node:stream';
import * as z from 'zod/mini';
import {
  boardMethods,
  type CallName,
  type MethodName,
  type NamesOf,
  type Params,
  type Result,
} from '../shared/board-methods.ts';
import { Invalid, MoveRefused, NotFound } from './board-errors.ts';
import type { BoardService } from './board-service.ts';
import { SupervisorLost, SupervisorUnavailable } from './supervisor-client.ts';

// zod/mini carries no messages of its own; a refusal should say in words what was wrong.
z.config(z.locales.en());

/** The method's parameters, checked by its schema (unknown keys dropped); Invalid says what was wrong. */
export function parseParams<N extends MethodName>(name: N, raw: unknown): Params<N> {
  const r = boardMethods[name].params.safeParse(raw ?? {});
  if (!r.success)
    throw new Invalid(
      `${name}: ${r.error.issues.map((i) => (i.path.length ? `${i.path.join('.')}: ` : '') + i.message).join('; ')}`,
    );
  return r.data as Params<N>;
}

/** A URL path's segments, %-decoded; a malformed %-sequence is the client's mistake (Invalid). */
export function segmentsOf(pathname: string): string[] {
  try {
    return pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new Invalid(`malformed %-encoding in the path ${pathname}: encode it with encodeURIComponent`);
  }
}

export function isMethod(name: string): name is MethodName {
  return Object.hasOwn(boardMethods, name);
}

export type CallHandlers = { [N in CallName]: (p: Params<N>) => Result<N> | Promise<Result<N>> };

export function callHandlers(s: BoardService): CallHandlers {
  return {
    board: () => s.view(),
    card: (p) => s.cardDetail(p.id),
    move: (p) => s.move(p.id, p.to, p.index),
    confirmCard: (p) => s.confirmCard(p.id, p.digest),
    confirmConfig: (p) => s.confirmConfig(p.digest),
    cancel: (p) => s.cancel(p.id),
    requeue: (p) => s.requeue(p.id),
    answer: (p) => s.answer(p.id, p.answers, p.requeue ?? false),
    answerAsk: (p) => s.asks.answer(p.id, p.runId, p.ask, p.choice),
    previewSchedule: (p) => s.schedules.preview(p),
    setSchedule: (p) => s.setSchedule(p.id, p.schedule),
    cardForm: () => s.cardForm(),
    folders: (p) => s.folders(p.path),
    grantFolder: (p) => s.grantFolder(p.path),
    createCard: (p) => s.createCard(p, p.schedule, p.queue),
    editCard: (p) => s.editCard(p.id, p, p.baseBody),
    duplicateCard: (p) => s.duplicateCard(p.id),
    trashCard: (p) => s.trashCard(p.id),
    trash: () => s.trash(),
    restoreCard: (p) => s.restoreCard(p.name),
    cardSource: (p) => s.cardSource(p.id),
    saveCardSource: (p) => s.saveCardSource(p.id, p.text, p.base),
    workflow: (p) => s.workflow(p.id),
    checkWorkflow: (p) => s.checkWorkflow(p.id, p.workflow),
    saveWorkflow: (p) => s.saveWorkflow(p.id, p.workflow, p.base),
    replayParams: (p) => s.replayParams(p.id),
    setReplayParams: (p) => s.setReplayParams(p.id, p.params, p.queue),
    providers: () => s.providers(),
    setProviderKey: (p) => s.setProviderKey(p.provider, p.key),
    checkProviderKey: (p) => s.checkProviderKey(p.provider),
    settings: () => s.settings(),
    configView: () => s.configView(),
    diskUsage: () => s.diskUsage(),
    saveSettings: (p) => s.saveSettings(p),
    runFiles: (p) => s.runFiles(p.runId),
    runDiff: (p) => s.worktreeDiff(p.runId),
    runDebugLog: (p) => s.debugLog(p.runId, p),
    settleWorktree: (p) => s.settleWorktree(p.runId, p.how),
    recordings: () => s.recordings.view(),
    startRecording: (p) => s.recordings.start(p.mic, p.video ?? true, p.secretFields ?? []),
    stopRecording: () => s.recordings.stop(),
    pauseRecording: (p) => s.recordings.pause(p.paused),
    answerRecording: (p) => s.recordings.answer(p),
    deleteRecording: (p) => s.recordings.delete(p.recordingId),
    extractTask: (p) => s.extractTask(p),
  };
}

/** A call by name with raw parameters (as they came over IPC or HTTP): checked, then run. */
export async function dispatchCall(handlers: CallHandlers, name: string, raw: unknown): Promise<unknown> {
  if (!isMethod(name) || boardMethods[name].kind !== 'call') throw new Invalid(`no board call ${name}`);
  const params = parseParams(name, raw);
  return (handlers[name as CallName] as (p: unknown) => unknown)(params);
}

/** What a `file` method answers: checked before any byte goes out, so a refusal is still an error. */
export type FileReply =
  | { type: string; path: string }
  | { type: string; bytes: Buffer }
  | { type: string; download: string; write: (out: Writable) => Promise<void> };

export type FileHandlers = {
  [N in NamesOf<'file'>]: (p: Params<N>) => FileReply | Promise<FileReply>;
};

/** Content types of what the shells serve: the renderer's files and a run's images. */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  // the renderer's icon only: a run's images are png/jpeg/webp/gif (run-files.ts)
  '.svg': 'image/svg+xml',
};
export function contentType(file: string): string {
  const ext = /\.[^./]+$/.exec(file)?.[0].toLowerCase() ?? '';
  return Object.hasOwn(TYPES, ext) ? TYPES[ext]! : 'application/octet-stream';
}

export function fileHandlers(s: BoardService): FileHandlers {
  return {
    runFile: async (p) => ({ type: contentType(p.name), bytes: await s.screenshot(p.runId, p.name) }),
    recordingFile: async (p) => ({
      type: contentType(p.name),
      bytes: await s.recordings.file(p.recordingId, p.name),
    }),
    liveFrame: async (p) => ({ type: 'image/jpeg', bytes: await s.liveFrame(p.runId) }),
    exportRun: (p) => ({
      type: 'application/gzip',
      download: `run-${p.runId}.tar.gz`,
      write: s.exportRun(p.runId),
    }),
  };
}

/** The HTTP status of a refusal (anything else is the host's fault: 500). */
export function statusOf(err: unknown): number {
  if (err instanceof Invalid) return 400;
  if (err instanceof NotFound) return 404;
  if (err instanceof MoveRefused) return 409;
  // no supervisor (it went away and is not back yet): try again later
  if (err instanceof SupervisorUnavailable || err instanceof SupervisorLost) return 503;
  return 500;
}

/** The strict CSP of the renderer's page, in both shells. */
export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The renderer's files a shell serves (nothing else from its folder). */
export const RENDERER_FILES = ['index.html', 'app.js', 'app.css', 'app.js.map', 'favicon.svg'] as const;
