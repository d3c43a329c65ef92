#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS node
// desktop-cli: a command surface over the native addon for agents that can run a shell command. Stateless apart from the small
// read context that lets `click --id` find an element again by its signature (see context.ts).
// The #! line drops NODE_EXTRA_CA_CERTS: Node parses that CA bundle at every start (~75 ms on a
// machine whose environment sets it, twice Node's own start-up) and desktop-cli makes no TLS connection.
import { existsSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import pkg from '../../package.json' with { type: 'json' };
import { desktop } from '../desktop/desktop.ts';
import {
  allElements,
  flatten,
  platformAction,
  platformRolesFor,
  shortRole,
  SHORT_ROLES,
  toCompact,
} from '../desktop/compact.ts';
import { matchSignature, type Candidate } from '../desktop/match.ts';
import {
  DesktopError,
  type Element,
  type MouseButton,
  type Rect,
  type WindowQuery,
} from '../desktop/types.ts';
import { latestContext, loadContext, saveContext, type WindowContext } from './context.ts';
import { CliError, EXIT_CODES, errorReport, fromDesktopCode } from './errors.ts';

type Values = Record<string, string | boolean | undefined>;

const TARGET = {
  app: { type: 'string' },
  window: { type: 'string' },
  'window-id': { type: 'string' },
  pid: { type: 'string' },
} as const;

const COMMANDS: Record<
  string,
  { options: NonNullable<ParseArgsConfig['options']>; help: string; positionals?: boolean }
> = {
  list: {
    options: {
      apps: { type: 'boolean' },
      windows: { type: 'boolean' },
      monitors: { type: 'boolean' },
      pid: { type: 'string' },
      app: { type: 'string' },
      pretty: { type: 'boolean' },
    },
    help: 'desktop-cli list [--apps | --windows | --monitors] [--pid <pid>] [--app <name>] [--pretty]',
  },
  read: {
    options: {
      ...TARGET,
      depth: { type: 'string' },
      roles: { type: 'string' },
      'visible-only': { type: 'boolean' },
      bbox: { type: 'string' },
      compact: { type: 'boolean' },
      pretty: { type: 'boolean' },
    },
    help:
      'desktop-cli read [--app <name>] [--window <title>] [--window-id <id>] [--pid <pid>] [--depth <n>]\n' +
      `    [--roles <${SHORT_ROLES.join(',')}>] [--visible-only[=false]] [--bbox x,y,w,h] [--compact] [--pretty]`,
  },
  click: {
    options: {
      ...TARGET,
      id: { type: 'string' },
      x: { type: 'string' },
      y: { type: 'string' },
      button: { type: 'string' },
      double: { type: 'boolean' },
    },
    help: 'desktop-cli click (--id <id> | --x <x> --y <y>) [--button left|right|middle] [--double] [--app <name>] [--window <title>]',
  },
  type: {
    options: {
      ...TARGET,
      text: { type: 'string' },
      key: { type: 'string' },
      delay: { type: 'string' },
      id: { type: 'string' },
    },
    positionals: true,
    help: 'desktop-cli type [--text <text> | <text>] [--key <combo>] [--delay <ms>] [--id <id>] [--app <name>] [--window <title>]',
  },
  focus: {
    options: { ...TARGET },
    help: 'desktop-cli focus (--app <name> | --window <title> | --window-id <id> | --pid <pid>)',
  },
  scroll: {
    options: {
      ...TARGET,
      direction: { type: 'string' },
      amount: { type: 'string' },
      x: { type: 'string' },
      y: { type: 'string' },
      id: { type: 'string' },
    },
    help: 'desktop-cli scroll [--direction up|down|left|right] [--amount <n>] [--x <x> --y <y> | --id <id>] [--app <name>] [--window <title>]',
  },
  drag: {
    options: {
      ...TARGET,
      'from-x': { type: 'string' },
      'from-y': { type: 'string' },
      'to-x': { type: 'string' },
      'to-y': { type: 'string' },
      'from-id': { type: 'string' },
      'to-id': { type: 'string' },
    },
    help: 'desktop-cli drag (--from-x <x> --from-y <y> | --from-id <id>) (--to-x <x> --to-y <y> | --to-id <id>) [--app <name>] [--window <title>]',
  },
  screenshot: {
    options: {
      ...TARGET,
      output: { type: 'string' },
      format: { type: 'string' },
      quality: { type: 'string' },
      scale: { type: 'string' },
    },
    help: 'desktop-cli screenshot [--window <title>] [--app <name>] [--output <path>|-] [--format png|jpg] [--quality 1-100] [--scale 0.1-1.0]',
  },
  action: {
    options: { ...TARGET, id: { type: 'string' }, name: { type: 'string' } },
    help: 'desktop-cli action --id <id> [--name press|increment|...] [--app <name>] [--window <title>]',
  },
};

const USAGE = `desktop-cli <command> [flags]   (JSON on stdout; errors as JSON on stderr; --version)\n\n${Object.values(
  COMMANDS,
)
  .map((c) => '  ' + c.help)
  .join('\n')}\n`;

function int(v: unknown, flag: string, min = -Infinity, max = Infinity): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new CliError(
      'USAGE',
      `--${flag} must be an integer${min > -Infinity ? ` >= ${min}` : ''}${max < Infinity ? ` <= ${max}` : ''}`,
    );
  return n;
}

