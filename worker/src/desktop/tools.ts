/**
 * The loop's tools and their execution: `desktop_action` (the seed's action surface, plus drag),
 * `desktop_read` (the focused window's compact accessibility tree, bounds in screenshot coordinates),
 * `terminal_exec` (a process, no shell unless asked, with the seed's UI-automation guard), and the
 * document tools `read_document` / `export_document` (worker/src/tools/documents, in the worker's jail,
 * unless the flow says `documents: false`).
 *
 * The schemas are the contract and live here; what the model is told about each tool (descriptions)
 * lives in the prompt folder's config.yaml.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { desktop, toCompact, type CompactElement } from '@runboard/native';
import type * as DocumentCalls from '../tools/documents/call.ts';
import { outsideRefusal } from '../tools/documents/paths.ts';
import { askOutside } from './ask-at-call.ts';
import type { DocumentScope } from '../tools/documents/scope.ts';
import {
  DOCUMENT_DESCRIPTIONS,
  documentJsonSchema,
  documentTools,
  type DocumentToolName,
} from '../tools/documents/tools.ts';
import { loadBundle } from '../runners/load.ts';
import type { OfferedTool } from '../models/types.ts';
import { onImage, toImage, toImageRect, toScreen, type Frame, type Rect } from './geometry.ts';

export const TOOL_NAMES = ['desktop_action', 'desktop_read', 'terminal_exec'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

export const ACTIONS = [
  'screenshot',
  'cursor_position',
  'mouse_move',
  'left_click',
  'right_click',
  'double_click',
  'type',
  'key',
  'open_app',
  'open_url',
  'scroll',
  'drag',
  'wait',
] as const;
export type ActionName = (typeof ACTIONS)[number];

/** JSON Schemas of the tools' arguments (OpenAI function tools, Chat Completions, Anthropic custom tools). */
export const TOOL_SCHEMAS: Record<ToolName, Record<string, unknown>> = {
  desktop_action: {
    type: 'object',
    properties: {
      action: { type: 'string', enum: [...ACTIONS] },
      x: { type: 'number', description: 'screenshot pixel x' },
      y: { type: 'number', description: 'screenshot pixel y' },
      to_x: { type: 'number', description: 'drag end x (screenshot pixels)' },
      to_y: { type: 'number', description: 'drag end y (screenshot pixels)' },
      text: { type: 'string', description: 'text to type' },
      keys: { type: 'string', description: 'key combination, e.g. ctrl+s, enter, alt+f4' },
      app: { type: 'string', description: 'program to open (name on PATH, absolute path or desktop id)' },
      args: { type: 'array', items: { type: 'string' } },
      url: { type: 'string' },
      direction: { type: 'string', enum: ['up', 'down', 'left', 'right'] },
      amount: { type: 'integer', description: 'scroll wheel clicks (default 3)' },
      seconds: { type: 'number', description: 'wait duration (default 0.5, minimum 0.1)' },
    },
    required: ['action'],
    additionalProperties: false,
  },
  desktop_read: {
    type: 'object',
    properties: {
      app: { type: 'string', description: 'application name (default: the focused window)' },
      title: { type: 'string', description: 'window title substring (default: the focused window)' },
    },
    additionalProperties: false,
  },
  terminal_exec: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'executable (absolute or on PATH), or a shell line if shell' },
      args: { type: 'array', items: { type: 'string' } },
      shell: { type: 'boolean', description: 'run command with /bin/sh -c' },
      timeout_seconds: { type: 'number' },
      cwd: { type: 'string' },
    },
    required: ['command'],
    additionalProperties: false,
  },
};

/** A tool call the loop cannot execute as given: the run stops and asks instead of guessing. */
export class InvalidToolCall extends Error {}
/** A desktop action that failed: zero retries (seed), the run stops and asks. */
export class ActionFailed extends Error {}
/** A document tool refused a path outside the run's scope: the run stops and asks the person. */
export class PermissionNeeded extends Error {}

