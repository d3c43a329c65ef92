/**
 * The few Electron main-process APIs the shell uses, typed here because the `electron` package (and
 * its binary) cannot be installed on our machines. Kept to exactly what main.ts calls.
 */
export interface IpcEvent {
  sender: unknown;
}
export interface WebContents {
  send(channel: string, ...args: unknown[]): void;
  setWindowOpenHandler(h: (details: { url: string }) => { action: 'deny' | 'allow' }): void;
  on(event: 'will-navigate', listener: (e: { preventDefault(): void }, url: string) => void): void;
}
export interface BrowserWindowInstance {
  webContents: WebContents;
  loadURL(url: string): Promise<void>;
}
export interface ElectronMain {
  app: { whenReady(): Promise<void>; on(event: 'window-all-closed', l: () => void): void; quit(): void };
  BrowserWindow: new (opts: {
    width: number;
    height: number;
    title: string;
    webPreferences: {
      preload: string;
      sandbox: boolean;
      contextIsolation: boolean;
      nodeIntegration: boolean;
      webSecurity: boolean;
    };
  }) => BrowserWindowInstance;
  ipcMain: { handle(channel: string, fn: (e: IpcEvent, ...args: unknown[]) => unknown): void };
  protocol: {
    registerSchemesAsPrivileged(
      s: { scheme: string; privileges: { standard: boolean; secure: boolean; supportFetchAPI: boolean } }[],
    ): void;
    handle(scheme: string, fn: (req: Request) => Response | Promise<Response>): void;
  };
  dialog: {
    showSaveDialog(
      win: BrowserWindowInstance,
      opts: { defaultPath: string },
    ): Promise<{ canceled: boolean; filePath?: string }>;
    showOpenDialog(
      win: BrowserWindowInstance,
      opts: { title: string; defaultPath?: string; properties: ('openDirectory' | 'createDirectory')[] },
    ): Promise<{ canceled: boolean; filePaths: string[] }>;
  };
}