function num(v: unknown, flag: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new CliError('USAGE', `--${flag} must be a number from ${min} to ${max}`);
  return n;
}

function targetOf(v: Values): WindowQuery {
  const q: WindowQuery = {};
  if (typeof v.app === 'string') q.app = v.app;
  if (typeof v.window === 'string') q.title = v.window;
  const wid = int(v['window-id'], 'window-id', 1);
  if (wid !== undefined) q.windowId = wid;
  const pid = int(v.pid, 'pid', 1);
  if (pid !== undefined) q.pid = pid;
  return q;
}

const hasTarget = (q: WindowQuery) => Boolean(q.app || q.title || q.windowId || q.pid);

/**
 * Writes to fd 1 or 2 directly: touching process.stdout on a pipe builds a net.Socket, which costs a
 * command ~3 ms of CPU (a tenth of Node's own start-up). A descriptor that is non-blocking and full
 * (EAGAIN) gets the rest through the stream, which queues it.
 */
let queued = false; // some output went through a stream: the process must not exit before it drains
function writeFd(fd: 1 | 2, s: string): void {
  const buf = Buffer.from(s);
  let off = 0;
  try {
    while (off < buf.length) off += writeSync(fd, buf, off);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
    queued = true;
    (fd === 1 ? process.stdout : process.stderr).write(buf.subarray(off));
  }
}

// Where results and errors go: the process's stdout/stderr, or a buffer when `execute` runs a
// command for the MCP server (whose stdout is the MCP channel).
let writeOut = (s: string): void => writeFd(1, s);
let writeErr = (s: string): void => writeFd(2, s);

function out(value: unknown, pretty = false): void {
  writeOut(JSON.stringify(value, null, pretty ? 2 : undefined) + '\n');
}

function centre(b: Rect): [number, number] {
  return [Math.round(b[0] + b[2] / 2), Math.round(b[1] + b[3] / 2)];
}

// ---- commands ----

async function list(v: Values): Promise<void> {
  const pretty = v.pretty === true;
  if (v.apps) {
    let apps = await desktop.listApps();
    const pid = int(v.pid, 'pid', 1);
    if (pid) apps = apps.filter((a) => a.pid === pid);
    if (typeof v.app === 'string')
      apps = apps.filter((a) => a.name.toLowerCase().includes((v.app as string).toLowerCase()));
    out(
      apps.map((a) => ({
        app: a.name,
        pid: a.pid,
        windows: a.windows,
        ...(a.accessible ? {} : { accessible: false }),
      })),
      pretty,
    );
    return;
  }
  if (v.monitors) {
    // name, bounds [x, y, w, h] in screen pixels (the coordinates click/drag take), primary
    const mons = await desktop.listMonitors();
    out(
      mons.map((m) => ({ name: m.name, bounds: m.bounds, ...(m.primary ? { primary: true } : {}) })),
      pretty,
    );
    return;
  }
  const q: WindowQuery = {};
  if (typeof v.app === 'string') q.app = v.app;
  const pid = int(v.pid, 'pid', 1);
  if (pid) q.pid = pid;
  const wins = await desktop.listWindows(q);
  out(
    wins.map((w) => ({
      app: w.app,
      pid: w.pid,
      title: w.title,
      id: w.id,
      bounds: w.bounds,
      focused: w.focused,
    })),
    pretty,
  );
}

