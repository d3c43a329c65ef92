/**
 * What Electron's main process answers, without Electron: the IPC handlers and the `runboard://app`
 * responses, dispatched from the board's method table with the same parameter checks as
 * `runboard serve` (core/board-dispatch.ts). main.ts only registers them; this module is unit-tested
 * (Electron itself cannot run on our machines).
 */
import { createWriteStream, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';
import {
  contentType,
  CSP,
  dispatchCall,
  parseParams,
  RENDERER_FILES,
  segmentsOf,
  statusOf,
  type CallHandlers,
  type FileHandlers,
} from '../core/board-dispatch.ts';
import type { RunViewer } from '../core/run-stream.ts';
import { Invalid } from '../core/board-errors.ts';
import { callNames, matchRoute } from '../shared/board-methods.ts';
import type { RunStreamMessage } from '../shared/board-types.ts';
import { channelOf, PICK_FOLDER, Push, Stream } from './channels.ts';
import { StreamCredit } from './credit.ts';

export interface IpcDeps {
  calls: CallHandlers;
  files: FileHandlers;
  streamRun(runId: string, viewer: RunViewer): () => void;
  /** Sends a push message to our window. */
  send(channel: string, ...args: unknown[]): void;
  /** Asks the person where to save; undefined when they cancel. */
  saveDialog(defaultName: string): Promise<string | undefined>;
  /** The system's folder dialog: the folder the person chose, undefined when they cancel. */
  folderDialog(): Promise<string | undefined>;
  /** Where an export is written (default: a file stream). */
  openForWrite?(file: string): Writable;
}

export interface IpcHandlers {
  /** channel → handler of the arguments the renderer sent (after the sender check). */
  handlers: Map<string, (...args: unknown[]) => unknown>;
  /** Stops every run stream (the window is going away). */
  closeAll(): void;
}

function streamId(sid: unknown): number {
  if (typeof sid !== 'number' || !Number.isSafeInteger(sid) || sid < 0)
    throw new Invalid(`a stream id is a non-negative integer, not ${JSON.stringify(sid)}`);
  return sid;
}

export function ipcHandlers(deps: IpcDeps): IpcHandlers {
  const handlers = new Map<string, (...args: unknown[]) => unknown>();
  for (const name of callNames)
    handlers.set(channelOf(name), (params) => dispatchCall(deps.calls, name, params));

  handlers.set(channelOf('exportRun'), async (raw) => {
    const reply = await deps.files.exportRun(parseParams('exportRun', raw));
    if (!('download' in reply)) throw new Error('exportRun answers a download');
    const file = await deps.saveDialog(reply.download);
    if (file) await reply.write((deps.openForWrite ?? createWriteStream)(file));
  });

  // The folder comes from the system dialog the person answered, never from the renderer: whatever
  // the renderer sends along is ignored. The grant then goes through grantFolder's checks.
  handlers.set(PICK_FOLDER, async () => {
    const folder = await deps.folderDialog();
    if (!folder) return { canceled: true };
    return dispatchCall(deps.calls, 'grantFolder', { path: folder });
  });

  const streams = new Map<number, { stop: () => void; credit: StreamCredit }>();
  const stop = (sid: number): void => {
    const s = streams.get(sid);
    s?.credit.close();
    s?.stop();
    streams.delete(sid);
  };
  handlers.set(Stream.start, (sid, raw) => {
    const id = streamId(sid);
    const { runId } = parseParams('runStream', raw);
    stop(id);
    const credit = new StreamCredit();
    const end = deps.streamRun(runId, {
      send: (m: RunStreamMessage) => deps.send(Push.runStream, id, m, credit.sending(m)),
      backlog: () => credit.backlog(),
      drained: () => credit.drained(),
    });
    streams.set(id, { stop: end, credit });
  });
  handlers.set(Stream.ack, (sid, n) => streams.get(streamId(sid))?.credit.ack(Number(n)));
  handlers.set(Stream.stop, (sid) => stop(streamId(sid)));
  return {
    handlers,
    closeAll: () => {
      for (const sid of [...streams.keys()]) stop(sid);
    },
  };
}

/**
 * The answer to a `runboard://app/...` request: the renderer's own files, or a `file` method of the
 * table (a screenshot, a live frame) under the same path as over HTTP.
 */
export async function appResponse(url: URL, files: FileHandlers, rendererDir: string): Promise<Response> {
  const text = (status: number, message: string): Response =>
    new Response(message, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  try {
    const name = url.pathname.replace(/^\//, '') || 'index.html';
    if ((RENDERER_FILES as readonly string[]).includes(name)) {
      return new Response(readFileSync(path.join(rendererDir, name)), {
        headers: { 'content-type': contentType(name), 'content-security-policy': CSP },
      });
    }
    const route = matchRoute('GET', segmentsOf(url.pathname));
    const raw = { ...Object.fromEntries(url.searchParams), ...route?.pathParams };
    let reply;
    if (route?.name === 'runFile') reply = await files.runFile(parseParams('runFile', raw));
    else if (route?.name === 'liveFrame') reply = await files.liveFrame(parseParams('liveFrame', raw));
    else if (route?.name === 'recordingFile')
      reply = await files.recordingFile(parseParams('recordingFile', raw));
    else return text(404, `not found: ${url.pathname}`);
    const headers = { 'content-type': reply.type, 'cache-control': 'no-store' };
    if ('bytes' in reply) return new Response(new Uint8Array(reply.bytes), { headers });
    if ('path' in reply) return new Response(readFileSync(reply.path), { headers });
    return text(404, `not found: ${url.pathname}`);
  } catch (err) {
    return text(statusOf(err), (err as Error).message);
  }
}
