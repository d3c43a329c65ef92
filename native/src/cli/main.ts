#!/usr/bin/env -S -u NODE_EXTRA_CA_CERTS node
// desktop-cli: a command surface over the native addon for agents that can run a shell command. Stateless apart from the small
// read context that lets `click --id` find an element again by its signature (see context.ts).
// The #! line drops NODE_EXTRA_CA_CERTS: Node parses that CA bundle at every start (~75 ms on a
// machine whose environment sets it, twice Node's own start-up) and desktop-cli makes no TLS connection.
// The commands and flags are those of the public desktop-cli (mj1618/desktop-cli, spec.ts); seed 003's
// compact JSON stays the default output (--format yaml|agent for the public tool's).
import type * as ChildProcesses from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
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
  type CompactElement,
} from '../desktop/compact.ts';
import { matchSignature, type Candidate } from '../desktop/match.ts';
import {
  DesktopError,
  type Element,
  type MouseButton,
  type ReadResult,
  type Rect,
  type WindowInfo,
  type WindowQuery,
} from '../desktop/types.ts';
import {
  latestContext,
  loadContext,
  loadSnapshot,
  saveContext,
  saveSnapshot,
  type WindowContext,
} from './context.ts';
import { CliError, EXIT_CODES, errorReport, fromDesktopCode } from './errors.ts';
import {
  agentDiff,
  agentFormat,
  allCompact,
  changes,
  diff,
  filterTree,
  flatWithPaths,
  info,
  prune,
  refs,
  resolveRef,
  scope,
  textCandidates,
  textMatches,
  type ElementInfo,
  type FlatElement,
} from './format.ts';
import { drawLabels } from './draw.ts';
import { COMMANDS, optionsOf, SERVE_HELP } from './spec.ts';

type Values = Record<string, string | boolean | string[] | undefined>;

/** What a command produced: the value to print, and its agent-format rendering when it has one. */
interface Out {
  value: unknown;
  /** Made only when --format agent asks for it (a 6,000-node page's lines are not free). */
  agent?: string | (() => string);
  /** Printed as is (screenshot --output -). */
  raw?: string;
  /** A result that is also a failure (wait timed out, assert failed): printed, then this error, exit 1. */
  error?: CliError;
}

const USAGE =
  'desktop-cli <command> [flags]   (JSON on stdout, or --format yaml|agent; errors as JSON on stderr; --version)\n\n' +
  Object.values(COMMANDS)
    .map((c) => '  ' + c.help)
    .join('\n') +
  `\n  ${SERVE_HELP}\n`;

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

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

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

/** Short roles from --roles; "interactive" is the public tool's meta-role for anything input-like. */
function rolesOf(v: unknown): string[] | undefined {
  if (typeof v !== 'string') return undefined;
  const out = new Set<string>();
  for (const r of v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    if (r === 'interactive') for (const x of ['input', 'other', 'chk', 'radio', 'list']) out.add(x);
    else if (r === 'toggle') out.add('chk');
    else if (!(SHORT_ROLES as string[]).includes(r))
      throw new CliError('USAGE', `unknown role "${r}" (roles: ${SHORT_ROLES.join(', ')}, interactive)`);
    else out.add(r);
  }
  return out.size > 0 ? [...out] : undefined;
}

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

/** A bundle next to this one (desktop-yaml.cjs, desktop-mcp.cjs), or its source when run from source. */
async function sibling<T>(bundle: string, source: string): Promise<T> {
  const here =
    typeof __filename === 'string' ? path.dirname(__filename) : path.dirname(fileURLToPath(import.meta.url));
  const file = existsSync(path.join(here, bundle)) ? path.join(here, bundle) : path.join(here, source);
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown> & { default?: unknown };
  return (Object.keys(mod).length === 1 && mod.default ? mod.default : mod) as T;
}

type Yaml = { parse(s: string): unknown; stringify(v: unknown): string };
let yamlMod: Yaml | undefined;
async function yaml(): Promise<Yaml> {
  yamlMod ??= await sibling<Yaml>('desktop-yaml.cjs', 'yaml.ts');
  return yamlMod;
}

type Format = 'json' | 'yaml' | 'agent';
function formatOf(v: Values, cmd: string): Format {
  if (cmd === 'screenshot' || cmd === 'screenshot-coords') return 'json';
  const f = v.format ?? 'json';
  if (f === 'json' || f === 'yaml' || f === 'agent') return f;
  throw new CliError(
    'USAGE',
    `--format must be json (the default), yaml or agent${f === 'screenshot' ? ' (read --format screenshot is not supported: use screenshot-coords)' : ''}`,
  );
}

async function render(o: Out, fmt: Format, pretty: boolean): Promise<string> {
  if (o.raw !== undefined) return o.raw;
  if (fmt === 'json') return JSON.stringify(o.value, null, pretty ? 2 : undefined) + '\n';
  if (fmt === 'agent' && o.agent !== undefined) return typeof o.agent === 'string' ? o.agent : o.agent();
  return (await yaml()).stringify(o.value);
}

function centre(b: Rect): [number, number] {
  return [Math.round(b[0] + b[2] / 2), Math.round(b[1] + b[3] / 2)];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---- reading ----

interface Read {
  result: ReadResult;
  tree: CompactElement[];
}

/** Reads a window, leaves its signatures for --id (context.ts) and returns its compact tree. */
async function readWindow(
  q: WindowQuery,
  opts: { depth?: number; roles?: string[]; bbox?: Rect; visibleOnly?: boolean } = {},
): Promise<Read> {
  let platformRoles: string[] | undefined;
  try {
    platformRoles = opts.roles ? platformRolesFor(opts.roles) : undefined;
  } catch (e) {
    throw new CliError('USAGE', (e as Error).message);
  }
  const result = await desktop.read({
    ...q,
    ...(opts.depth !== undefined ? { depth: opts.depth } : {}),
    ...(platformRoles ? { roles: platformRoles } : {}),
    ...(opts.bbox ? { bbox: opts.bbox } : {}),
    visibleOnly: opts.visibleOnly !== false,
  });
  const tree = toCompact(result.elements, opts.roles);
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
  return { result, tree };
}

const head = (w: WindowInfo) => ({ window: w.title, app: w.app, pid: w.pid });

/** The public tool's cap for web pages in the agent format: 200 lines unless --max-elements says. */
function maxFor(v: unknown, flag: string, tree: CompactElement[]): number {
  const n = int(v, flag, 0);
  if (n !== undefined) return n;
  return allCompact(tree).some((e) => e.r === 'web') ? 200 : 0;
}

async function list(v: Values): Promise<Out> {
  if (v.apps) {
    let apps = await desktop.listApps();
    const pid = int(v.pid, 'pid', 1);
    if (pid) apps = apps.filter((a) => a.pid === pid);
    if (typeof v.app === 'string')
      apps = apps.filter((a) => a.name.toLowerCase().includes((v.app as string).toLowerCase()));
    return {
      value: apps.map((a) => ({
        app: a.name,
        pid: a.pid,
        windows: a.windows,
        ...(a.accessible ? {} : { accessible: false }),
      })),
    };
  }
  if (v.monitors) {
    // name, bounds [x, y, w, h] in screen pixels (the coordinates click/drag take), primary
    const mons = await desktop.listMonitors();
    return {
      value: mons.map((m) => ({ name: m.name, bounds: m.bounds, ...(m.primary ? { primary: true } : {}) })),
    };
  }
  const q: WindowQuery = {};
  if (typeof v.app === 'string') q.app = v.app;
  const pid = int(v.pid, 'pid', 1);
  if (pid) q.pid = pid;
  const wins = await desktop.listWindows(q);
  return {
    value: wins.map((w) => ({
      app: w.app,
      pid: w.pid,
      title: w.title,
      id: w.id,
      bounds: w.bounds,
      focused: w.focused,
    })),
  };
}

function parseBbox(s: unknown): Rect | undefined {
  if (s === undefined) return undefined;
  const parts = String(s).split(',').map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isFinite(n)) || parts[2]! <= 0 || parts[3]! <= 0)
    throw new CliError('USAGE', '--bbox must be x,y,w,h with a positive width and height');
  return parts as Rect;
}

