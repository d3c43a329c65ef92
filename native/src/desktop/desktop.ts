// The typed, promise-based desktop facade. Every call runs on the addon's own desktop thread.
import { binding, type RawRecorder, type RawWatcher } from '../binding.ts';
import { compactTables } from './compact.ts';
import {
  DesktopError,
  type AppInfo,
  type MonitorInfo,
  type CaptureOptions,
  type CaptureResult,
  type DesktopErrorCode,
  type Element,
  type Hud,
  type KeyPress,
  type KeyWatcher,
  type PointerInfo,
  type WatchKeysOptions,
  type InputRecorder,
  type Modifier,
  type MouseButton,
  type ReadOptions,
  type RecordedFocus,
  type RecordedWindow,
  type RecordedInput,
  type RecorderFrame,
  type RecordInputOptions,
  type ReadResult,
  type WindowInfo,
  type WindowQuery,
} from './types.ts';

const BUTTONS: Record<MouseButton, number> = { left: 1, middle: 2, right: 3 };

// Modifier bits as the recorder sets them (native/src/common/recorder.h).
const MODIFIERS: [number, Modifier][] = [
  [1 << 0, 'shift'],
  [1 << 1, 'capslock'],
  [1 << 2, 'ctrl'],
  [1 << 3, 'alt'],
  [1 << 6, 'super'],
];

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    const err = e as Error & { code?: string };
    if (err instanceof DesktopError) throw err;
    if (
      err.code === 'MODULE_NOT_FOUND' ||
      err.code === 'ERR_DLOPEN_FAILED' ||
      /addon is not built/.test(err.message)
    )
      throw new DesktopError('NOT_BUILT', err.message);
    throw new DesktopError((err.code ?? 'INTERNAL') as DesktopErrorCode, err.message);
  }
}

function query(q: WindowQuery = {}): WindowQuery {
  return { app: q.app, title: q.title, windowId: q.windowId, pid: q.pid };
}

function toDesktopError(payload: Record<string, unknown>): DesktopError {
  return new DesktopError(String(payload.code ?? 'INTERNAL') as DesktopErrorCode, String(payload.message));
}

/**
 * Starts a native watcher thread (its own display connection) and resolves once it runs; rejects with
 * its start-up error (NO_DISPLAY, UNSUPPORTED, INVALID_ARGUMENT).
 */
function startWatcher(
  options: { keys?: boolean; keyNames?: string[]; hud?: string; hudAt?: [number, number] },
  onKey: (k: KeyPress) => void,
  onError: ((err: DesktopError) => void) | undefined,
): Promise<RawWatcher> {
  return new Promise((resolve, reject) => {
    let started = false;
    let raw: RawWatcher;
    try {
      raw = new (binding().Watcher)(options, (type, payload) => {
        if (type === 'ready') {
          started = true;
          resolve(raw);
        } else if (type === 'key') onKey(payload as unknown as KeyPress);
        else if (!started) reject(toDesktopError(payload));
        else {
          raw.stop();
          onError?.(toDesktopError(payload));
        }
      });
    } catch (e) {
      void call(() => Promise.reject(e)).catch(reject);
    }
  });
}

