/**
 * The Electron shell, kept thin: one window over the same renderer and the same host core as
 * `runboard serve`. Hardened per shared/DESIGN.md: sandboxed renderer, contextIsolation, no
 * nodeIntegration, a strict CSP, window.open denied, navigation blocked, IPC only from our window.
 * What it answers is built in ipc.ts from the board's method table (the same checks as over HTTP).
 * Electron cannot be downloaded on our machines, so this module is typed against the few Electron
 * APIs it uses (electron-api.ts) and loads Electron only at run time; scripts/start.sh runs it where
 * an Electron binary exists. Composition root of the Electron main process.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { statePaths } from '@runboard/supervisor/paths';
import { callHandlers, fileHandlers } from '../core/board-dispatch.ts';
import { openBoard } from '../core/open-board.ts';
import { distDir } from '../core/supervisor-client.ts';
import { APP_ORIGIN, Push, SCHEME } from './channels.ts';
import type { ElectronMain } from './electron-api.ts';
import { appResponse, ipcHandlers } from './ipc.ts';

const electronModule = 'electron';
const { app, BrowserWindow, ipcMain, protocol, dialog } = (await import(electronModule)) as ElectronMain;

const { values } = parseArgs({
  args: process.argv.slice(2),
  options: { project: { type: 'string' } },
  strict: false,
});
const projectDir = path.resolve(typeof values.project === 'string' ? values.project : 'project');
const rendererDir = path.join(distDir(), 'renderer');

protocol.registerSchemesAsPrivileged([
  { scheme: SCHEME, privileges: { standard: true, secure: true, supportFetchAPI: true } },
]);
await app.whenReady();

const service = await openBoard(projectDir, statePaths());
// The project shown is registered, as `runboard serve` does: its scheduled cards fire once the window closes.
service
  .registerProject()
  .catch((err: Error) =>
    process.stderr.write(
      `runboard: schedules of this project run only while a board is open (could not register it: ${err.message})\n`,
    ),
  );
const files = fileHandlers(service);
protocol.handle(SCHEME, (req) => {
  const url = new URL(req.url);
  if (url.origin !== APP_ORIGIN) return new Response('not found', { status: 404 });
  return appResponse(url, files, rendererDir);
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

const ipc = ipcHandlers({
  calls: callHandlers(service),
  files,
  streamRun: (runId, viewer) => service.streamRun(runId, viewer),
  send: (channel, ...args) => win.webContents.send(channel, ...args),
  saveDialog: async (defaultPath) => {
    const r = await dialog.showSaveDialog(win, { defaultPath });
    return r.canceled ? undefined : r.filePath;
  },
  folderDialog: async () => {
    const r = await dialog.showOpenDialog(win, {
      title: 'Grant a folder to runs',
      properties: ['openDirectory', 'createDirectory'],
    });
    return r.canceled ? undefined : r.filePaths[0];
  },
});
for (const [channel, fn] of ipc.handlers)
  ipcMain.handle(channel, (e, ...args) => {
    if (e.sender !== win.webContents) throw new Error('unknown sender');
    return fn(...args);
  });
service.on('delta', (d) => win.webContents.send(Push.boardChanged, d));

app.on('window-all-closed', () => {
  ipc.closeAll();
  void service.close().then(() => app.quit());
});
await win.loadURL(`${APP_ORIGIN}/index.html`);