function parseBbox(s: unknown): Rect | undefined {
  if (s === undefined) return undefined;
  const parts = String(s).split(',').map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isFinite(n)) || parts[2]! <= 0 || parts[3]! <= 0)
    throw new CliError('USAGE', '--bbox must be x,y,w,h with a positive width and height');
  return parts as Rect;
}

async function read(v: Values): Promise<void> {
  const q = targetOf(v);
  const shortRoles =
    typeof v.roles === 'string'
      ? v.roles
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean)
      : undefined;
  let platformRoles: string[] | undefined;
  try {
    platformRoles = shortRoles ? platformRolesFor(shortRoles) : undefined;
  } catch (e) {
    throw new CliError('USAGE', (e as Error).message);
  }
  const depth = int(v.depth, 'depth', 0);
  const bbox = parseBbox(v.bbox);
  const result = await desktop.read({
    ...q,
    ...(depth !== undefined ? { depth } : {}),
    ...(platformRoles ? { roles: platformRoles } : {}),
    ...(bbox ? { bbox } : {}),
    visibleOnly: v['visible-only'] !== false,
  });
  const tree = toCompact(result.elements, shortRoles);
  const elements = v.compact ? flatten(tree) : tree;
  const [ox, oy] = result.window.bounds;
  const sigs: Record<string, { r: string; t: string; b: Rect }> = {};
  for (const el of allElements(result.elements))
    sigs[el.id] = {
      r: shortRole(el.role, el.editable),
      t: el.name,
      b: [el.bounds[0] - ox, el.bounds[1] - oy, el.bounds[2], el.bounds[3]],
    };
  saveContext({
    windowId: result.window.id,
    title: result.window.title,
    app: result.window.app,
    ts: Date.now(),
    elements: sigs,
  });
  out(
    {
      app: result.window.app,
      pid: result.window.pid,
      window: result.window.title,
      ts: Math.floor(Date.now() / 1000),
      elements,
    },
    v.pretty === true,
  );
}

/** Finds element `id` of the last read again, in a fresh read of the same window. */
async function resolveId(v: Values, id: number): Promise<{ el: Element; window: WindowQuery }> {
  const q = targetOf(v);
  // The window: of the windows matching the query, the one read last; without a query, the last read.
  let ctx: WindowContext | undefined;
  if (hasTarget(q)) {
    const wins = await desktop.listWindows(q);
    if (wins.length === 0)
      throw new CliError('APP_NOT_FOUND', 'no window matches --app/--window/--window-id/--pid');
    ctx = latestContext(wins.map((w) => w.id));
  } else {
    ctx = loadContext(undefined);
  }
  if (!ctx)
    throw new CliError('NO_READ_CONTEXT', `no earlier read of that window to take element ${id} from`);
  const sig = ctx.elements[String(id)];
  if (!sig)
    throw new CliError('ELEMENT_NOT_FOUND', `element ${id} was not in the last read of "${ctx.title}"`, {
      id,
    });
  // Only elements of the remembered role can match: reading just those is much faster on big pages.
  const roles = sig.r !== 'other' ? platformRolesFor([sig.r]) : undefined;
  const windowId = ctx.windowId;
  const title = ctx.title;
  const fresh = await desktop
    .read({ windowId, actions: false, ...(roles ? { roles } : {}) })
    .catch((e: unknown) => {
      if (e instanceof DesktopError && e.code === 'APP_NOT_FOUND')
        throw new CliError('APP_NOT_FOUND', `window "${title}" (${windowId}) is gone`);
      throw e;
    });
  const [ox, oy] = fresh.window.bounds;
  const els = allElements(fresh.elements);
  const cands: Candidate[] = els.map((e) => ({
    i: e.id,
    r: shortRole(e.role, e.editable),
    t: e.name,
    b: [e.bounds[0] - ox, e.bounds[1] - oy, e.bounds[2], e.bounds[3]],
  }));
  const m = matchSignature(sig, id, cands);
  if (!m.ok) {
    if (m.reason === 'gone')
      throw new CliError(
        'ELEMENT_NOT_FOUND',
        `element ${id} (${sig.r} "${sig.t}") is no longer in "${ctx.title}"`,
        {
          id,
        },
      );
    throw new CliError(
      'ELEMENT_AMBIGUOUS',
      `element ${id} (${sig.r} "${sig.t}") now matches elements ${m.candidates.join(', ')}`,
      { id, candidates: m.candidates },
    );
  }
  return { el: els.find((e) => e.id === m.id)!, window: { windowId: fresh.window.id } };
}

