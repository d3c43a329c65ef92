// desktop-cli's reading commands: list, read (the tree, --flat, --since diffs) and find.
import { flatten, platformRolesFor, toCompact, type CompactElement } from '../desktop/compact.ts';
import { desktop } from '../desktop/desktop.ts';
import { type ReadResult, type Rect, type WindowInfo, type WindowQuery } from '../desktop/types.ts';
import { type Values, type Out, int, str, targetOf, rolesOf, parseBbox } from './args.ts';
import { loadSnapshot, saveContext, saveSnapshot } from './context.ts';
import { CliError } from './errors.ts';
import {
  agentDiff,
  agentFormat,
  allCompact,
  diff,
  filterTree,
  flatWithPaths,
  info,
  prune,
  refs,
  scope,
  textMatches,
  type ElementInfo,
  type FlatElement,
} from './format.ts';

export interface Read {
  result: ReadResult;
  tree: CompactElement[];
}

/** Reads a window, leaves its signatures for --id (context.ts) and returns its compact tree. */
export async function readWindow(
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
    signatures: true,
  });
  const tree = toCompact(result.elements, opts.roles);
  // Each element's signature (platform role, editable, title, bounds relative to the window), as JSON the
  // addon made in one pass: a JavaScript pass cost a 6,000-node page 10-25 ms of a process that never
  // warms up (docs/bench-desktop.md, session 18).
  saveContext({
    windowId: result.window.id,
    title: result.window.title,
    app: result.window.app,
    ts: Date.now(),
    elementsJson: result.signaturesJson ?? '{}',
  });
  return { result, tree };
}

export const head = (w: WindowInfo) => ({ window: w.title, app: w.app, pid: w.pid });

/** The public tool's cap for web pages in the agent format: 200 lines unless --max-elements says. */
export function maxFor(v: unknown, flag: string, tree: CompactElement[]): number {
  return int(v, flag, 0) ?? webCap(tree);
}
const webCap = (tree: CompactElement[]) => (allCompact(tree).some((e) => e.r === 'web') ? 200 : 0);

export async function list(v: Values): Promise<Out> {
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

export async function read(v: Values): Promise<Out> {
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
  // The flat list with refs and paths is a function of the tree: made only when an output needs it,
  // and a snapshot keeps the tree (on a 6,000-node page the flat list cost every read ~20 ms to make and
  // a bigger file to write; docs/bench-desktop.md, session 17).
  let flatMemo: FlatElement[] | undefined;
  const flatOf = () => (flatMemo ??= flatWithPaths(tree, refs(tree)));
  const beforeTree = since !== undefined ? loadSnapshot<CompactElement>(w.id, since) : undefined;
  // The tree's JSON is made once: the snapshot keeps it, and the default output (the tree, compact
  // JSON) is it with the header around it (JSON.stringify of that object, byte for byte).
  const treeJson = JSON.stringify(tree);
  saveSnapshot(w.id, ts, treeJson);
  const maxFlag = int(v['max-elements'], 'max-elements', 0); // checked now, the page's cap made if asked
  if (since !== undefined) {
    if (!beforeTree)
      throw new CliError(
        'USAGE',
        `no read of "${w.title}" at ts ${since} is kept (snapshots last 60 s): read again without --since`,
      );
    const d = diff(flatWithPaths(beforeTree, refs(beforeTree)), flatOf());
    return {
      value: { app: w.app, pid: w.pid, window: w.title, ts, since, diff: d },
      agent: () => agentDiff(head(w), since, d),
    };
  }
  // Seed 003's shapes: the tree, or --compact's flat list; --flat adds refs and path breadcrumbs.
  let elements: unknown;
  if (v.flat || (text !== undefined && !v.children) || v.focused) {
    const flat = flatOf();
    const hits = text !== undefined ? flat.filter((e) => textMatches(e, text, v.exact === true)) : flat;
    elements = v.focused ? hits.filter((e) => e.f) : v.flat ? hits : hits.map(({ p: _p, ...e }) => e);
  } else elements = v.compact ? flatten(tree) : tree;
  // elements last: the output's JSON can then be the header's with the tree's JSON after it.
  const header = { app: w.app, pid: w.pid, window: w.title, ts };
  return {
    value: { ...header, elements },
    ...(elements === tree
      ? { json: () => `${JSON.stringify(header).slice(0, -1)},"elements":${treeJson}}` }
      : {}),
    agent: () => agentFormat(head(w), tree, maxFlag ?? webCap(tree), flatOf()),
  };
}

export async function find(v: Values): Promise<Out> {
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