async function read(v: Values): Promise<Out> {
  const roles = rolesOf(v.roles);
  const depth = int(v.depth, 'depth', 0);
  const bbox = parseBbox(v.bbox);
  const since = int(v.since, 'since', 0);
  const { result, tree: whole } = await readWindow(targetOf(v), {
    ...(depth !== undefined && depth > 0 ? { depth } : {}),
    ...(roles ? { roles } : {}),
    ...(bbox ? { bbox } : {}),
    visibleOnly: v['visible-only'] !== false,
  });
  const w = result.window;
  const ts = Math.floor(Date.now() / 1000);
  let tree = whole;
  const scopeId = int(v['scope-id'], 'scope-id', 0);
  if (scopeId !== undefined) {
    const sub = scope(tree, scopeId);
    if (!sub)
      throw new CliError('ELEMENT_NOT_FOUND', `element ${scopeId} (--scope-id) is not in "${w.title}"`, {
        id: scopeId,
      });
    tree = sub;
  }
  if (v.prune) tree = prune(tree);
  const text = str(v.text);
  if (text !== undefined && v.children) {
    const hit = allCompact(tree).find((e) => textMatches(e, text, v.exact === true));
    tree = hit?.c ?? [];
  } else if (v.children && scopeId !== undefined) {
    tree = tree.map(({ c: _c, ...rest }) => rest as CompactElement);
  } else if (text !== undefined) {
    tree = filterTree(tree, (e) => textMatches(e, text, v.exact === true));
  }
  if (v.focused) tree = filterTree(tree, (e) => e.f === true);
  const refsById = refs(tree);
  const flat = flatWithPaths(tree, refsById);
  const before = since !== undefined ? loadSnapshot<FlatElement>(w.id, since) : undefined;
  saveSnapshot(w.id, ts, flat);
  const max = maxFor(v['max-elements'], 'max-elements', tree);
  if (since !== undefined) {
    if (!before)
      throw new CliError(
        'USAGE',
        `no read of "${w.title}" at ts ${since} is kept (snapshots last 60 s): read again without --since`,
      );
    const d = diff(before, flat);
    return {
      value: { app: w.app, pid: w.pid, window: w.title, ts, since, diff: d },
      agent: () => agentDiff(head(w), since, d),
    };
  }
  // Seed 003's shapes: the tree, or --compact's flat list; --flat adds refs and path breadcrumbs.
  let elements: unknown;
  if (v.flat || (text !== undefined && !v.children) || v.focused) {
    const hits = text !== undefined ? flat.filter((e) => textMatches(e, text, v.exact === true)) : flat;
    elements = v.focused ? hits.filter((e) => e.f) : v.flat ? hits : hits.map(({ p: _p, ...e }) => e);
  } else elements = v.compact ? flatten(tree) : tree;
  return {
    value: { app: w.app, pid: w.pid, window: w.title, ts, elements },
    agent: () => agentFormat(head(w), tree, max, flat),
  };
}

async function find(v: Values): Promise<Out> {
  const text = str(v.text);
  if (!text) throw new CliError('USAGE', 'find needs --text');
  const roles = rolesOf(v.roles);
  const limit = int(v.limit, 'limit', 1) ?? 10;
  const wins = await desktop.listWindows(typeof v.app === 'string' ? { app: v.app } : {});
  wins.sort((a, b) => Number(b.focused) - Number(a.focused));
  const matches: { app: string; window: string; pid: number; window_id: number; elements: ElementInfo[] }[] =
    [];
  let total = 0;
  for (const w of wins) {
    if (total >= limit) break;
    let tree: CompactElement[];
    try {
      tree = (await readWindow({ windowId: w.id })).tree;
    } catch {
      continue; // a window without an accessibility tree, or gone meanwhile
    }
    const hits = allCompact(tree)
      .filter(
        (e) =>
          e.b[2] > 0 &&
          e.b[3] > 0 &&
          (!roles || roles.includes(e.r)) &&
          textMatches(e, text, v.exact === true),
      )
      .slice(0, limit - total)
      .map(info);
    if (hits.length === 0) continue;
    total += hits.length;
    matches.push({ app: w.app, window: w.title, pid: w.pid, window_id: w.id, elements: hits });
  }
  return { value: { ok: true, action: 'find', text, matches, total } };
}

// ---- targets: --id (the last read's element, found again), --text/--target, --ref ----