/** Starts the native recorder thread; resolves with it once it listens and has its first frame. */
function startRecorder(
  onInput: (e: RecordedInput) => void,
  options: RecordInputOptions,
): Promise<InputRecorder> {
  return new Promise((resolve, reject) => {
    let started = false;
    // A frame crosses into JavaScript once; the events after it that share it carry its id only.
    const frames = new Map<number, RecorderFrame>();
    const keep = (f: RecorderFrame): void => {
      frames.set(f.id, f);
      for (const id of frames.keys()) if (frames.size > 8) frames.delete(id);
    };
    let raw: RawRecorder;
    try {
      raw = new (binding().Recorder)(
        {
          ...(options.region ? { region: options.region } : {}),
          ...(options.frameIntervalMs !== undefined ? { frameIntervalMs: options.frameIntervalMs } : {}),
          ...(options.settleMs !== undefined ? { settleMs: options.settleMs } : {}),
          ...(options.borderWidth ? { borderWidth: options.borderWidth } : {}),
        },
        (type, payload) => {
          if (type === 'ready') {
            started = true;
            const firstFrame = payload.frame as RecorderFrame;
            keep(firstFrame);
            resolve({
              firstFrame,
              pause: () => raw.setPaused(true),
              resume: () => raw.setPaused(false),
              mark: () => raw.mark(),
              stop: () => raw.stop(),
              drain: () => raw.drain(),
            });
          } else if (type === 'event') {
            const { frame, frameId, modifiers, ...rest } = payload;
            if (frame) keep(frame as RecorderFrame);
            const bits = modifiers as number;
            onInput({
              ...(rest as Omit<RecordedInput, 'frame' | 'modifiers'>),
              modifiers: MODIFIERS.filter(([bit]) => (bits & bit) !== 0).map(([, m]) => m),
              frame: frames.get(frameId as number) ?? [...frames.values()].at(-1)!,
            });
          } else if (type === 'focus') {
            options.onFocus?.(payload as unknown as RecordedFocus | { error: string });
          } else if (type === 'paused') {
            options.onPaused?.(payload as { paused: boolean; time: number });
          } else if (type === 'mark') {
            const frame = (payload.frame as RecorderFrame | undefined) ?? [...frames.values()].at(-1)!;
            options.onMark?.({ time: payload.time as number, frame });
          } else if (type === 'window') {
            options.onWindow?.(payload as unknown as RecordedWindow);
          } else if (!started) reject(toDesktopError(payload));
          else {
            raw.stop();
            options.onError?.(toDesktopError(payload));
          }
        },
      );
    } catch (e) {
      void call(() => Promise.reject(e)).catch(reject);
    }
  });
}

