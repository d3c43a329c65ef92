// The desktop capabilities' types, as every platform backend fills them. Coordinates are physical
// screen pixels that input can use directly (a GDK_SCALE'd app's logical pixels are scaled up).

/** [x, y, width, height] */
export type Rect = [number, number, number, number];

/** Picks a window. Every given field must match; text fields match case-insensitively as substrings. */
export interface WindowQuery {
  /** Application name (accessibility name or window class). */
  app?: string;
  /** Window title. */
  title?: string;
  /** The platform window id (X11: the client window). */
  windowId?: number;
  pid?: number;
}

export interface WindowInfo {
  id: number;
  pid: number;
  app: string;
  /** X11 WM_CLASS class. */
  appClass: string;
  title: string;
  /** Outer bounds (window frame included). */
  bounds: Rect;
  focused: boolean;
}

/** A monitor: the part of the screen one output shows (RandR 1.5 monitors on X11). */
export interface MonitorInfo {
  /** The output's name (e.g. "DP-1"). */
  name: string;
  /** Physical pixels, in screen coordinates. */
  bounds: Rect;
  primary: boolean;
}

export interface AppInfo {
  name: string;
  pid: number;
  /** Whether the app exposes an accessibility tree. */
  accessible: boolean;
  windows: number;
}

export interface Element {
  /** Pre-order index over the window's whole tree; the same element has the same id whatever the filters. */
  id: number;
  /** The platform's role name (AT-SPI: 'push button', 'text', ...). */
  role: string;
  name: string;
  /** Text of a field, numeric value, or '1'/'0' for a checkable element; absent for a secret field. */
  value?: string;
  description: string;
  bounds: Rect;
  focused: boolean;
  enabled: boolean;
  selected: boolean;
  visible: boolean;
  checked: boolean;
  editable: boolean;
  focusable: boolean;
  /** A password field: its value is never read. */
  secret: boolean;
  /** The platform's action names. */
  actions: string[];
  children: Element[];
}

export interface ReadOptions extends WindowQuery {
  /** Levels below the window to read (1: its direct children). Default: unlimited. */
  depth?: number;
  /** Platform role names to keep; other elements are left out and their children move up. */
  roles?: string[];
  /** Only elements that intersect this rectangle. */
  bbox?: Rect;
  /** Only elements on screen (default true). */
  visibleOnly?: boolean;
  /** Read action names (default true). */
  actions?: boolean;
  /** Also give `signaturesJson`: every element's signature for desktop-cli's read context. */
  signatures?: boolean;
  /**
   * Also give `compactJson`: the compact tree compact.ts `toCompact(elements, keep)` makes, made by the
   * addon (desktop-cli's reads: no object per element in a one-shot process).
   */
  compact?: { keep?: string[] };
  /** Give the elements (default true); false: `elements` is empty (a read that needs only compactJson). */
  elements?: boolean;
}

export interface ReadResult {
  window: WindowInfo;
  /** The toolkit scale applied to the accessibility bounds (GDK_SCALE). */
  scale: number;
  elements: Element[];
  /**
   * With `signatures`: every element of the tree (pre-order) keyed by id, as JSON made by the addon:
   * `{"<id>":{"p":<platform role>,"e":1 when editable,"t":<name>,"b":<bounds relative to the window>}}`
   * (desktop-cli's read context, native/src/cli/context.ts).
   */
  signaturesJson?: string;
  /** With `compact`: the compact tree's JSON (CompactElement[]). */
  compactJson?: string;
  stats: {
    nodes: number;
    returned: number;
    roundTrips: number;
    ms: number;
    /** Served from a tree kept since an earlier read (desktop.keepTrees), with what changed re-read. */
    kept?: boolean;
    /** Objects re-read because an accessibility event named them (kept trees only). */
    refreshed?: number;
  };
}

export type MouseButton = 'left' | 'middle' | 'right';