interface Located {
  el: Element;
  c: ElementInfo;
  windowId: number;
  /** The window's tree when the element was found in a fresh read (text, ref). */
  tree?: CompactElement[];
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

function compactOf(el: Element): ElementInfo {
  return info(toCompact([{ ...el, children: [] }])[0] ?? { i: el.id, r: 'other', b: el.bounds });
}

/**
 * The element a command acts on: --<idFlag> (the last read's element), --<textFlag> (a fresh read,
 * matched by title/value/description) or --<refFlag> (a fresh read, by stable ref). Undefined when
 * none of those flags is given.
 */
async function locate(
  v: Values,
  flags: { id?: string; text?: string; ref?: string } = {},
): Promise<Located | undefined> {
  const idFlag = flags.id ?? 'id';
  const textFlag = flags.text ?? 'text';
  const refFlag = flags.ref ?? 'ref';
  const id = int(v[idFlag], idFlag, 0);
  if (id !== undefined) {
    const { el, window } = await resolveId(v, id);
    return { el, c: compactOf(el), windowId: window.windowId! };
  }
  const text = str(v[textFlag]);
  const ref = str(v[refFlag]);
  if (text === undefined && ref === undefined) return undefined;
  const { result, tree: whole } = await readWindow(targetOf(v));
  let tree = whole;
  const scopeId = int(v['scope-id'], 'scope-id', 0);
  if (scopeId !== undefined) {
    const sub = scope(whole, scopeId);
    if (!sub) throw new CliError('ELEMENT_NOT_FOUND', `element ${scopeId} (--scope-id) is not in the window`);
    tree = sub;
  }
  const w = result.window;
  let hit: CompactElement | undefined;
  if (ref !== undefined) {
    const r = resolveRef(refs(tree), ref);
    if ('error' in r)
      throw new CliError(
        r.candidates ? 'ELEMENT_AMBIGUOUS' : 'ELEMENT_NOT_FOUND',
        `${r.error} in "${w.title}"`,
        r.candidates ? { candidates: r.candidates } : { ref },
      );
    hit = allCompact(tree).find((e) => e.i === r.id);
  } else {
    const cands = textCandidates(tree, text!, { roles: rolesOf(v.roles), exact: v.exact === true });
    if (cands.length === 0)
      throw new CliError('ELEMENT_NOT_FOUND', `no element in "${w.title}" matches the text "${text}"`, {
        text,
      });
    if (cands.length > 1)
      throw new CliError(
        'ELEMENT_AMBIGUOUS',
        `${cands.length} elements in "${w.title}" match the text "${text}": add --roles or --exact, or use --id`,
        { text, candidates: cands.slice(0, 10).map(info) },
      );
    hit = cands[0];
  }
  const el = allElements(result.elements).find((e) => e.id === hit!.i)!;
  return { el, c: info(hit!), windowId: w.id, tree: whole };
}

async function locateOrThrow(v: Values, what: string, flags?: { id?: string; text?: string; ref?: string }) {
  const found = await locate(v, flags);
  if (!found) throw new CliError('USAGE', `${what} needs --${flags?.text ?? 'text'}, --ref or --id`);
  return found;
}

function button(v: unknown): MouseButton {
  if (v === undefined) return 'left';
  if (v === 'left' || v === 'right' || v === 'middle') return v;
  throw new CliError('USAGE', '--button must be left, right or middle');
}

/** A point from --x/--y (focusing the --app/--window first when given). */
async function xy(v: Values, xs: string, ys: string): Promise<[number, number] | undefined> {
  const x = int(v[xs], xs);
  const y = int(v[ys], ys);
  if (x === undefined && y === undefined) return undefined;
  if (x === undefined || y === undefined) throw new CliError('USAGE', `--${xs} and --${ys} go together`);
  if (hasTarget(targetOf(v))) await desktop.focus(targetOf(v));
  return [x, y];
}

// ---- after an action: --post-read, --verify ----

async function postRead(v: Values, windowId: number | undefined): Promise<{ state?: string }> {
  if (!v['post-read']) return {};
  await sleep(int(v['post-read-delay'], 'post-read-delay', 0, 60_000) ?? 0);
  const q = windowId !== undefined ? { windowId } : targetOf(v);
  const { result, tree } = await readWindow(q);
  return {
    state: agentFormat(
      head(result.window),
      tree,
      maxFor(v['post-read-max-elements'], 'post-read-max-elements', tree),
    ),
  };
}

async function snapshot(windowId: number): Promise<FlatElement[]> {
  return flatWithPaths((await readWindow({ windowId })).tree);
}

/**
 * --verify: runs `attempts` in order until one changes the window's tree (read `verify-delay` ms
 * after it), at most 1 + max-retries of them. Says whether a change was seen and which attempt made it.
 */
async function verified(
  v: Values,
  windowId: number,
  attempts: { method: string; run: () => Promise<void> }[],
): Promise<Record<string, unknown>> {
  if (!v.verify) {
    await attempts[0]!.run();
    return {};
  }
  const delay = int(v['verify-delay'], 'verify-delay', 0, 60_000) ?? 100;
  const retries = int(v['max-retries'], 'max-retries', 0, 10) ?? 2;
  let before = await snapshot(windowId);
  const tries = attempts.slice(0, retries + 1);
  for (let k = 0; k < tries.length; k++) {
    await tries[k]!.run();
    await sleep(delay);
    const after = await snapshot(windowId).catch(() => [] as FlatElement[]); // a window that closed changed
    // The focus moving to the element acted on is not the action's effect: it does not count.
    const d = diff(before, after);
    const changed =
      d.added.length +
        d.removed.length +
        d.changed.filter((c) => Object.keys(c.changes).some((k) => k !== 'f')).length >
      0;
    if (changed)
      return k === 0
        ? { verified: true }
        : {
            verified: true,
            retried: true,
            retry_method: tries[k]!.method,
            retry_reason: `no UI change detected, retried with ${tries[k]!.method}`,
          };
    before = after;
  }
  return {
    verified: false,
    ...(tries.length > 1
      ? {
          retried: true,
          retry_method: tries.at(-1)!.method,
          retry_reason: 'action did not produce expected UI change after retries',
        }
      : {}),
  };
}

// ---- acting ----

async function click(v: Values): Promise<Out> {
  const btn = button(v.button);
  const count = v.double ? 2 : 1;
  const found = await locate(v);
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    const [x, y] = centre(found.el.bounds);
    const press = platformAction(found.el, 'press');
    const ver = await verified(v, found.windowId, [
      { method: 'click', run: () => desktop.click(x, y, { button: btn, count }) },
      ...(press
        ? [
            {
              method: 'action',
              run: async () =>
                void (await desktop.doAction({ windowId: found.windowId }, found.el.id, press)),
            },
          ]
        : []),
      { method: 'offset-click', run: () => desktop.click(x + 2, y + 2, { button: btn, count }) },
    ]);
    return {
      value: {
        ok: true,
        action: 'click',
        x,
        y,
        button: btn,
        count,
        target: found.c,
        ...ver,
        ...(await postRead(v, found.windowId)),
      },
    };
  }
  const p = await xy(v, 'x', 'y');
  if (!p) throw new CliError('USAGE', 'click needs --text, --ref, --id, or --x and --y');
  if (v.verify) throw new CliError('USAGE', '--verify needs an element (--text, --ref or --id), not a point');
  await desktop.click(p[0], p[1], { button: btn, count });
  return {
    value: {
      ok: true,
      action: 'click',
      x: p[0],
      y: p[1],
      button: btn,
      count,
      ...(await postRead(v, undefined)),
    },
  };
}

async function hover(v: Values): Promise<Out> {
  const found = await locate(v);
  let p: [number, number] | undefined;
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    p = centre(found.el.bounds);
  } else p = await xy(v, 'x', 'y');
  if (!p) throw new CliError('USAGE', 'hover needs --text, --ref, --id, or --x and --y');
  await desktop.move(p[0], p[1]);
  return {
    value: {
      ok: true,
      action: 'hover',
      x: p[0],
      y: p[1],
      ...(found ? { target: found.c } : {}),
      ...(await postRead(v, found?.windowId)),
    },
  };
}

/** Waits (at most FOCUS_WAIT_MS) until AT-SPI reports the element focused; false if it never did. */
const FOCUS_WAIT_MS = 3000;
async function waitFocused(el: Element, window: WindowQuery): Promise<boolean> {
  const deadline = Date.now() + FOCUS_WAIT_MS;
  while (Date.now() < deadline) {
    const r = await desktop.read({ ...window, bbox: el.bounds, actions: false });
    if (allElements(r.elements).some((e) => e.id === el.id && e.focused)) return true;
    await sleep(15);
  }
  return false;
}

/** Clicks an element and waits until it has the focus (keys typed before go elsewhere). */
async function focusElement(found: Located, label: string): Promise<boolean> {
  await desktop.focus({ windowId: found.windowId });
  const [x, y] = centre(found.el.bounds);
  await desktop.click(x, y);
  const focused = await waitFocused(found.el, { windowId: found.windowId });
  // Some toolkits never report their fields focused: typed anyway, and said so (the caller checks).
  if (!focused)
    writeErr(
      `desktop-cli: ${label} was not reported focused within ${FOCUS_WAIT_MS / 1000} s after the click; typed anyway (read the field back to check)\n`,
    );
  return focused;
}

const NAVIGATION =
  /^(shift\+)?(tab|enter|return|escape|esc|up|down|left|right|arrow(up|down|left|right)|home|end|page_?up|page_?down)$/i;

/** The focused element of the active window (or of windowId), for the public tool's `focused` field. */
async function focusedElement(windowId?: number): Promise<ElementInfo | undefined> {
  try {
    const r = await desktop.read(windowId !== undefined ? { windowId, actions: false } : { actions: false });
    const el = allElements(r.elements).find((e) => e.focused);
    return el ? compactOf(el) : undefined;
  } catch {
    return undefined;
  }
}

async function type(v: Values, positionals: string[]): Promise<Out> {
  const text =
    typeof v.text === 'string' ? v.text : positionals.length > 0 ? positionals.join(' ') : undefined;
  const key = str(v.key);
  if (text === undefined && key === undefined)
    throw new CliError('USAGE', 'type needs text (--text or an argument) or --key');
  const delayMs = int(v.delay, 'delay', 0, 10_000) ?? 0;
  const found = await locate(v, { text: 'target' });
  let focused: boolean | undefined;
  if (found) focused = await focusElement(found, `element ${found.el.id}`);
  else if (hasTarget(targetOf(v))) await desktop.focus(targetOf(v));
  const typeIt = async () => {
    if (text !== undefined) await desktop.type(text, { delayMs });
    if (key !== undefined) await desktop.key(key, { delayMs });
  };
  const ver = found
    ? await verified(v, found.windowId, [
        { method: 'type', run: typeIt },
        ...(text !== undefined && !found.el.secret
          ? [
              {
                method: 'set-value',
                run: async () =>
                  void (await desktop.setValue({ windowId: found.windowId }, found.el.id, text)),
              },
            ]
          : []),
      ])
    : (await typeIt(), {});
  const action = text !== undefined && key !== undefined ? 'type+key' : text !== undefined ? 'type' : 'key';
  const value: Record<string, unknown> = { ok: true, action };
  if (text !== undefined && !found?.el.secret) value.text = text;
  if (key !== undefined) value.key = key;
  if (found) {
    value.focused = focused; // seed 003: whether the field had the focus before typing
    value.target = found.c;
  } else if (key !== undefined && NAVIGATION.test(key)) {
    const f = await focusedElement();
    if (f) value.focused = f;
  }
  return { value: { ...value, ...ver, ...(await postRead(v, found?.windowId)) } };
}