function button(v: unknown): MouseButton {
  if (v === undefined) return 'left';
  if (v === 'left' || v === 'right' || v === 'middle') return v;
  throw new CliError('USAGE', '--button must be left, right or middle');
}

async function point(v: Values, xs: string, ys: string, ids: string): Promise<[number, number] | undefined> {
  const id = int(v[ids], ids, 0);
  if (id !== undefined) {
    const { el, window } = await resolveId(v, id);
    await desktop.focus(window);
    return centre(el.bounds);
  }
  const x = int(v[xs], xs);
  const y = int(v[ys], ys);
  if (x === undefined && y === undefined) return undefined;
  if (x === undefined || y === undefined) throw new CliError('USAGE', `--${xs} and --${ys} go together`);
  if (hasTarget(targetOf(v))) await desktop.focus(targetOf(v));
  return [x, y];
}

async function click(v: Values): Promise<void> {
  const p = await point(v, 'x', 'y', 'id');
  if (!p) throw new CliError('USAGE', 'click needs --id or --x and --y');
  await desktop.click(p[0], p[1], { button: button(v.button), count: v.double ? 2 : 1 });
  out({ ok: true, x: p[0], y: p[1] });
}

/** Waits (at most FOCUS_WAIT_MS) until AT-SPI reports the element focused; false if it never did. */
const FOCUS_WAIT_MS = 3000;
async function waitFocused(el: Element, window: WindowQuery): Promise<boolean> {
  const deadline = Date.now() + FOCUS_WAIT_MS;
  while (Date.now() < deadline) {
    const r = await desktop.read({ ...window, bbox: el.bounds, actions: false });
    if (allElements(r.elements).some((e) => e.id === el.id && e.focused)) return true;
    await new Promise((res) => setTimeout(res, 15));
  }
  return false;
}

async function type(v: Values, positionals: string[]): Promise<void> {
  const text =
    typeof v.text === 'string' ? v.text : positionals.length > 0 ? positionals.join(' ') : undefined;
  if (text === undefined && v.key === undefined)
    throw new CliError('USAGE', 'type needs text (--text or an argument) or --key');
  const delayMs = int(v.delay, 'delay', 0, 10_000) ?? 0;
  const id = int(v.id, 'id', 0);
  let focused: boolean | undefined;
  if (id !== undefined) {
    const { el, window } = await resolveId(v, id);
    await desktop.focus(window);
    const [x, y] = centre(el.bounds);
    await desktop.click(x, y);
    focused = await waitFocused(el, window); // keys typed before the field has the focus go elsewhere
    // Some toolkits never report their fields focused: typed anyway, and said so (the caller checks).
    if (!focused)
      process.stderr.write(
        `desktop-cli: element ${id} was not reported focused within ${FOCUS_WAIT_MS / 1000} s after the click; typed anyway (read the field back to check)\n`,
      );
  } else if (hasTarget(targetOf(v))) {
    await desktop.focus(targetOf(v));
  }
  if (text !== undefined) await desktop.type(text, { delayMs });
  if (typeof v.key === 'string') await desktop.key(v.key, { delayMs });
  out(focused === undefined ? { ok: true } : { ok: true, focused });
}