export interface CaptureOptions extends WindowQuery {
  /** A screen region instead of a window or the whole screen. */
  region?: Rect;
  /** 0.01 .. 1 (default 1). */
  scale?: number;
  format?: 'png' | 'jpeg' | 'raw';
  /** JPEG quality 1..100 (default 80). */
  quality?: number;
  /** Draw the mouse cursor in (default true). */
  cursor?: boolean;
}

export interface CaptureResult {
  /** Encoded image (raw: RGBA rows). */
  data: Buffer;
  width: number;
  height: number;
  /** The captured screen rectangle, before scaling. */
  source: Rect;
  format: 'png' | 'jpeg' | 'raw';
}

export type DesktopErrorCode =
  | 'NO_DISPLAY'
  | 'NO_ACCESSIBILITY_BUS'
  | 'APP_NOT_FOUND'
  | 'NO_ACCESSIBILITY_TREE'
  /** The window's app is stopped (SIGSTOP, a debugger): it answers no accessibility call until continued. */
  | 'APP_NOT_RESPONDING'
  | 'ELEMENT_NOT_FOUND'
  | 'INVALID_ARGUMENT'
  | 'ACTION_FAILED'
  | 'CAPTURE_FAILED'
  /** The display server lacks what the call needs (e.g. XInput 2 for the key watcher). */
  | 'UNSUPPORTED'
  /** The addon is not built (or cannot be loaded). */
  | 'NOT_BUILT'
  | 'INTERNAL';

/** Where the pointer is, whoever moved it (the person, this process, another program). */
export interface PointerInfo {
  /** Physical screen pixels (root window coordinates). */
  x: number;
  y: number;
  /** False when the pointer is on another X screen (multi-screen setups); x/y are then not on this one. */
  onScreen: boolean;
  /** The whole screen [x, y, w, h]. */
  screen: Rect;
  buttons: { left: boolean; middle: boolean; right: boolean };
  /** The monitor under the pointer (RandR), or null when the server reports none. */
  monitor: { name: string; bounds: Rect; primary: boolean } | null;
}

/** A key press seen by a key watcher. */
export interface KeyPress {
  /** The key's keysym name ('Escape', 'a', 'Return'); '' when the key is unmapped. */
  key: string;
  keysym: number;
  keycode: number;
  /** The device the press came from (the X11 slave device), by id and name. */
  deviceId: number;
  device: string;
  /** From a synthetic-input device (XTest: this addon's input, xdotool, …), not a keyboard. */
  synthetic: boolean;
  /** Server time, ms. */
  time: number;
}

export interface WatchKeysOptions {
  /** Report only these keys (X keysym names: 'Escape', 'F1'); default every key. */
  keys?: string[];
  /** Called if the watcher dies after it started (the display went away); it is stopped then. */
  onError?: (err: DesktopError) => void;
}

export interface KeyWatcher {
  /** Ends the watcher; no callback runs after it, and it no longer keeps the process alive. */
  stop(): void;
}

export interface Hud {
  /** Map / unmap the HUD; resolve once the display server has done it. */
  show(): Promise<void>;
  hide(): Promise<void>;
  close(): void;
}

/** A frame of the recorded area: RGBA rows, `width * 4` bytes each. */
export interface RecorderFrame {
  id: number;
  width: number;
  height: number;
  /** The screen rectangle it shows. */
  source: Rect;
  data: Buffer;
}

export type Modifier = 'shift' | 'capslock' | 'ctrl' | 'alt' | 'super';

/** One input event of the person at the display, with the frame taken just before it. */
export interface RecordedInput {
  kind: 'keyPress' | 'buttonPress' | 'buttonRelease';
  /** Server time, ms. */
  time: number;
  /** Keys: the keysym name at the level the modifiers select ('a', 'A', 'Return', 'at'). */
  key: string;
  keysym: number;
  keycode: number;
  /** The text the key types ('' for Return, Tab, arrows, F-keys, modifiers). */
  text: string;
  /** Shift, Control, Alt, Super, Caps Lock themselves. */
  modifierKey: boolean;
  /** Modifiers held at the event. */
  modifiers: Modifier[];
  /** 1 left, 2 middle, 3 right, 4/5 wheel up/down, 6/7 wheel left/right (0 for keys). */
  button: number;
  /** Buttons: the pointer at the event, screen pixels. */
  x: number;
  y: number;
  /** The top-level window under the pointer (buttons) or with the focus (keys); 0 when none. */
  window: number;
  /** From an XTest device (a script), not a person's keyboard or mouse. */
  synthetic: boolean;
  device: string;
  /** The screen as it was at the event (the pre-action state). */
  frame: RecorderFrame;
}