export interface ToolContext {
  frame: () => Frame;
  env: NodeJS.ProcessEnv;
  workspace: string;
  signal: AbortSignal;
  /** What the document tools may reach; null: the flow turned them off. */
  documents: DocumentScope | null;
  /** The token of the run's vision route (analyze_media asks the vision model with it). */
  visionToken?: string | undefined;
}

export interface ToolResult {
  /** What the model gets (JSON). */
  output: Record<string, unknown>;
  /** Whether a fresh screenshot should follow (the desktop may have changed). */
  changedScreen: boolean;
  /** Screen pixels acted on (for the step event). */
  screen?: Record<string, unknown>;
}

type Args = Record<string, unknown>;

const num = (a: Args, k: string): number => {
  const v = a[k];
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new InvalidToolCall(`"${k}" must be a number`);
  return v;
};
const str = (a: Args, k: string): string => {
  const v = a[k];
  if (typeof v !== 'string' || v.length === 0) throw new InvalidToolCall(`"${k}" must be a non-empty string`);
  return v;
};
const strList = (a: Args, k: string): string[] => {
  const v = a[k];
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((s) => typeof s !== 'string'))
    throw new InvalidToolCall(`"${k}" must be a list of strings`);
  return v as string[];
};

function point(ctx: ToolContext, a: Args, kx = 'x', ky = 'y'): [number, number] {
  const x = num(a, kx);
  const y = num(a, ky);
  const f = ctx.frame();
  if (!onImage(f, x, y))
    throw new InvalidToolCall(`(${x}, ${y}) is outside the ${f.width}x${f.height} screenshot`);
  return toScreen(f, x, y);
}

async function act<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof InvalidToolCall) throw err;
    throw new ActionFailed(`${what}: ${(err as Error).message}`);
  }
}

export function resolveExecutable(cmd: string, env: NodeJS.ProcessEnv): string | null {
  const ok = (p: string): boolean => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (cmd.includes('/')) return ok(cmd) ? path.resolve(cmd) : null;
  for (const dir of (env.PATH ?? '').split(':'))
    if (dir && ok(path.join(dir, cmd))) return path.join(dir, cmd);
  return null;
}

