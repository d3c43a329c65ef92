// The only file that touches the untyped binding. Everything else imports the typed facade.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder that holds the built addon and the jail, found from this file or the bundle that contains it. */
export function nativeBuildDir(): string {
  const fromEnv = process.env.RUNBOARD_NATIVE_DIR;
  if (fromEnv) return fromEnv;
  // __dirname in a CommonJS bundle (desktop-cli's: no file URL to make and parse at every start).
  let dir = typeof __dirname === 'string' ? __dirname : path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'native', 'build', 'Release');
    if (existsSync(candidate)) return candidate;
    const inside = path.join(dir, 'build', 'Release');
    if (path.basename(dir) === 'native' && existsSync(inside)) return inside;
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(
    'runboard: the native addon is not built (no native/build/Release). Run scripts/setup.sh, which builds it.',
  );
}

type RawRect = [number, number, number, number];
type RawQuery = { app?: string; title?: string; windowId?: number; pid?: number };
interface RawWindow {
  id: number;
  pid: number;
  app: string;
  appClass: string;
  title: string;
  bounds: RawRect;
  focused: boolean;
}
interface RawBinding {
  sandboxSupport(): { landlockAbi: number; reason: string };
  holdProcessLock(path: string): boolean;
  peerIdentity(fd: number): {
    pid: number;
    uid: number;
    userNs: string;
    userNsBelowOwn: boolean;
    ancestors: number[];
  };
  desktopListWindows(q: RawQuery): Promise<RawWindow[]>;
  desktopListMonitors(): Promise<{ name: string; bounds: RawRect; primary: boolean }[]>;
  desktopListApps(): Promise<{ name: string; pid: number; accessible: boolean; windows: number }[]>;
  desktopRead(
    o: RawQuery & {
      depth?: number;
      roles?: string[];
      bbox?: RawRect;
      visibleOnly?: boolean;
      actions?: boolean;
      signatures?: boolean;
      /** compact.ts compactTables, and the short roles to keep */
      compact?: { roles: string[]; actions: string[]; keep?: string[] };
      elements?: boolean;
    },
  ): Promise<{
    window: RawWindow;
    scale: number;
    /** The elements as one JSON text (native/src/common/element_json.h): Element objects already. */
    elementsJson?: string;
    /** With `compact` (element_json.h AppendCompactJson). */
    compactJson?: string;
    /** With `signatures` (native/src/common/element_json.h AppendSignaturesJson). */
    signaturesJson?: string;
    stats: {
      nodes: number;
      returned: number;
      roundTrips: number;
      ms: number;
      kept: boolean;
      refreshed: number;
    };
  }>;
  desktopKeepTrees(on: boolean): Promise<void>;
  desktopDoAction(q: RawQuery, id: number, action: string): Promise<string>;
  desktopSetValue(q: RawQuery, id: number, value: string): Promise<'text' | 'value'>;
  desktopMove(x: number, y: number): Promise<void>;
  desktopClick(x: number, y: number, button: number, count: number): Promise<void>;
  desktopScroll(x: number, y: number, dx: number, dy: number): Promise<void>;
  desktopDrag(
    fx: number,
    fy: number,
    tx: number,
    ty: number,
    steps: number,
    delay: number,
    button: number,
  ): Promise<void>;
  /** waitHandled 1: as desktopKey. */
  desktopType(text: string, delayMs: number, waitHandled?: number): Promise<void>;
  /** waitHandled 1: resolves once the focused app has handled the keys (a ping answered after them). */
  desktopKey(combo: string, delayMs: number, waitHandled?: number): Promise<void>;
  desktopFocus(q: RawQuery): Promise<RawWindow>;
  desktopCapture(
    o: RawQuery & { region?: RawRect; scale?: number; format?: string; quality?: number; cursor?: boolean },
  ): Promise<{
    data: Buffer;
    width: number;
    height: number;
    source: RawRect;
    format: 'png' | 'jpeg' | 'raw';
  }>;
  desktopNaiveWalkForBench(q: RawQuery): Promise<number>;
  desktopCompactJsonForTest(
    elements: unknown[],
    compact: { roles: string[]; actions: string[]; keep?: string[] },
  ): string;
  desktopPointer(): Promise<{
    x: number;
    y: number;
    onScreen: boolean;
    screen: RawRect;
    buttons: number;
    monitor: { name: string; bounds: RawRect; primary: boolean } | null;
  }>;
  Watcher: new (
    options: { keys?: boolean; keyNames?: string[]; hud?: string; hudAt?: [number, number] },
    onMessage: (type: 'ready' | 'key' | 'error', payload: Record<string, unknown>) => void,
  ) => RawWatcher;
  Recorder: new (
    options: { region?: RawRect; frameIntervalMs?: number; settleMs?: number; borderWidth?: number },
    onMessage: (
      type: 'ready' | 'event' | 'focus' | 'paused' | 'mark' | 'window' | 'error',
      payload: Record<string, unknown>,
    ) => void,
  ) => RawRecorder;
  encodeImage(rgba: Buffer, width: number, height: number, format: string, quality: number): Promise<Buffer>;
}

export interface RawRecorder {
  setPaused(paused: boolean): void;
  /** Marks the X server's instant of the call; true: a 'mark' message {time, frame} follows, in order. */
  mark(): boolean;
  stop(): void;
  /** Stops at an instant of the X server, after delivering every event before it; its server time (0: ended already). */
  drain(): Promise<number>;
}

export interface RawWatcher {
  setHud(visible: boolean): Promise<void>;
  stop(): void;
}

let cached: RawBinding | undefined;
export function binding(): RawBinding {
  if (!cached) {
    // What require() does for a .node file, without node:module's createRequire: importing that
    // module loads Node's ES module loader (~0.4 ms of every desktop-cli command's start-up).
    const mod = { exports: {} as RawBinding };
    process.dlopen(mod, path.join(nativeBuildDir(), 'runboard_native.node'));
    cached = mod.exports;
  }
  return cached;
}
