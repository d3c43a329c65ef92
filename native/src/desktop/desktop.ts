// The typed, promise-based desktop facade. Every call runs on the addon's own desktop thread.
import { binding, type RawElement } from '../binding.ts';
import {
  DesktopError,
  type AppInfo,
  type MonitorInfo,
  type CaptureOptions,
  type CaptureResult,
  type DesktopErrorCode,
  type Element,
  type MouseButton,
  type ReadOptions,
  type ReadResult,
  type WindowInfo,
  type WindowQuery,
} from './types.ts';

// State bits as the addon sets them (native/src/common/desktop_types.h).
const FOCUSED = 1 << 0;
const ENABLED = 1 << 1;
const SELECTED = 1 << 2;
const VISIBLE = 1 << 3;
const CHECKED = 1 << 4;
const EDITABLE = 1 << 5;
const FOCUSABLE = 1 << 6;

const BUTTONS: Record<MouseButton, number> = { left: 1, middle: 2, right: 3 };

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

function element(raw: RawElement): Element {
  const s = raw.states;
  const e: Element = {
    id: raw.id,
    role: raw.role,
    name: raw.name,
    description: raw.description,
    bounds: raw.bounds,
    focused: (s & FOCUSED) !== 0,
    enabled: (s & ENABLED) !== 0,
    selected: (s & SELECTED) !== 0,
    visible: (s & VISIBLE) !== 0,
    checked: (s & CHECKED) !== 0,
    editable: (s & EDITABLE) !== 0,
    focusable: (s & FOCUSABLE) !== 0,
    secret: raw.secret,
    actions: raw.actions,
    children: raw.children.map(element),
  };
  if (!raw.secret && raw.value !== undefined) e.value = raw.value;
  return e;
}

function query(q: WindowQuery = {}): WindowQuery {
  return { app: q.app, title: q.title, windowId: q.windowId, pid: q.pid };
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
    const raw = await call(() => binding().desktopRead({ ...options, ...query(options) }));
    return { ...raw, elements: raw.elements.map(element) };
  },
  /** Performs an element's accessibility action ('' or omitted: its first); returns the name performed. */
  doAction(q: WindowQuery, id: number, action = ''): Promise<string> {
    return call(() => binding().desktopDoAction(query(q), id, action));
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
  /** Types any Unicode text into the focused window. */
  type(text: string, opts: { delayMs?: number } = {}): Promise<void> {
    return call(() => binding().desktopType(text, opts.delayMs ?? 0));
  },
  /** A key combination: 'ctrl+shift+t', 'enter', 'alt+f4'. */
  key(combo: string, opts: { delayMs?: number } = {}): Promise<void> {
    return call(() => binding().desktopKey(combo, opts.delayMs ?? 0));
  },
  focus(q: WindowQuery): Promise<WindowInfo> {
    return call(() => binding().desktopFocus(query(q)));
  },
  capture(options: CaptureOptions = {}): Promise<CaptureResult> {
    return call(() => binding().desktopCapture({ ...options, ...query(options) }));
  },
  /** Benchmark baseline only: libatspi's one-call-per-attribute walk; resolves to the node count. */
  naiveWalkForBench(q: WindowQuery): Promise<number> {
    return call(() => binding().desktopNaiveWalkForBench(query(q)));
  },
};

export type Desktop = typeof desktop;