function launchDetached(file: string, args: string[], env: NodeJS.ProcessEnv): void {
  const child = spawn(file, args, { env, stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  child.unref();
}

export async function desktopAction(ctx: ToolContext, a: Args): Promise<ToolResult> {
  const action = a.action;
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action))
    throw new InvalidToolCall(`unknown desktop action ${JSON.stringify(action)}`);
  switch (action as ActionName) {
    case 'screenshot':
      return { output: { ok: true }, changedScreen: true };
    case 'cursor_position': {
      // The real pointer (the person may have moved it), in the screenshot's pixels. A pointer off the
      // captured region (another monitor) is reported at the nearest edge, with onScreenshot: false.
      const f = ctx.frame();
      const p = await act('cursor position', () => desktop.pointer());
      const [sx, sy, sw, sh] = f.source;
      const inside = p.onScreen && p.x >= sx && p.y >= sy && p.x < sx + sw && p.y < sy + sh;
      const [x, y] = toImage(f, p.x, p.y);
      return {
        output: { ok: true, x, y, onScreenshot: inside },
        changedScreen: false,
        screen: { x: p.x, y: p.y },
      };
    }
    case 'mouse_move': {
      const [sx, sy] = point(ctx, a);
      await act('mouse move', () => desktop.move(sx, sy));
      return { output: { ok: true }, changedScreen: true, screen: { x: sx, y: sy } };
    }
    case 'left_click':
    case 'right_click':
    case 'double_click': {
      const [sx, sy] = point(ctx, a);
      const button = action === 'right_click' ? 'right' : 'left';
      const count = action === 'double_click' ? 2 : 1;
      await act(action, () => desktop.click(sx, sy, { button, count }));
      return { output: { ok: true }, changedScreen: true, screen: { x: sx, y: sy } };
    }
    case 'type': {
      const text = a.text;
      if (typeof text !== 'string') throw new InvalidToolCall('"text" must be a string');
      // the next screenshot shows the text: the app has handled the keys (decision 119)
      await act('type', () => desktop.type(text, { waitHandled: true }));
      return { output: { ok: true, typed: [...text].length }, changedScreen: true };
    }
    case 'key': {
      const keys = str(a, 'keys');
      await act(`key ${keys}`, () => desktop.key(keys, { waitHandled: true }));
      return { output: { ok: true }, changedScreen: true };
    }
    case 'open_app': {
      const app = str(a, 'app');
      const args = strList(a, 'args');
      const file = resolveExecutable(app, ctx.env);
      if (file) launchDetached(file, args, ctx.env);
      else {
        const gtk = resolveExecutable('gtk-launch', ctx.env);
        if (!gtk) throw new ActionFailed(`open app: "${app}" is not on PATH and there is no gtk-launch`);
        launchDetached(gtk, [app, ...args], ctx.env);
      }
      return { output: { ok: true, started: file ?? app }, changedScreen: true };
    }
    case 'open_url': {
      const url = str(a, 'url');
      if (!/^[a-z][a-z0-9+.-]*:/i.test(url)) throw new InvalidToolCall(`"${url}" is not a URL`);
      const opener = resolveExecutable('xdg-open', ctx.env);
      if (!opener) throw new ActionFailed('open URL: xdg-open is not installed');
      launchDetached(opener, [url], ctx.env);
      return { output: { ok: true }, changedScreen: true };
    }
    case 'scroll': {
      const [sx, sy] = point(ctx, a);
      const dir = a.direction ?? 'down';
      const n = a.amount === undefined ? 3 : Math.round(num(a, 'amount'));
      const d: Record<string, [number, number]> = { up: [0, -n], down: [0, n], left: [-n, 0], right: [n, 0] };
      const delta = d[String(dir)];
      if (!delta) throw new InvalidToolCall(`"direction" must be up, down, left or right`);
      await act('scroll', () => desktop.scroll(sx, sy, delta[0], delta[1]));
      return { output: { ok: true }, changedScreen: true, screen: { x: sx, y: sy } };
    }
    case 'drag': {
      const from = point(ctx, a);
      const to = point(ctx, a, 'to_x', 'to_y');
      await act('drag', () => desktop.drag(from, to));
      return { output: { ok: true }, changedScreen: true, screen: { from, to } };
    }
    case 'wait': {
      const s = a.seconds === undefined ? 0.5 : Math.min(60, Math.max(0.1, num(a, 'seconds')));
      await sleep(s * 1000, ctx.signal);
      return { output: { ok: true, waited: s }, changedScreen: true };
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
}

type Compact = CompactElement & { c?: Compact[] };
function mapBounds(els: Compact[], f: Frame, k: number): Compact[] {
  return els.map((e) => ({
    ...e,
    b: toImageRect(f, e.b.map((v) => v * k) as Rect),
    ...(e.c ? { c: mapBounds(e.c, f, k) } : {}),
  }));
}

/**
 * The toolkit scale when the addon could not tell it. The addon reads GDK_SCALE from the app's
 * /proc/<pid>/environ, which a worker in its own PID namespace cannot see (the app's pid is not in its
 * /proc), so a scaled GTK app reads as scale 1 with logical-pixel bounds. The window's X geometry is
 * physical, though: the integer factor that makes the top element fill the window is the scale.
 */
export function inferScale(window: Rect, top: Rect | undefined): number {
  if (!top || top[2] <= 0 || top[3] <= 0) return 1;
  for (let k = 1; k <= 4; k++) {
    const [x, y, w, h] = top.map((v) => v * k) as Rect;
    const inside =
      x >= window[0] - 2 &&
      y >= window[1] - 2 &&
      x + w <= window[0] + window[2] + 2 &&
      y + h <= window[1] + window[3] + 2;
    if (inside && w >= 0.75 * window[2] && h >= 0.6 * window[3]) return k;
  }
  return 1;
}

const MAX_TREE_CHARS = 48_000;

export async function desktopRead(ctx: ToolContext, a: Args): Promise<ToolResult> {
  const app = typeof a.app === 'string' && a.app ? a.app : undefined;
  const title = typeof a.title === 'string' && a.title ? a.title : undefined;
  let query: { app?: string; title?: string; windowId?: number };
  if (app || title) query = { ...(app ? { app } : {}), ...(title ? { title } : {}) };
  else {
    const wins = await desktop.listWindows().catch(() => []);
    const focused = wins.find((w) => w.focused) ?? wins.at(-1);
    if (!focused) return { output: { ok: false, error: 'no window is open' }, changedScreen: false };
    query = { windowId: focused.id };
  }
  try {
    const r = await desktop.read(query);
    const f = ctx.frame();
    const k = r.scale === 1 ? inferScale(r.window.bounds, r.elements[0]?.bounds) : 1;
    let elements: unknown = mapBounds(toCompact(r.elements), f, k);
    let text = JSON.stringify(elements);
    let truncated = false;
    if (text.length > MAX_TREE_CHARS) {
      truncated = true;
      elements = text.slice(0, MAX_TREE_CHARS);
      text = '';
    }
    return {
      output: {
        ok: true,
        window: { title: r.window.title, app: r.window.app, b: toImageRect(f, r.window.bounds) },
        coordinates: 'screenshot pixels',
        ...(k !== 1 ? { toolkitScale: k } : {}),
        elements,
        ...(truncated ? { truncated: true } : {}),
      },
      changedScreen: false,
    };
  } catch (err) {
    const e = err as Error & { code?: string };
    return { output: { ok: false, error: e.message, code: e.code ?? null }, changedScreen: false };
  }
}

/**
 * The seed's guard: terminal commands that would find, click or type on screen elements are refused
 * and the model is sent to `desktop_action` (every desktop action must be a model-issued desktop tool
 * call, visible in the run's steps).
 */
const UI_AUTOMATION =
  /(^|[\s/;|&(`'"])(xdotool|ydotool|xte|wmctrl|xautomation|desktop-cli|osascript|cliclick|scrot|gnome-screenshot|import|xwd|atspi|accerciser|dogtail|pyautogui|pynput|sikuli|autokey)([\s;|&)`'".]|$)/i;

export function uiAutomationGuard(commandLine: string): string | null {
  const m = UI_AUTOMATION.exec(commandLine);
  return m ? m[2]!.toLowerCase() : null;
}

const MAX_OUT = 16_000;

export async function terminalExec(ctx: ToolContext, a: Args): Promise<ToolResult> {
  const command = str(a, 'command');
  const args = strList(a, 'args');
  const shell = a.shell === true;
  const timeoutS =
    a.timeout_seconds === undefined ? 30 : Math.min(600, Math.max(0.1, num(a, 'timeout_seconds')));
  const cwd = typeof a.cwd === 'string' && a.cwd ? path.resolve(ctx.workspace, a.cwd) : ctx.workspace;
  const line = [command, ...args].join(' ');
  const blocked = uiAutomationGuard(line);
  if (blocked)
    return {
      output: {
        ok: false,
        refused: true,
        error: `terminal_exec refuses UI automation ("${blocked}"): use desktop_action for anything on screen`,
      },
      changedScreen: false,
    };
  let file: string;
  let argv: string[];
  if (shell) {
    file = '/bin/sh';
    argv = ['-c', command, ...(args.length ? ['sh', ...args] : [])];
  } else {
    const resolved = resolveExecutable(command, ctx.env);
    if (!resolved)
      return {
        output: { ok: false, error: `${command}: not found (absolute path or PATH)` },
        changedScreen: false,
      };
    file = resolved;
    argv = args;
  }
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = spawn(file, argv, { cwd, env: ctx.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const cap = (s: string, d: Buffer): string => (s.length < MAX_OUT ? s + d.toString('utf8') : s);
    child.stdout.on('data', (d: Buffer) => (stdout = cap(stdout, d)));
    child.stderr.on('data', (d: Buffer) => (stderr = cap(stderr, d)));
    const killGroup = (): void => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    };
    const timer = setTimeout(() => ((timedOut = true), killGroup()), timeoutS * 1000);
    const onAbort = (): void => killGroup();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    const done = (exit_code: number | null, signal: string | null, error?: string): void => {
      clearTimeout(timer);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve({
        output: {
          ok: !error && exit_code === 0,
          exit_code,
          ...(signal ? { signal } : {}),
          stdout: stdout.slice(0, MAX_OUT),
          stderr: stderr.slice(0, MAX_OUT),
          ...(timedOut ? { timed_out: true } : {}),
          ...(error ? { error } : {}),
          duration_ms: Math.round(performance.now() - t0),
        },
        changedScreen: false,
      });
    };
    child.on('error', (err) => done(null, null, err.message));
    child.on('close', (code, sig) => done(code, sig));
  });
}

/**
 * The tools a run offers the model: the desktop tools (descriptions from the prompt folder) and the
 * document tools its scope allows (the prompt folder's description where it gives one, else the tool's own).
 */
export function offeredTools(
  descriptions: Record<ToolName, string> & Partial<Record<DocumentToolName, string>>,
  documents: DocumentScope | null,
): OfferedTool[] {
  return [
    ...TOOL_NAMES.map((name) => ({ name, description: descriptions[name], schema: TOOL_SCHEMAS[name] })),
    ...documentOffers(documents, descriptions),
  ];
}

/** The document tools a scope allows, as offered to a model (replay's model steps offer these too). */
export function documentOffers(
  documents: DocumentScope | null,
  descriptions: Partial<Record<DocumentToolName, string>> = {},
): OfferedTool[] {
  return (documents ? documentTools(documents) : []).map((name) => ({
    name,
    description: descriptions[name] ?? DOCUMENT_DESCRIPTIONS[name],
    schema: documentJsonSchema(name),
  }));
}

/**
 * A document tool's call: its text for the model, or the error saying what was wrong (the model may
 * correct it). A path outside the scope is not the model's to correct: the run stops and asks.
 */
async function documentTool(
  ctx: ToolContext,
  name: DocumentToolName,
  args: Args,
  asked = false,
): Promise<ToolResult> {
  try {
    // The format libraries are a bundle of their own, loaded at the first call (not at every run's start).
    const calls = loadBundle<typeof DocumentCalls>('documents-tools.cjs');
    const text = await calls.callDocumentTool(ctx.documents!, name, args, ctx.visionToken);
    return { output: { ok: true, text }, changedScreen: false };
  } catch (err) {
    // by name: the bundle's DocumentError is another class than this bundle's would be
    if ((err as Error).name !== 'DocumentError') throw new ActionFailed(`${name}: ${(err as Error).message}`);
    const outside = outsideRefusal((err as Error).message);
    // asked before the act on the run's ask socket (ask-at-call.ts); without one, the run stops and asks
    const answer = outside && !asked ? await askOutside(ctx, name, args, (err as Error).message) : null;
    if (answer === 'again') return documentTool(ctx, name, args, true);
    if (answer) return { output: { ok: false, error: answer }, changedScreen: false };
    if (outside) throw new PermissionNeeded(`${name}: ${outside}`);
    return { output: { ok: false, error: (err as Error).message }, changedScreen: false };
  }
}

export async function runTool(ctx: ToolContext, name: string, args: unknown): Promise<ToolResult> {
  const doc = ctx.documents && documentTools(ctx.documents).find((t) => t === name);
  if (!doc && !(TOOL_NAMES as readonly string[]).includes(name))
    throw new InvalidToolCall(`unknown tool "${name}"`);
  if (!args || typeof args !== 'object' || Array.isArray(args))
    throw new InvalidToolCall(`the arguments of ${name} are not a JSON object`);
  const a = args as Args;
  if (doc) return documentTool(ctx, doc, a);
  if (name === 'desktop_action') return desktopAction(ctx, a);
  if (name === 'desktop_read') return desktopRead(ctx, a);
  return terminalExec(ctx, a);
}
