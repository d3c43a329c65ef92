/**
 * The typed preload bridge (sandboxed preload, contextIsolation): exposes the renderer's BoardApi as
 * named intents over the channels of channels.ts. Never the raw ipcRenderer, no fs, no spawn.
 */
import type { BoardApi, BoardDelta, RunStreamMessage } from '../renderer/api.ts';
import { Invoke, Push, SCHEME } from './channels.ts';
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
};
const { contextBridge, ipcRenderer } = require('electron');

let streams = 0;
const api: BoardApi = {
  board: () => ipcRenderer.invoke(Invoke.board) as ReturnType<BoardApi['board']>,
  onBoardChanged(cb) {
    const l = (_e: unknown, delta?: unknown): void => cb(delta as BoardDelta | undefined);
    ipcRenderer.on(Push.boardChanged, l);
    return () => ipcRenderer.removeListener(Push.boardChanged, l);
  },
  card: (id) => ipcRenderer.invoke(Invoke.card, id) as ReturnType<BoardApi['card']>,
  move: async (id, to, index) => void (await ipcRenderer.invoke(Invoke.move, id, to, index)),
  cancel: async (id) => void (await ipcRenderer.invoke(Invoke.cancel, id)),
  answer: async (id, answers, requeue) =>
    void (await ipcRenderer.invoke(Invoke.answer, id, answers, requeue)),
  settings: () => ipcRenderer.invoke(Invoke.settings) as ReturnType<BoardApi['settings']>,
  saveSettings: async (s) => void (await ipcRenderer.invoke(Invoke.saveSettings, s)),
  runFiles: (runId) => ipcRenderer.invoke(Invoke.runFiles, runId) as ReturnType<BoardApi['runFiles']>,
  runDiff: (runId) => ipcRenderer.invoke(Invoke.runDiff, runId) as ReturnType<BoardApi['runDiff']>,
  settleWorktree: (runId, how) =>
    ipcRenderer.invoke(Invoke.settleWorktree, runId, how) as ReturnType<BoardApi['settleWorktree']>,
  fileUrl: (runId, name) => `${SCHEME}://run/${encodeURIComponent(runId)}/${encodeURIComponent(name)}`,
  liveUrl: (runId, n) => `${SCHEME}://live/${encodeURIComponent(runId)}?n=${n}`,
  exportRun: async (runId) => void (await ipcRenderer.invoke(Invoke.exportRun, runId)),
  streamRun(runId, cb) {
    const id = ++streams;
    const acks = new AckBatcher((n) => void ipcRenderer.invoke(Invoke.ackStream, id, n));
    const l = (_e: unknown, sid: unknown, m: unknown, size: unknown): void => {
      if (sid !== id) return;
      cb(m as RunStreamMessage);
      acks.handled(Number(size) || 0);
    };
    ipcRenderer.on(Push.runStream, l);
    void ipcRenderer.invoke(Invoke.streamRun, id, runId);
    return () => {
      ipcRenderer.removeListener(Push.runStream, l);
      void ipcRenderer.invoke(Invoke.stopStream, id);
    };
  },
};
contextBridge.exposeInMainWorld('runboard', api);