async function focus(v: Values): Promise<Out> {
  const q = targetOf(v);
  if (!hasTarget(q)) throw new CliError('USAGE', 'focus needs --app, --window, --window-id or --pid');
  const w = await desktop.focus(q);
  if (v['new-document']) {
    await desktop.key('Escape');
    await desktop.key('ctrl+n'); // cmd+n on macOS
  }
  return {
    value: {
      ok: true,
      action: 'focus',
      app: w.app,
      pid: w.pid,
      title: w.title,
      window: w.title,
      id: w.id,
      bounds: w.bounds,
      focused: w.focused,
      ...(v['new-document'] ? { new_document: true } : {}),
    },
  };
}

async function scroll(v: Values): Promise<Out> {
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
  const found = await locate(v);
  let p: [number, number] | undefined;
  if (found) {
    await desktop.focus({ windowId: found.windowId });
    p = centre(found.el.bounds);
  } else p = await xy(v, 'x', 'y');
  if (!p) {
    const q = targetOf(v);
    const wins = hasTarget(q)
      ? [await desktop.focus(q)]
      : (await desktop.listWindows()).filter((w) => w.focused);
    if (!wins[0])
      throw new CliError('USAGE', 'scroll needs --x/--y, --id, --text or a window (--app/--window)');
    p = centre(wins[0].bounds);
  }
  await desktop.scroll(p[0], p[1], d[0] * amount, d[1] * amount);
  return { value: { ok: true, action: 'scroll', direction: dir, amount, x: p[0], y: p[1] } };
}

async function drag(v: Values): Promise<Out> {
  const end = async (side: 'from' | 'to'): Promise<[number, number] | undefined> => {
    const found = await locate(v, { id: `${side}-id`, text: `${side}-text`, ref: `${side}-ref` });
    if (found) {
      await desktop.focus({ windowId: found.windowId });
      return centre(found.el.bounds);
    }
    return xy(v, `${side}-x`, `${side}-y`);
  };
  const from = await end('from');
  const to = await end('to');
  if (!from || !to)
    throw new CliError(
      'USAGE',
      'drag needs a start (--from-x/--from-y, --from-id, --from-text or --from-ref) and an end (--to-x/--to-y, --to-id, --to-text or --to-ref)',
    );
  await desktop.drag(from, to);
  return {
    value: { ok: true, action: 'drag', from_x: from[0], from_y: from[1], to_x: to[0], to_y: to[1], from, to },
  };
}

async function action(v: Values): Promise<Out> {
  const found = await locateOrThrow(v, 'action');
  const withActions = await desktop.read({ windowId: found.windowId, bbox: found.el.bounds });
  const el = allElements(withActions.elements).find((e) => e.id === found.el.id) ?? found.el;
  const wanted = str(v.action) ?? str(v.name) ?? '';
  const platform = wanted ? platformAction(el, wanted) : (el.actions[0] ?? '');
  if (platform === undefined || platform === '')
    throw new CliError(
      'ACTION_FAILED',
      `element ${el.id} has no action "${wanted || 'press'}" (it has: ${el.actions.join(', ') || 'none'})`,
      { id: el.id },
    );
  let done = '';
  const ver = await verified(v, found.windowId, [
    {
      method: 'action',
      run: async () => void (done = await desktop.doAction({ windowId: found.windowId }, el.id, platform)),
    },
  ]);
  return {
    value: {
      ok: true,
      action: 'action',
      id: el.id,
      name: wanted || 'press',
      performed: done,
      target: found.c,
      ...ver,
      ...(await postRead(v, found.windowId)),
    },
  };
}

/** Sets a field's text by keys: click it, select all, type (or delete when empty). */
async function typeInto(found: Located, value: string): Promise<void> {
  await focusElement(found, `element ${found.el.id}`);
  await desktop.key('ctrl+a');
  if (value === '') await desktop.key('BackSpace');
  else await desktop.type(value);
}

async function setValueOf(found: Located, value: string): Promise<string> {
  const r = found.c.r;
  if (r === 'chk' || r === 'radio') {
    const want = /^(1|true|yes|on|checked)$/i.test(value);
    const have = found.el.checked || found.el.value === '1';
    if (want !== have) {
      const press = platformAction(found.el, 'press');
      if (press) await desktop.doAction({ windowId: found.windowId }, found.el.id, press);
      else await desktop.click(...centre(found.el.bounds));
    }
    return 'checked';
  }
  try {
    return await desktop.setValue({ windowId: found.windowId }, found.el.id, value);
  } catch (e) {
    // An entry that refuses SetTextContents (some toolkits): the keys do what a person would.
    if (r === 'input' && e instanceof DesktopError && e.code === 'ACTION_FAILED') {
      await typeInto(found, value);
      return 'keys';
    }
    throw e;
  }
}

async function setValue(v: Values): Promise<Out> {
  const value = str(v.value);
  if (value === undefined) throw new CliError('USAGE', 'set-value needs --value');
  const attribute = str(v.attribute) ?? 'value';
  if (!['value', 'focused', 'selected'].includes(attribute))
    throw new CliError('USAGE', '--attribute must be value, focused or selected');
  const found = await locateOrThrow(v, 'set-value');
  let how = '';
  const ver = await verified(v, found.windowId, [
    {
      method: 'set-value',
      run: async () => {
        if (attribute === 'value') how = await setValueOf(found, value);
        else if (/^(1|true|yes)$/i.test(value)) {
          await desktop.focus({ windowId: found.windowId });
          await desktop.click(...centre(found.el.bounds));
          how = 'click';
        } else how = 'none';
      },
    },
    ...(attribute === 'value' && found.c.r === 'input'
      ? [{ method: 'type', run: () => typeInto(found, value) }]
      : []),
  ]);
  return {
    value: {
      ok: true,
      action: 'set-value',
      id: found.el.id,
      ...(found.el.secret ? { secret: true } : { value }),
      attribute,
      set: how,
      ...ver,
      ...(await postRead(v, found.windowId)),
    },
  };
}

