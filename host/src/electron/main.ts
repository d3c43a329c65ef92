/**
 * The Electron shell, kept thin: one window over the same renderer and the same host core as
 * `runboard serve`. Hardened per shared/DESIGN.md: sandboxed renderer, contextIsolation, no
 * nodeIntegration, a strict CSP, window.open denied, navigation blocked, IPC only from our window.
 * Electron cannot be downloaded on our machines, so this module is typed against the few Electron
 * APIs it uses (electron-api.ts) and loads Electron only at run time; scripts/start.sh runs it where
 * an Electron binary exists. Composition root of the Electron main process.
 */
import { createWriteStream, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { statePaths } from '@runboard/supervisor/paths';
import { AnswerList, BoardService } from '../core/board-service.ts';
import { distDir } from '../core/supervisor-client.ts';
import type { Column, Settings } from '../renderer/api.ts';
import { CSP } from '../server/server.ts';
import { Invoke, Push, SCHEME } from './channels.ts';
import { StreamCredit } from './credit.ts';
import type { ElectronMain, IpcEvent } from './electron-api.ts';

const electronModule = 'electron';
const { app, BrowserWindow, ipcMain, protocol, dialog } = (await import(electronModule)) as ElectronMain;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { project: { type: 'string' } },
  strict: false,
});
const projectDir = path.resolve(typeof values.project === 'string' ? values.project : 'project');
const rendererDir = path.join(distDir(), 'renderer');
const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
};

protocol.registerSchemesAsPrivileged([
  { scheme: SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);
await app.whenReady();
const service = await BoardService.open(projectDir, statePaths());

protocol.handle(SCHEME, (req) => {
  const url = new URL(req.url);
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (url.host === 'live' && parts.length === 1) {
    try {
      return new Response(new Uint8Array(service.liveFrame(parts[0]!)), {
        headers: { 'content-type': 'image/jpeg', 'cache-control': 'no-store' },
      });
    } catch (err) {
      return new Response((err as Error).message, { status: 404 });
    }
  }
  let file: string;
  if (url.host === 'app') file = path.join(rendererDir, path.basename(parts[0] ?? 'index.html'));
  else if (url.host === 'run' && parts.length === 2) file = service.screenshotPath(parts[0]!, parts[1]!);
  else return new Response('not found', { status: 404 });
  return new Response(readFileSync(file), {
    headers: {
      'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
      'content-security-policy': CSP,
    },
  });
});

const win = new BrowserWindow({
  width: 1400,
  height: 900,
  title: 'Runboard',
  webPreferences: {
    preload: path.join(distDir(), 'electron-preload.cjs'),
    sandbox: true,
    contextIsolation: true,
    nodeIntegration: false,
    webSecurity: true,
  },
});
win.webContents.setWindowOpenHandler(() => ({ action: 'deny' }));
win.webContents.on('will-navigate', (e) => e.preventDefault());
const fromUs = (e: IpcEvent): boolean => e.sender === win.webContents;
const handle = (channel: string, fn: (...args: unknown[]) => unknown): void =>
  ipcMain.handle(channel, (e, ...args) => {
    if (!fromUs(e)) throw new Error('unknown sender');
    return fn(...args);
  });

const streams = new Map<number, { stop: () => void; credit: StreamCredit }>();
handle(Invoke.board, () => service.view());
handle(Invoke.card, (id) => service.cardDetail(String(id)));
handle(Invoke.move, (id, to, index) => service.move(String(id), to as Column, Number(index)));
handle(Invoke.cancel, (id) => service.cancel(String(id)));
handle(Invoke.answer, (id, answers, requeue) =>
  service.answer(String(id), AnswerList.parse(answers), requeue === true),
);
handle(Invoke.settings, () => service.settings());
handle(Invoke.saveSettings, (s) => service.saveSettings(s as Settings));
handle(Invoke.runFiles, (runId) => service.runFiles(String(runId)));
handle(Invoke.runDiff, (runId) => service.worktreeDiff(String(runId)));
handle(Invoke.settleWorktree, (runId, how) =>
  service.settleWorktree(String(runId), how === 'keep' ? 'keep' : 'discard'),
);
handle(Invoke.exportRun, async (runId) => {
  const r = await dialog.showSaveDialog(win, { defaultPath: `run-${String(runId)}.tar.gz` });
  if (!r.canceled && r.filePath) await service.exportRun(String(runId), createWriteStream(r.filePath));
});
handle(Invoke.streamRun, (sid, runId) => {
  const credit = new StreamCredit();
  const stop = service.streamRun(String(runId), {
    send: (m) => win.webContents.send(Push.runStream, sid, m, credit.sending(m)),
    backlog: () => credit.backlog(),
    drained: () => credit.drained(),
  });
  streams.set(Number(sid), { stop, credit });
});
handle(Invoke.ackStream, (sid, n) => streams.get(Number(sid))?.credit.ack(Number(n)));
handle(Invoke.stopStream, (sid) => {
  const s = streams.get(Number(sid));
  s?.credit.close();
  s?.stop();
  streams.delete(Number(sid));
});
service.on('delta', (d) => win.webContents.send(Push.boardChanged, d));
app.on('window-all-closed', () => {
  for (const s of streams.values()) {
    s.credit.close();
    s.stop();
  }
  void service.close().then(() => app.quit());
});
await win.loadURL(`${SCHEME}://app/index.html`);