export interface RecordInputOptions {
  /** The area to record (a monitor's bounds); default the whole screen. */
  region?: Rect;
  /**
   * Frames follow the screen's changes (X DAMAGE), at most this often (default 50 ms); an event met
   * with no frame since the screen changed gets the changed parts from a frame taken after it. Without
   * DAMAGE: a frame this often.
   */
  frameIntervalMs?: number;
  /** Without DAMAGE: a frame this long after each burst of input too (default 150 ms). */
  settleMs?: number;
  /**
   * A red border this many pixels thick just inside the area while recording (0 or absent: none). It is
   * click-through, and never in the frames: their border strips show what is below it.
   */
  borderWidth?: number;
  /** Called if the recorder dies after it started (the display went away); it is stopped then. */
  onError?: (err: DesktopError) => void;
  /**
   * Accessibility focus changes as they happen (AT-SPI), each with its own server time: the focus
   * timeline (focus-timeline.ts). Called once with `{ error }` when they cannot be followed.
   */
  onFocus?: (f: RecordedFocus | { error: string }) => void;
  /**
   * A pause() or resume() took effect, in the order of the input: every event the server generated
   * before its instant has been passed to onInput, none after it will be (until a resume). `time`: the
   * instant's server time, ms (0: it could not be placed among the events and took effect at the call).
   */
  onPaused?: (p: { paused: boolean; time: number }) => void;
  /**
   * A mark() reached, among the events: every event before its instant has been passed to onInput, none
   * after it yet. `time`: its server time, ms; `frame`: the screen at that instant.
   */
  onMark?: (m: { time: number; frame: RecorderFrame }) => void;
  /**
   * A top-level window the window manager manages was mapped, moved or resized, or unmapped, as the
   * server reports it (decision 140): what the video's masks follow between input events.
   */
  onWindow?: (w: RecordedWindow) => void;
}

/** A window shown, moved, resized or hidden; `bounds`: its frame, as WindowInfo's (where it was, if hidden). */
export interface RecordedWindow {
  window: number;
  bounds: Rect;
  mapped: boolean;
}

/** An element took (`focused`) or lost the accessibility focus at `time` (server ms, as input's). */
export interface RecordedFocus {
  time: number;
  focused: boolean;
  /** The element's identity: its app's bus name and object path. */
  app: string;
  path: string;
  /** Read just after the change ('' when the app did not answer). */
  role: string;
  name: string;
  bounds: Rect;
  editable: boolean;
  /** A password field. */
  secret: boolean;
}

export interface InputRecorder {
  /** The frame taken at the start. */
  readonly firstFrame: RecorderFrame;
  /** No frames, no events until resume() (which takes a fresh frame at once). */
  pause(): void;
  resume(): void;
  /**
   * Marks the X server's instant of the call, paused or not: `onMark` follows once every event before it
   * has been passed on, with the screen then. False when it cannot be placed (the recorder has ended):
   * no `onMark` follows.
   */
  mark(): boolean;
  /** Ends the recorder; no callback runs after it, and it no longer keeps the process alive. */
  stop(): void;
  /**
   * Stops at an instant of the display server: settles (with its server time, ms; 0 when the recorder
   * had ended) once every event the server generated before then has been passed to onInput; none
   * after it is. Call stop() after it.
   */
  drain(): Promise<number>;
}

export class DesktopError extends Error {
  constructor(
    readonly code: DesktopErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DesktopError';
  }
}