async function fill(v: Values): Promise<Out> {
  type Field = { label?: string; id?: number; value: string; method?: string };
  const fields: Field[] = [];
  let submit = str(v.submit);
  const flags = (v.field as string[] | undefined) ?? [];
  for (const f of flags) {
    const eq = f.indexOf('=');
    if (eq <= 0) throw new CliError('USAGE', `--field "${f}" must be "Label=value" or "id:42=value"`);
    const key = f.slice(0, eq);
    const value = f.slice(eq + 1);
    const m = /^id:(\d+)$/.exec(key);
    fields.push(m ? { id: Number(m[1]), value } : { label: key, value });
  }
  const input = fields.length === 0 ? readStdin() : undefined;
  if (input !== undefined) {
    const doc = (await yaml()).parse(input) as
      { fields?: Record<string, unknown>[]; submit?: string } | undefined;
    for (const f of doc?.fields ?? []) {
      if (f.value === undefined || (f.label === undefined && f.id === undefined))
        throw new CliError('USAGE', 'each field on stdin needs a label or an id, and a value');
      fields.push({
        ...(f.label !== undefined ? { label: String(f.label) } : {}),
        ...(f.id !== undefined ? { id: Number(f.id) } : {}),
        value: String(f.value),
        ...(f.method !== undefined ? { method: String(f.method) } : {}),
      });
    }
    submit ??= doc?.submit;
  }
  if (fields.length === 0)
    throw new CliError(
      'USAGE',
      'fill needs --field "Label=value" (repeatable) or the fields as YAML on stdin',
    );
  const method = str(v.method) ?? 'set-value';
  if (method !== 'set-value' && method !== 'type')
    throw new CliError('USAGE', '--method must be set-value or type');
  // One read for every field.
  const { result, tree } = await readWindow(targetOf(v));
  const windowId = result.window.id;
  const els = allElements(result.elements);
  const results: Record<string, unknown>[] = [];
  let set = 0;
  for (const [k, f] of fields.entries()) {
    const name = f.label !== undefined ? { label: f.label } : { id: f.id };
    try {
      let hit: CompactElement | undefined;
      if (f.id !== undefined) hit = allCompact(tree).find((e) => e.i === f.id);
      else {
        const cands = textCandidates(tree, f.label!, {});
        const inputs = cands.filter((c) => c.r === 'input');
        hit = (inputs.length > 0 ? inputs : cands)[0];
      }
      if (!hit) throw new CliError('ELEMENT_NOT_FOUND', `no field matches ${f.label ?? `id ${f.id}`}`);
      const found: Located = { el: els.find((e) => e.id === hit.i)!, c: info(hit), windowId };
      if (v['tab-between'] && k > 0) {
        await desktop.key('Tab');
        await desktop.key('ctrl+a');
        await desktop.type(f.value);
      } else if ((f.method ?? method) === 'type') await typeInto(found, f.value);
      else await setValueOf(found, f.value);
      set++;
      results.push({
        ...name,
        ok: true,
        target: found.el.secret ? { ...found.c, secret: true } : { ...found.c, v: f.value },
      });
    } catch (e) {
      results.push({ ...name, ok: false, error: (e as Error).message });
    }
  }
  let submitted: ElementInfo | undefined;
  if (submit !== undefined) {
    const found = await locate({ ...v, text: submit, roles: 'btn' });
    if (found) {
      await desktop.focus({ windowId: found.windowId });
      await desktop.click(...centre(found.el.bounds));
      submitted = found.c;
    }
  }
  const ok = set === fields.length;
  const value = {
    ok,
    action: 'fill',
    fields_set: set,
    results,
    ...(submitted ? { submitted } : {}),
    ...(await postRead(v, windowId)),
  };
  return ok
    ? { value }
    : {
        value,
        error: new CliError(
          'ACTION_FAILED',
          `${fields.length - set} of ${fields.length} fields were not set`,
        ),
      };
}

// ---- conditions: wait, assert ----

async function wait(v: Values): Promise<Out> {
  const forText = str(v['for-text']);
  const forRoles = rolesOf(v['for-role']);
  const forId = int(v['for-id'], 'for-id', 0);
  if (forText === undefined && !forRoles && forId === undefined)
    throw new CliError('USAGE', 'wait needs --for-text, --for-role or --for-id');
  const q = targetOf(v);
  if (!hasTarget(q)) throw new CliError('USAGE', 'wait needs --app, --window, --window-id or --pid');
  const timeout = num(v.timeout, 'timeout', 0, 3600) ?? 30;
  const interval = int(v.interval, 'interval', 10, 60_000) ?? 500;
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const match =
    [
      forText !== undefined ? `text=${JSON.stringify(forText)}` : '',
      forRoles ? `role=${forRoles.join(',')}` : '',
      forId !== undefined ? `id=${forId}` : '',
    ]
      .filter(Boolean)
      .join(' ') + (v.gone ? ' gone' : '');
  const start = Date.now();
  const deadline = start + timeout * 1000;
  let lastError = '';
  for (;;) {
    let met = false;
    try {
      const { tree } = await readWindow(q, {
        ...(depth ? { depth } : {}),
        ...(roles ? { roles } : {}),
      });
      const hit = allCompact(tree).some(
        (e) =>
          (forText === undefined || textMatches(e, forText)) &&
          (!forRoles || forRoles.includes(e.r)) &&
          (forId === undefined || e.i === forId),
      );
      met = v.gone ? !hit : hit;
      lastError = '';
    } catch (e) {
      // The window is not there (yet): --gone counts that as gone, a wait for an element waits on.
      if (!(e instanceof CliError || e instanceof DesktopError)) throw e;
      if (v.gone && e instanceof DesktopError && e.code === 'APP_NOT_FOUND') met = true;
      lastError = e.message;
    }
    const elapsed = `${((Date.now() - start) / 1000).toFixed(1)}s`;
    if (met) return { value: { ok: true, action: 'wait', elapsed, match } };
    if (Date.now() >= deadline)
      return {
        value: { ok: false, action: 'wait', elapsed, match, timed_out: true },
        error: new CliError(
          'TIMEOUT',
          `timed out after ${timeout} s waiting for ${match}${lastError ? ` (last error: ${lastError})` : ''}`,
        ),
      };
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
  }
}

async function assertCmd(v: Values): Promise<Out> {
  const timeout = num(v.timeout, 'timeout', 0, 3600) ?? 0;
  const interval = int(v.interval, 'interval', 10, 60_000) ?? 500;
  if (str(v.text) === undefined && str(v.ref) === undefined && v.id === undefined)
    throw new CliError('USAGE', 'assert needs --text, --ref or --id');
  const deadline = Date.now() + timeout * 1000;
  for (;;) {
    let found: Located | undefined;
    let problem = '';
    try {
      found = await locate(v);
    } catch (e) {
      if (!(e instanceof CliError) || (e.code !== 'ELEMENT_NOT_FOUND' && e.code !== 'ELEMENT_AMBIGUOUS'))
        throw e;
      problem = e.message;
    }
    let el: ElementInfo | undefined;
    if (found) {
      el = found.c;
      const e = found.el;
      const value = e.secret ? undefined : (e.value ?? '');
      const checked = e.checked || e.value === '1' || e.selected;
      if (v.gone) problem = 'the element exists';
      else if (str(v.value) !== undefined && value !== v.value)
        problem = `expected value ${JSON.stringify(v.value)} but got ${JSON.stringify(value ?? '(secret)')}`;
      else if (
        str(v['value-contains']) !== undefined &&
        !(value ?? '').includes(v['value-contains'] as string)
      )
        problem = `expected value to contain ${JSON.stringify(v['value-contains'])} but got ${JSON.stringify(value ?? '(secret)')}`;
      else if (v.checked && !checked) problem = 'expected the element checked, it is not';
      else if (v.unchecked && checked) problem = 'expected the element unchecked, it is checked';
      else if (v.disabled && e.enabled) problem = 'expected the element disabled, it is enabled';
      else if (v.enabled && !e.enabled) problem = 'expected the element enabled, it is disabled';
      else if (v['is-focused'] && !e.focused) problem = 'expected the element focused, it is not';
    } else if (v.gone) problem = '';
    const pass = problem === '';
    if (pass) return { value: { ok: true, action: 'assert', pass: true, ...(el ? { element: el } : {}) } };
    if (Date.now() >= deadline)
      return {
        value: { ok: false, action: 'assert', pass: false, error: problem, ...(el ? { element: el } : {}) },
        error: new CliError('ASSERTION_FAILED', problem),
      };
    await sleep(Math.min(interval, Math.max(0, deadline - Date.now())));
  }
}

// ---- observe (JSON lines until --duration or a signal) ----