export const desktop = {
  listWindows(q?: WindowQuery): Promise<WindowInfo[]> {
    return call(() => binding().desktopListWindows(query(q)));
  },
  /** The monitors in the server's order; one covering the screen when the server reports none. */
  listMonitors(): Promise<MonitorInfo[]> {
    return call(() => binding().desktopListMonitors());
  },
  listApps(): Promise<AppInfo[]> {
    return call(() => binding().desktopListApps());
  },
  async read(options: ReadOptions = {}): Promise<ReadResult> {
    const { compact, ...rest } = options;
    const { elementsJson, ...raw } = await call(() =>
      binding().desktopRead({
        ...rest,
        ...query(options),
        ...(compact ? { compact: { ...compactTables, keep: compact.keep } } : {}),
      }),
    );
    // One JSON.parse: the addon wrote the Element objects (element_json.h), where an N-API object per
    // element and a copy of each here cost a 6,000-node page ~20 ms (docs/bench-desktop.md, session 18).
    return { ...raw, elements: elementsJson === undefined ? [] : (JSON.parse(elementsJson) as Element[]) };
  },
  /**
   * For long-lived processes (observe, serve): keep each window's tree between reads and re-read only
   * what the accessibility events say changed (every app on the bus sends those events while it is on).
   */
  keepTrees(on: boolean): Promise<void> {
    return call(() => binding().desktopKeepTrees(on));
  },
  /** Performs an element's accessibility action ('' or omitted: its first); returns the name performed. */
  doAction(q: WindowQuery, id: number, action = ''): Promise<string> {
    return call(() => binding().desktopDoAction(query(q), id, action));
  },
  /** Sets an element's text, or its numeric value, through the accessibility API; says which it set. */
  setValue(q: WindowQuery, id: number, value: string): Promise<'text' | 'value'> {
    return call(() => binding().desktopSetValue(query(q), id, value));
  },
  move(x: number, y: number): Promise<void> {
    return call(() => binding().desktopMove(x, y));
  },
  click(x: number, y: number, opts: { button?: MouseButton; count?: number } = {}): Promise<void> {
    return call(() => binding().desktopClick(x, y, BUTTONS[opts.button ?? 'left'], opts.count ?? 1));
  },
  /** dy > 0 scrolls down, dx > 0 right, in wheel clicks. */
  scroll(x: number, y: number, dx: number, dy: number): Promise<void> {
    return call(() => binding().desktopScroll(x, y, dx, dy));
  },
  drag(
    from: [number, number],
    to: [number, number],
    opts: { steps?: number; stepDelayMs?: number; button?: MouseButton } = {},
  ): Promise<void> {
    return call(() =>
      binding().desktopDrag(
        from[0],
        from[1],
        to[0],
        to[1],
        opts.steps ?? 10,
        opts.stepDelayMs ?? 10,
        BUTTONS[opts.button ?? 'left'],
      ),
    );
  },
  /** Types any Unicode text into the focused window; `waitHandled` as for `key`. */
  type(text: string, opts: { delayMs?: number; waitHandled?: boolean } = {}): Promise<void> {
    return call(() => binding().desktopType(text, opts.delayMs ?? 0, opts.waitHandled ? 1 : 0));
  },
  /**
   * A key combination: 'ctrl+shift+t', 'enter', 'alt+f4'. With `waitHandled`, resolves once the app
   * holding the focus has handled the keys (it answered a _NET_WM_PING sent after them; an app that
   * takes no ping gets 250 ms, one that does not answer 20 s): a read then sees what the keys did.
   */
  key(combo: string, opts: { delayMs?: number; waitHandled?: boolean } = {}): Promise<void> {
    return call(() => binding().desktopKey(combo, opts.delayMs ?? 0, opts.waitHandled ? 1 : 0));
  },
  focus(q: WindowQuery): Promise<WindowInfo> {
    return call(() => binding().desktopFocus(query(q)));
  },
  capture(options: CaptureOptions = {}): Promise<CaptureResult> {
    return call(() => binding().desktopCapture({ ...options, ...query(options) }));
  },
  /** Where the pointer is now (XQueryPointer), in physical pixels, with the monitor under it. */
  async pointer(): Promise<PointerInfo> {
    const p = await call(() => binding().desktopPointer());
    const b = p.buttons;
    return { ...p, buttons: { left: (b & 1) !== 0, middle: (b & 2) !== 0, right: (b & 4) !== 0 } };
  },
  /**
   * Watches key presses on the whole display, each with the device it came from: `synthetic` tells
   * injected input (XTest: this addon's own keys) from a person's keyboard. Runs on a thread of its own
   * with its own display connection; keeps the process alive until stop(). Without `keys`, every key
   * press (a person's typing included) reaches `onKey`: pass the keys you need.
   */
  async watchKeys(onKey: (k: KeyPress) => void, options: WatchKeysOptions = {}): Promise<KeyWatcher> {
    const raw = await startWatcher({ keys: true, keyNames: options.keys }, onKey, options.onError);
    return { stop: () => raw.stop() };
  },
  /**
   * Shows the takeover HUD: a bar at the top centre of a monitor (the one holding `at`, else the
   * primary one), always on top, never focused, click-through. Resolves once it is on screen.
   */
  async hud(
    text: string,
    options: { onError?: (err: DesktopError) => void; at?: [number, number] } = {},
  ): Promise<Hud> {
    if (typeof text !== 'string' || text.length === 0)
      throw new DesktopError('INVALID_ARGUMENT', 'the HUD needs a text');
    const raw = await startWatcher(
      { keys: false, hud: text, ...(options.at ? { hudAt: options.at } : {}) },
      () => undefined,
      options.onError,
    );
    return { show: () => raw.setHud(true), hide: () => raw.setHud(false), close: () => raw.stop() };
  },
  /**
   * Records what a person does at the display: key presses (with the text they type), button presses
   * and releases (with the pointer and the window under it), each with the frame the display server
   * produced just before it. Listens only (nothing is grabbed), on a thread and display connection of
   * its own; keeps the process alive until stop().
   */
  recordInput(onInput: (e: RecordedInput) => void, options: RecordInputOptions = {}): Promise<InputRecorder> {
    return startRecorder(onInput, options);
  },
  /** Encodes RGBA rows (a recorder frame) as PNG or JPEG, off the JavaScript and desktop threads. */
  encodeImage(
    image: { data: Buffer; width: number; height: number },
    opts: { format?: 'png' | 'jpeg'; quality?: number } = {},
  ): Promise<Buffer> {
    return call(() =>
      binding().encodeImage(image.data, image.width, image.height, opts.format ?? 'png', opts.quality ?? 85),
    );
  },
  /** Benchmark baseline only: libatspi's one-call-per-attribute walk; resolves to the node count. */
  naiveWalkForBench(q: WindowQuery): Promise<number> {
    return call(() => binding().desktopNaiveWalkForBench(query(q)));
  },
  /** The addon's compact tree (JSON) of given elements, as its reads make it: for tests. */
  compactJsonForTest(elements: Element[], keep?: string[]): string {
    return binding().desktopCompactJsonForTest(elements, { ...compactTables, keep });
  },
};

export type Desktop = typeof desktop;