async function focus(v: Values): Promise<void> {
  const q = targetOf(v);
  if (!hasTarget(q)) throw new CliError('USAGE', 'focus needs --app, --window, --window-id or --pid');
  const w = await desktop.focus(q);
  out({ app: w.app, pid: w.pid, title: w.title, id: w.id, bounds: w.bounds, focused: w.focused });
}

async function scroll(v: Values): Promise<void> {
  const dir = (v.direction as string | undefined) ?? 'down';
  const amount = int(v.amount, 'amount', 1, 1000) ?? 3;
  const deltas: Record<string, [number, number]> = {
    up: [0, -1],
    down: [0, 1],
    left: [-1, 0],
    right: [1, 0],
  };
  const d = deltas[dir];
  if (!d) throw new CliError('USAGE', '--direction must be up, down, left or right');
  let p = await point(v, 'x', 'y', 'id');
  if (!p) {
    const q = targetOf(v);
    const wins = hasTarget(q)
      ? [await desktop.focus(q)]
      : (await desktop.listWindows()).filter((w) => w.focused);
    if (!wins[0]) throw new CliError('USAGE', 'scroll needs --x/--y, --id or a window (--app/--window)');
    p = centre(wins[0].bounds);
  }
  await desktop.scroll(p[0], p[1], d[0] * amount, d[1] * amount);
  out({ ok: true, x: p[0], y: p[1] });
}

async function drag(v: Values): Promise<void> {
  const from = await point(v, 'from-x', 'from-y', 'from-id');
  const to = await point(v, 'to-x', 'to-y', 'to-id');
  if (!from || !to)
    throw new CliError(
      'USAGE',
      'drag needs a start (--from-x/--from-y or --from-id) and an end (--to-x/--to-y or --to-id)',
    );
  await desktop.drag(from, to);
  out({ ok: true, from, to });
}

async function screenshot(v: Values): Promise<void> {
  const q = targetOf(v);
  const fmt = (v.format as string | undefined) ?? 'png';
  if (fmt !== 'png' && fmt !== 'jpg' && fmt !== 'jpeg')
    throw new CliError('USAGE', '--format must be png or jpg');
  const format = fmt === 'png' ? 'png' : 'jpeg';
  const quality = int(v.quality, 'quality', 1, 100) ?? 80;
  const scale = num(v.scale, 'scale', 0.1, 1) ?? 0.5;
  const shot = await desktop.capture({ ...q, format, quality, scale });
  const output = (v.output as string | undefined) ?? `/tmp/screenshot.${format === 'png' ? 'png' : 'jpg'}`;
  if (output === '-') {
    writeOut(shot.data.toString('base64') + '\n');
    return;
  }
  writeFileSync(output, shot.data);
  out({
    path: output,
    format: format === 'png' ? 'png' : 'jpg',
    w: shot.width,
    h: shot.height,
    b: shot.source,
    bytes: shot.data.length,
  });
}

async function action(v: Values): Promise<void> {
  const id = int(v.id, 'id', 0);
  if (id === undefined) throw new CliError('USAGE', 'action needs --id');
  const { el: found, window } = await resolveId(v, id);
  const withActions = await desktop.read({ ...window, bbox: found.bounds });
  const el = allElements(withActions.elements).find((e) => e.id === found.id) ?? found;
  const wanted = (v.name as string | undefined) ?? '';
  const platform = wanted ? platformAction(el, wanted) : (el.actions[0] ?? '');
  if (platform === undefined)
    throw new CliError(
      'ACTION_FAILED',
      `element ${id} has no action "${wanted}" (it has: ${el.actions.join(', ') || 'none'})`,
    );
  const done = await desktop.doAction(window, el.id, platform);
  out({ ok: true, id: el.id, action: done });
}