async function observe(v: Values): Promise<Out> {
  const q = targetOf(v);
  if (!q.app && !q.pid && !q.windowId && !q.title)
    throw new CliError('USAGE', 'observe needs --app, --window, --window-id or --pid');
  const interval = int(v.interval, 'interval', 10, 600_000) ?? 1000;
  const duration = num(v.duration, 'duration', 0, 86_400) ?? 0;
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const opts = { ...(depth ? { depth } : {}), ...(roles ? { roles } : {}) };
  const line = (o: unknown) => writeOut(JSON.stringify(o) + '\n');
  const now = () => Math.floor(Date.now() / 1000);
  const start = Date.now();
  let prev = flatWithPaths((await readWindow(q, opts)).tree);
  line({ type: 'snapshot', ts: now(), count: prev.length });
  let stop = false;
  const end = () => void (stop = true);
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  let events = 0;
  try {
    while (!stop) {
      const left = duration > 0 ? start + duration * 1000 - Date.now() : Infinity;
      if (left <= 0) break;
      await sleep(Math.min(interval, left));
      if (stop) break;
      try {
        const curr = flatWithPaths((await readWindow(q, opts)).tree);
        for (const c of changes(diff(prev, curr), now())) {
          if (c.type === 'changed') {
            if (v['ignore-bounds']) delete c.changes!.b;
            if (v['ignore-focus']) delete c.changes!.f;
            if (Object.keys(c.changes!).length === 0) continue;
          }
          line(c);
          events++;
        }
        prev = curr;
      } catch (e) {
        line({ type: 'error', ts: now(), error: (e as Error).message });
      }
    }
  } finally {
    process.off('SIGINT', end);
    process.off('SIGTERM', end);
  }
  line({ type: 'done', ts: now(), elapsed: `${((Date.now() - start) / 1000).toFixed(1)}s`, events });
  return { value: undefined, raw: '' };
}

// ---- screenshots ----

function imageOpts(
  v: Values,
  defaultScale: number,
): { format: 'png' | 'jpeg'; quality: number; scale: number } {
  const fmt = (v.format as string | undefined) ?? 'png';
  if (fmt !== 'png' && fmt !== 'jpg' && fmt !== 'jpeg')
    throw new CliError('USAGE', '--format must be png or jpg');
  return {
    format: fmt === 'png' ? 'png' : 'jpeg',
    quality: int(v.quality, 'quality', 1, 100) ?? 80,
    scale: num(v.scale, 'scale', 0.1, 1) ?? defaultScale,
  };
}

function writeImage(v: Values, data: Buffer, format: 'png' | 'jpeg', fallback: string): string | undefined {
  const output = (v.output as string | undefined) ?? `${fallback}.${format === 'png' ? 'png' : 'jpg'}`;
  if (output === '-') return undefined;
  writeFileSync(output, data);
  return output;
}

async function screenshot(v: Values): Promise<Out> {
  const q = targetOf(v);
  const { format, quality, scale } = imageOpts(v, 0.5);
  const shot = await desktop.capture({ ...q, format, quality, scale });
  return imageOut(v, shot.data, format, '/tmp/screenshot', shot);
}

/** An encoded image written to --output (or the default path), or sent as base64 with `--output -`. */
function imageOut(
  v: Values,
  data: Buffer,
  format: 'png' | 'jpeg',
  fallback: string,
  shot: { width: number; height: number; source: unknown },
  extra: Record<string, unknown> = {},
): Out {
  const file = writeImage(v, data, format, fallback);
  if (!file) return { value: undefined, raw: data.toString('base64') + '\n' };
  const { width: w, height: h, source: b } = shot;
  return {
    value: { path: file, format: format === 'png' ? 'png' : 'jpg', w, h, b, bytes: data.length, ...extra },
  };
}

async function screenshotCoords(v: Values): Promise<Out> {
  const q = targetOf(v);
  const { format, quality, scale } = imageOpts(v, 0.5);
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const { result, tree: whole } = await readWindow(q, {
    ...(depth ? { depth } : {}),
    ...(roles ? { roles } : {}),
  });
  let tree = v.prune ? prune(whole) : whole;
  const text = str(v.text);
  if (text !== undefined) tree = filterTree(tree, (e) => textMatches(e, text));
  let els = allCompact(tree).filter((e) => e.b[2] > 0 && e.b[3] > 0);
  if (!v['all-elements']) els = els.filter((e) => e.a !== undefined || e.r === 'input');
  if (text !== undefined) els = els.filter((e) => textMatches(e, text));
  const shot = await desktop.capture({ windowId: result.window.id, format: 'raw', scale });
  const [sx, sy, sw, sh] = shot.source;
  const kx = shot.width / sw;
  const ky = shot.height / sh;
  const labelled = els.map((e) => {
    const [cx, cy] = centre(e.b);
    return { i: e.i, r: e.r, ...(e.t ? { t: e.t } : {}), x: cx, y: cy, b: e.b };
  });
  drawLabels(
    shot.data,
    shot.width,
    shot.height,
    labelled.map((e) => ({
      box: [(e.b[0] - sx) * kx, (e.b[1] - sy) * ky, e.b[2] * kx, e.b[3] * ky],
      text: `(${e.x},${e.y})`,
    })),
  );
  const data = await desktop.encodeImage(
    { data: shot.data, width: shot.width, height: shot.height },
    { format, quality },
  );
  return imageOut(v, data, format, '/tmp/screenshot-coords', shot, {
    elements: labelled.map(({ b: _b, ...e }) => e),
  });
}

// ---- clipboard (X CLIPBOARD selection through xclip, which keeps owning it after we exit) ----

// node:child_process is loaded by the commands that start programs only: loading it costs every
// other command ~4 ms of CPU at start-up (it pulls in net, dgram, …).
let cp: typeof ChildProcesses | undefined;
async function childProcess(): Promise<typeof ChildProcesses> {
  cp ??= await import('node:child_process');
  return cp;
}

