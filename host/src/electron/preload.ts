/**
 * The typed preload bridge (sandboxed preload, contextIsolation): exposes the renderer's BoardApi,
 * built from the board's method table, over the channels of channels.ts. Never the raw ipcRenderer,
 * no fs, no spawn. Main checks every argument (ipc.ts); nothing here is trusted.
 */
import type { BoardApi } from '../shared/board-api.ts';
import { buildCalls, urlOf } from '../shared/board-methods.ts';
import type { BoardDelta, RunStreamMessage } from '../shared/board-types.ts';
import { APP_ORIGIN, channelOf, PICK_FOLDER, Push, Stream } from './channels.ts';
import { AckBatcher } from './credit.ts';

interface IpcRendererLike {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void;
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void;
}
// In a sandboxed preload, `require` is Electron's small require that serves 'electron'.
declare const require: (id: 'electron') => {
  contextBridge: { exposeInMainWorld(key: string, api: unknown): void };
  ipcRenderer: IpcRendererLike;
  /** Electron ≥ 29: the path of a File the person chose (a file input, a drop). */
  webUtils: { getPathForFile(file: File): string };
};
const { contextBridge, ipcRenderer, webUtils } = require('electron');

let streams = 0;
const calls = buildCalls((name, params) => ipcRenderer.invoke(channelOf(name), params));
const api: BoardApi = {
  ...calls,
  // the file is on this machine already: its path, as a typed one (it must lie in a granted folder)
  importVideoFile: (file, opts) => calls.extractTask({ file: webUtils.getPathForFile(file), ...opts }),
  onBoardChanged(cb) {
    const l = (_e: unknown, delta?: unknown): void => cb(delta as BoardDelta | undefined);
    ipcRenderer.on(Push.boardChanged, l);
    return () => ipcRenderer.removeListener(Push.boardChanged, l);
  },
  fileUrl: (runId, name) => APP_ORIGIN + urlOf('runFile', { runId, name }),
  liveUrl: (runId, n) => APP_ORIGIN + urlOf('liveFrame', { runId, n }),
  recordingFileUrl: (recordingId, name) => APP_ORIGIN + urlOf('recordingFile', { recordingId, name }),
  exportRun: async (runId) => void (await ipcRenderer.invoke(channelOf('exportRun'), { runId })),
  pickFolder: async () => {
    const r = (await ipcRenderer.invoke(PICK_FOLDER)) as { path?: string };
    return r.path;
  },
  streamRun(runId, cb) {
    const id = ++streams;
    const acks = new AckBatcher((n) => void ipcRenderer.invoke(Stream.ack, id, n));
    const l = (_e: unknown, sid: unknown, m: unknown, size: unknown): void => {
      if (sid !== id) return;
      cb(m as RunStreamMessage);
      acks.handled(Number(size) || 0);
    };
    ipcRenderer.on(Push.runStream, l);
    void ipcRenderer.invoke(Stream.start, id, { runId });
    return () => {
      ipcRenderer.removeListener(Push.runStream, l);
      void ipcRenderer.invoke(Stream.stop, id);
    };
  },
};
contextBridge.exposeInMainWorld('runboard', api);