// ---- entry ----

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'serve') {
    // The MCP server is a bundle of its own (the SDK would slow every other command's start-up).
    const here =
      typeof __filename === 'string'
        ? path.dirname(__filename)
        : path.dirname(fileURLToPath(import.meta.url));
    const mcp = existsSync(path.join(here, 'desktop-mcp.cjs'))
      ? path.join(here, 'desktop-mcp.cjs')
      : path.join(here, 'mcp.ts');
    type Mcp = { serve(args: string[], exec: typeof execute): Promise<number> };
    const mod = (await import(pathToFileURL(mcp).href)) as Partial<Mcp> & { default?: Mcp };
    return (mod.serve ? (mod as Mcp) : mod.default!).serve(rest, execute);
  }
  if (name === '--version' || name === '-V') {
    writeOut(`desktop-cli ${pkg.version}\n`);
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    writeOut(USAGE);
    return name ? 0 : 2;
  }
  try {
    const cmd = COMMANDS[name];
    if (!cmd) throw new CliError('USAGE', `unknown command "${name}"`);
    if (rest.includes('--help') || rest.includes('-h')) {
      writeOut(cmd.help + '\n');
      return 0;
    }
    // --visible-only=false (and --no-visible-only) turn the default off; node:util has no negation in Node 20.
    let visibleOff = false;
    const args = rest.filter((a) => {
      if (a === '--visible-only=false' || a === '--no-visible-only') return !(visibleOff = true);
      if (a === '--visible-only=true') return false;
      return true;
    });
    let parsed;
    try {
      parsed = parseArgs({
        args,
        options: cmd.options,
        allowPositionals: cmd.positionals ?? false,
        strict: true,
      });
    } catch (e) {
      throw new CliError('USAGE', (e as Error).message);
    }
    const values = parsed.values as Values;
    if (visibleOff) values['visible-only'] = false;
    switch (name) {
      case 'list':
        await list(values);
        break;
      case 'read':
        await read(values);
        break;
      case 'click':
        await click(values);
        break;
      case 'type':
        await type(values, parsed.positionals);
        break;
      case 'focus':
        await focus(values);
        break;
      case 'scroll':
        await scroll(values);
        break;
      case 'drag':
        await drag(values);
        break;
      case 'screenshot':
        await screenshot(values);
        break;
      case 'action':
        await action(values);
        break;
    }
    return 0;
  } catch (e) {
    const err =
      e instanceof CliError
        ? e
        : e instanceof DesktopError
          ? new CliError(fromDesktopCode(e.code), e.message)
          : new CliError('INTERNAL', (e as Error)?.message ?? String(e));
    writeErr(errorReport(err) + '\n');
    return EXIT_CODES[err.code];
  }
}

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs one desktop-cli command in this process and returns what it would have printed. Calls are
 * serialised (the output sinks are shared). Used by `desktop-cli serve`.
 */
export function execute(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = async (): Promise<{ code: number; stdout: string; stderr: string }> => {
    let stdout = '';
    let stderr = '';
    const [o, e] = [writeOut, writeErr];
    writeOut = (s) => void (stdout += s);
    writeErr = (s) => void (stderr += s);
    try {
      const code = await main(argv);
      return { code, stdout, stderr };
    } finally {
      [writeOut, writeErr] = [o, e];
    }
  };
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}

const LOOK_ONLY = new Set(['list', 'read', 'focus', 'screenshot', '--version', '-V', '--help', '-h', 'help']);

const self = process.argv[1] ?? '';
if (/desktop-cli(\.[cm]?[jt]s)?$|cli[\\/]main\.ts$/.test(self)) {
  const argv = process.argv.slice(2);
  main(argv).then(
    (code) => {
      // Everything is written synchronously by now: a command that only looks (list, read, focus,
      // screenshot) exits at once rather than wait for Node's teardown, which a loaded machine makes
      // slow. One that injected input ends the normal way: ended at once right after typing on
      // remapped keycodes, characters went missing in the app (tests/desktop, "across processes").
      // The MCP server ends when its input closes and its transport writes through the stream.
      if (queued || !LOOK_ONLY.has(argv[0] ?? '')) process.exitCode = code;
      else process.exit(code);
    },
    (e: unknown) => {
      // main answers every expected failure itself; anything else is a bug, reported as such.
      process.stderr.write(
        `desktop-cli: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