async function xclip(args: string[], input?: string): Promise<{ code: number; out: string; err: string }> {
  const r = (await childProcess()).spawnSync('xclip', ['-selection', 'clipboard', ...args], {
    input: input ?? '',
    encoding: 'utf8',
    // xclip forks a child that keeps serving the selection: it must not hold our pipes open.
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    timeout: 5000,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new CliError('CLIPBOARD_UNAVAILABLE', 'xclip is not installed');
  return { code: r.status ?? -1, out: r.stdout ?? '', err: r.stderr ?? '' };
}

async function clipRead(): Promise<string> {
  if (!process.env.DISPLAY) throw new CliError('NO_DISPLAY', 'DISPLAY is not set');
  const r = await xclip(['-o']);
  // No owner, or nothing as text: an empty clipboard.
  if (r.code !== 0) {
    if (/Can't open display/i.test(r.err)) throw new CliError('NO_DISPLAY', r.err.trim());
    return '';
  }
  return r.out;
}

async function clipWrite(text: string): Promise<void> {
  if (!process.env.DISPLAY) throw new CliError('NO_DISPLAY', 'DISPLAY is not set');
  // xclip reads the text, then a child of it owns the selection until another program takes it.
  const r = (await childProcess()).spawnSync('xclip', ['-selection', 'clipboard', '-i'], {
    input: text,
    stdio: ['pipe', 'ignore', 'ignore'],
    timeout: 5000,
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new CliError('CLIPBOARD_UNAVAILABLE', 'xclip is not installed');
  if (r.status !== 0)
    throw new CliError('NO_DISPLAY', 'xclip could not take the clipboard (is DISPLAY reachable?)');
  // xclip's request to own the selection may still be in its child's output buffer when the parent
  // exits: return once the clipboard reads back the text, so the next reader (any program) sees it.
  const deadline = Date.now() + 3000;
  while ((await clipRead()) !== text) {
    if (Date.now() > deadline)
      throw new CliError(
        'ACTION_FAILED',
        'the clipboard did not take the text within 3 s (another program took it?)',
      );
    await sleep(10);
  }
}

async function clipboard(v: Values, positionals: string[]): Promise<Out> {
  const [sub, ...rest] = positionals;
  switch (sub) {
    case 'read':
      return { value: { ok: true, action: 'clipboard-read', text: await clipRead() } };
    case 'write': {
      const text = str(v.text) ?? (rest.length > 0 ? rest.join(' ') : undefined);
      if (text === undefined)
        throw new CliError('USAGE', 'clipboard write needs the text (an argument or --text)');
      await clipWrite(text);
      return { value: { ok: true, action: 'clipboard-write' } };
    }
    case 'clear':
      await clipWrite('');
      return { value: { ok: true, action: 'clipboard-clear' } };
    case 'grab': {
      const q = targetOf(v);
      if (!hasTarget(q))
        throw new CliError('USAGE', 'clipboard grab needs --app, --window, --window-id or --pid');
      const w = await desktop.focus(q);
      const before = await clipRead();
      await clipWrite(''); // so that a copy of the same text as before is still seen as the copy
      await desktop.key('ctrl+a'); // cmd+a / cmd+c on macOS
      await desktop.key('ctrl+c');
      // The app answers the copy asynchronously: wait (≤ 2 s) until the clipboard holds something.
      const deadline = Date.now() + 2000;
      let text = await clipRead();
      while (text === '' && Date.now() < deadline) {
        await sleep(20);
        text = await clipRead();
      }
      if (text === '' && before !== '') await clipWrite(before);
      return { value: { ok: true, action: 'clipboard-grab', app: w.app, text } };
    }
    default:
      throw new CliError('USAGE', 'clipboard needs read, write <text>, clear or grab');
  }
}

// ---- open (xdg-open: the desktop's handlers) ----

async function open(v: Values, positionals: string[]): Promise<Out> {
  let url = str(v.url);
  let file = str(v.file);
  const app = str(v.app);
  const arg = positionals[0];
  if (arg !== undefined && !url && !file) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(arg)) url = arg;
    else file = arg;
  }
  if (!url && !file && !app) throw new CliError('USAGE', 'open needs a URL, a file or --app');
  if (file && !existsSync(file)) throw new CliError('USAGE', `no such file: ${file}`);
  const before = new Set((await desktop.listWindows().catch(() => [])).map((w) => w.id));
  const what = url ?? (file ? path.resolve(file) : undefined);
  // With --app: that program with the URL/file as its argument; else the desktop's handler.
  const [cmd, args] = app ? [app, what ? [what] : []] : ['xdg-open', [what!]];
  const child = (await childProcess()).spawn(cmd, args, { detached: true, stdio: 'ignore' });
  const failed = await new Promise<Error | undefined>((res) => {
    child.once('error', res);
    child.once('spawn', () => res(undefined));
  });
  if (failed)
    throw new CliError(
      'ACTION_FAILED',
      `could not start ${cmd}: ${failed.message}${app ? ' (--app is a command on PATH, e.g. chromium, gedit)' : ''}`,
    );
  child.unref();
  const value: Record<string, unknown> = {
    ok: true,
    action: 'open',
    ...(url ? { url } : {}),
    ...(file ? { file } : {}),
    ...(app ? { app } : {}),
    pid: child.pid,
  };
  let windowId: number | undefined;
  if (v.wait || v['post-read']) {
    const timeout = num(v.timeout, 'timeout', 0, 600) ?? 10;
    const deadline = Date.now() + timeout * 1000;
    for (;;) {
      const wins = await desktop.listWindows();
      const fresh =
        wins.find(
          (w) =>
            !before.has(w.id) &&
            (w.pid === child.pid || !app || w.app.toLowerCase().includes(path.basename(app).toLowerCase())),
        ) ?? wins.find((w) => !before.has(w.id));
      if (fresh) {
        windowId = fresh.id;
        value.window = fresh.title;
        value.window_id = fresh.id;
        break;
      }
      if (Date.now() >= deadline)
        return {
          value: { ...value, ok: false, timed_out: true },
          error: new CliError('TIMEOUT', `no new window appeared within ${timeout} s`),
        };
      await sleep(100);
    }
  }
  return { value: { ...value, ...(windowId !== undefined ? await postRead(v, windowId) : {}) } };
}

// ---- do: a batch of steps as YAML on stdin ----

const STEP_COMMANDS = new Set([
  'click',
  'hover',
  'type',
  'action',
  'set-value',
  'fill',
  'scroll',
  'wait',
  'assert',
  'focus',
  'read',
  'open',
  'drag',
  'find',
  'clipboard',
]);

/** A step's map as command-line flags: `{ text: "Name", exact: true }` -> --text Name --exact. */
function stepArgs(params: Record<string, unknown>): { argv: string[]; positionals: string[] } {
  const argv: string[] = [];
  const positionals: string[] = [];
  for (const [k, val] of Object.entries(params)) {
    if (val === undefined || val === null) continue;
    if (k === '_' || k === 'args') {
      positionals.push(...(Array.isArray(val) ? val.map(String) : [String(val)]));
      continue;
    }
    const flag = `--${k.replace(/_/g, '-')}`;
    if (val === true) argv.push(flag);
    else if (val === false) argv.push(`${flag}=false`);
    else if (Array.isArray(val)) {
      if (k === 'field') for (const x of val) argv.push(flag, String(x));
      else argv.push(flag, val.map(String).join(','));
    } else if (typeof val === 'object')
      throw new CliError('USAGE', `step flag "${k}" must be a value, not a map`);
    else argv.push(flag, String(val));
  }
  return { argv, positionals };
}

interface StepResult {
  step: number;
  ok: boolean;
  action: string;
  error?: string;
  [k: string]: unknown;
}

async function runSteps(
  steps: unknown[],
  defaults: Values,
  stopOnError: boolean,
  counter: { n: number },
): Promise<{ results: StepResult[]; failed?: string; completed: number }> {
  const results: StepResult[] = [];
  let completed = 0;
  for (const raw of steps) {
    const step = ++counter.n;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
      const error = `step ${step} must be a map like { click: { text: "OK" } }`;
      results.push({ step, ok: false, action: '?', error });
      if (stopOnError) return { results, failed: error, completed };
      continue;
    }
    const map = raw as Record<string, unknown>;
    const keys = Object.keys(map).filter((k) => k !== 'then' && k !== 'else');
    if (keys.length !== 1) {
      const error = `step ${step} must have exactly one action key (it has: ${keys.join(', ') || 'none'})`;
      results.push({ step, ok: false, action: keys[0] ?? '?', error });
      if (stopOnError) return { results, failed: error, completed };
      continue;
    }
    const name = keys[0]!;
    const params = (map[name] ?? {}) as Record<string, unknown> | unknown[];
    let r: StepResult;
    try {
      if (name === 'sleep') {
        const ms = Number((params as Record<string, unknown>).ms ?? 0);
        if (!Number.isFinite(ms) || ms < 0 || ms > 600_000)
          throw new CliError('USAGE', 'sleep needs ms from 0 to 600000');
        await sleep(ms);
        r = { step, ok: true, action: 'sleep' };
      } else if (name === 'try') {
        if (!Array.isArray(params)) throw new CliError('USAGE', 'try needs a list of steps');
        const sub = await runSteps(params, defaults, true, counter);
        r = {
          step,
          ok: true,
          action: 'try',
          substeps: sub.results,
          ...(sub.failed ? { caught: sub.failed } : {}),
        };
      } else if (name === 'if-exists' || name === 'if-focused') {
        const p = { ...defaults, ...stepArgsValues(params as Record<string, unknown>, 'assert') };
        let matched = false;
        try {
          const found = await locate(p);
          if (name === 'if-exists') matched = found !== undefined;
          else if (found) matched = found.el.focused;
          else {
            const f = await focusedElement();
            const roles = rolesOf(p.roles);
            matched = f !== undefined && (!roles || roles.includes(f.r));
          }
        } catch (e) {
          if (!(e instanceof CliError) || (e.code !== 'ELEMENT_NOT_FOUND' && e.code !== 'ELEMENT_AMBIGUOUS'))
            throw e;
          matched = name === 'if-exists' && e.code === 'ELEMENT_AMBIGUOUS';
        }
        const branch = matched ? 'then' : 'else';
        const body = map[branch];
        const sub = Array.isArray(body) ? await runSteps(body, defaults, stopOnError, counter) : undefined;
        r = {
          step,
          ok: !sub?.failed,
          action: name,
          matched,
          branch,
          ...(sub ? { substeps: sub.results } : {}),
        };
        if (sub?.failed) r.error = sub.failed;
      } else {
        if (!STEP_COMMANDS.has(name))
          throw new CliError(
            'USAGE',
            `unknown step type "${name}": supported: ${[...STEP_COMMANDS].join(', ')}, sleep, if-exists, if-focused, try`,
          );
        const values = { ...defaults, ...stepArgsValues(params as Record<string, unknown>, name) };
        const { positionals } = stepArgs(params as Record<string, unknown>);
        const out = await COMMAND_FNS[name]!(values, positionals);
        const value = (out.value ?? {}) as Record<string, unknown>;
        const fmt = values.format;
        r = {
          step,
          ...(name === 'read'
            ? fmt === 'agent'
              ? { ok: true, action: 'read', state: typeof out.agent === 'function' ? out.agent() : out.agent }
              : { ok: true, action: 'read', ...value }
            : { ...value, ok: !out.error, action: (value.action as string | undefined) ?? name }),
        };
        if (out.error) r.error = out.error.message;
      }
    } catch (e) {
      const err =
        e instanceof CliError
          ? e
          : e instanceof DesktopError
            ? new CliError(fromDesktopCode(e.code), e.message)
            : new CliError('INTERNAL', (e as Error)?.message ?? String(e));
      r = { step, ok: false, action: name, error: err.message };
    }
    results.push(r);
    if (r.ok) completed++;
    else if (stopOnError) return { results, failed: `step ${step} (${name}): ${r.error}`, completed };
  }
  return { results, completed };
}

/** A step's parameters, parsed and checked with its command's own flag definitions. */
function stepArgsValues(params: Record<string, unknown>, command: string): Values {
  const spec = COMMANDS[command];
  if (!spec) return {};
  return parse(command, stepArgs(params ?? {}).argv).values;
}

async function doCmd(v: Values): Promise<Out> {
  const input = readStdin();
  if (input === undefined) throw new CliError('USAGE', 'do reads its steps as a YAML list on stdin');
  let steps: unknown;
  try {
    steps = (await yaml()).parse(input);
  } catch (e) {
    throw new CliError('USAGE', `the steps on stdin are not valid YAML: ${(e as Error).message}`);
  }
  if (!Array.isArray(steps) || steps.length === 0)
    throw new CliError('USAGE', 'do expects a YAML list of steps on stdin, e.g. - click: { text: "OK" }');
  const defaults: Values = {};
  if (typeof v.app === 'string') defaults.app = v.app;
  if (typeof v.window === 'string') defaults.window = v.window;
  const res = await runSteps(steps, defaults, v['stop-on-error'] !== false, { n: 0 });
  const ok = !res.failed && res.results.every((r) => r.ok);
  const value = {
    ok,
    action: 'do',
    steps: steps.length,
    completed: res.completed,
    ...(res.failed ? { error: res.failed } : {}),
    results: res.results,
  };
  return ok
    ? { value }
    : { value, error: new CliError('STEP_FAILED', res.failed ?? 'a step failed (see results)') };
}

// ---- entry ----

/** What `do`/`fill` read as stdin when run by the MCP server (its own stdin is the MCP channel). */
let stdinText: string | undefined;

/** The steps or fields on stdin: undefined when stdin is a terminal (nothing piped in). */
function readStdin(): string | undefined {
  if (stdinText !== undefined) return stdinText;
  if (process.stdin.isTTY) return undefined;
  return readFileSync(0, 'utf8');
}

const COMMAND_FNS: Record<string, (v: Values, positionals: string[]) => Promise<Out>> = {
  list,
  read,
  find,
  click,
  hover,
  type,
  'set-value': setValue,
  fill,
  focus,
  scroll,
  drag,
  action,
  wait,
  assert: assertCmd,
  observe,
  screenshot,
  'screenshot-coords': screenshotCoords,
  clipboard,
  open,
  do: doCmd,
};

/** Parses a command's flags; booleans also take --x=false / --no-x / --x=true. */
function parse(name: string, rest: string[]): { values: Values; positionals: string[] } {
  const spec = COMMANDS[name]!;
  const options = optionsOf(spec);
  const off = new Set<string>();
  const args2: string[] = [];
  const args = rest.filter((a) => {
    const m = /^--(no-)?([a-z-]+?)(?:=(true|false))?$/.exec(a);
    if (!m) return true;
    const [, no, key, val] = m;
    if (options[`${no ?? ''}${key}`] && !val) return true; // an option called no-x (--no-display)
    if (options[key!]?.type !== 'boolean') return true;
    if (no || val === 'false') {
      off.add(key!);
      return false;
    }
    if (val === 'true') {
      args2.push(`--${key}`);
      return false;
    }
    return true;
  });
  let parsed;
  try {
    parsed = parseArgs({
      args: [...args, ...args2],
      options,
      allowPositionals: spec.positionals ?? false,
      strict: true,
    });
  } catch (e) {
    throw new CliError('USAGE', (e as Error).message);
  }
  const values = parsed.values as Values;
  for (const k of off) values[k] = false;
  return { values, positionals: parsed.positionals };
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === 'serve') {
    // The MCP server is a bundle of its own (the SDK would slow every other command's start-up).
    type Mcp = { serve(args: string[], exec: typeof execute): Promise<number> };
    return (await sibling<Mcp>('desktop-mcp.cjs', 'mcp.ts')).serve(rest, execute);
  }
  if (name === '--version' || name === '-V') {
    writeOut(`desktop-cli ${pkg.version}\n`);
    return 0;
  }
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    writeOut(USAGE);
    return name ? 0 : 2;
  }
  let fmt: Format = 'json';
  let pretty = false;
  try {
    const cmd = COMMANDS[name];
    if (!cmd) throw new CliError('USAGE', `unknown command "${name}" (desktop-cli --help lists them)`);
    if (rest.includes('--help') || rest.includes('-h')) {
      writeOut(cmd.help + '\n');
      return 0;
    }
    const { values, positionals } = parse(name, rest);
    fmt = formatOf(values, name);
    pretty = values.pretty === true;
    const o = await COMMAND_FNS[name]!(values, positionals);
    writeOut(await render(o, fmt, pretty));
    if (o.error) {
      writeErr(errorReport(o.error) + '\n');
      return EXIT_CODES[o.error.code];
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
export function execute(
  argv: string[],
  stdin?: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = async (): Promise<{ code: number; stdout: string; stderr: string }> => {
    let stdout = '';
    let stderr = '';
    const [o, e] = [writeOut, writeErr];
    writeOut = (s) => void (stdout += s);
    writeErr = (s) => void (stderr += s);
    stdinText = stdin;
    try {
      const code = await main(argv);
      return { code, stdout, stderr };
    } finally {
      [writeOut, writeErr] = [o, e];
      stdinText = undefined;
    }
  };
  const next = queue.then(run, run);
  queue = next.catch(() => undefined);
  return next;
}

const LOOK_ONLY = new Set([
  'list',
  'read',
  'find',
  'focus',
  'screenshot',
  'screenshot-coords',
  'wait',
  'assert',
  'observe',
  '--version',
  '-V',
  '--help',
  '-h',
  'help',
]);

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
