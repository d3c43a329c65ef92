// The element a desktop-cli command acts on (--id found again, --text, --ref), and what follows an
// action: --post-read, --verify, waiting for the focus.
import {
  allElements,
  platformRolesFor,
  shortRole,
  toCompact,
  type CompactElement,
} from '../desktop/compact.ts';
import { desktop } from '../desktop/desktop.ts';
import { matchSignature, type Candidate } from '../desktop/match.ts';
import { DesktopError, type Element, type WindowQuery } from '../desktop/types.ts';
import { type Values, int, str, targetOf, hasTarget, rolesOf, centre, sleep } from './args.ts';
import { latestContext, loadContext, signatureOf, type WindowContext } from './context.ts';
import { CliError } from './errors.ts';
import {
  agentFormat,
  allCompact,
  diff,
  flatWithPaths,
  info,
  isDisplay,
  refs,
  resolveRef,
  scope,
  textCandidates,
  type ElementInfo,
  type FlatElement,
} from './format.ts';
import { writeErr } from './output.ts';
import { readWindow, head, maxFor } from './read-commands.ts';

export interface Located {
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
  const stored = ctx.elements[String(id)];
  if (!stored)
    throw new CliError('ELEMENT_NOT_FOUND', `element ${id} was not in the last read of "${ctx.title}"`, {
      id,
    });
  const sig = signatureOf(stored);
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

export function compactOf(el: Element): ElementInfo {
  return info(toCompact([{ ...el, children: [] }])[0] ?? { i: el.id, r: 'other', b: el.bounds });
}

/**
 * The element a command acts on: --<idFlag> (the last read's element), --<textFlag> (a fresh read,
 * matched by title/value/description) or --<refFlag> (a fresh read, by stable ref). Undefined when
 * none of those flags is given.
 */
export async function locate(
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
  const { result, tree: whole } = await readWindow(targetOf(v), { elements: true });
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

export async function locateOrThrow(
  v: Values,
  what: string,
  flags?: { id?: string; text?: string; ref?: string },
) {
  const found = await locate(v, flags);
  if (!found) throw new CliError('USAGE', `${what} needs --${flags?.text ?? 'text'}, --ref or --id`);
  return found;
}

/** A point from --x/--y (focusing the --app/--window first when given). */
export async function xy(v: Values, xs: string, ys: string): Promise<[number, number] | undefined> {
  const x = int(v[xs], xs);
  const y = int(v[ys], ys);
  if (x === undefined && y === undefined) return undefined;
  if (x === undefined || y === undefined) throw new CliError('USAGE', `--${xs} and --${ys} go together`);
  if (hasTarget(targetOf(v))) await desktop.focus(targetOf(v));
  return [x, y];
}

// ---- after an action: --post-read, --verify ----

export async function postRead(v: Values, windowId: number | undefined): Promise<{ state?: string }> {
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

export const MAX_DISPLAY = 20;

/**
 * The `display` field of click, type and action (the public tool's): the window's read-only texts
 * that show a value, read after the action, when a window was named (--app, --window, --window-id,
 * --pid) and --no-display is not given. More than 20: the 20 nearest the target. Several: the tallest
 * (the largest font: a calculator's result rather than its expression) is `primary`. Omitted when
 * there is none, or when the window cannot be read (the action itself succeeded).
 */
export async function displayOf(
  v: Values,
  windowId: number | undefined,
  target?: [number, number, number, number],
): Promise<{ display?: (ElementInfo & { primary?: true })[] }> {
  if (v['no-display'] === true) return {};
  const q = targetOf(v);
  if (!hasTarget(q)) return {};
  const read = await desktop.read(windowId !== undefined ? { windowId } : q).catch(() => undefined);
  if (!read) return {};
  let found = allCompact(toCompact(read.elements)).filter(isDisplay);
  if (found.length === 0) return {};
  if (found.length > MAX_DISPLAY && target) {
    const d = (b: [number, number, number, number]) =>
      Math.hypot(
        b[0] + b[2] / 2 - (target[0] + target[2] / 2),
        b[1] + b[3] / 2 - (target[1] + target[3] / 2),
      );
    found = [...found].sort((a, b) => d(a.b) - d(b.b));
  }
  const display: (ElementInfo & { primary?: true })[] = found.slice(0, MAX_DISPLAY).map(info);
  if (display.length > 1) {
    let top = 0;
    display.forEach((e, k) => {
      if (e.b[3] > display[top]!.b[3]) top = k;
    });
    display[top]!.primary = true;
  }
  return { display };
}

export async function snapshot(windowId: number): Promise<FlatElement[]> {
  return flatWithPaths((await readWindow({ windowId })).tree);
}

/**
 * --verify: runs `attempts` in order until one changes the window's tree (read `verify-delay` ms
 * after it), at most 1 + max-retries of them. Says whether a change was seen and which attempt made it.
 */
export async function verified(
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

/** Waits (at most FOCUS_WAIT_MS) until AT-SPI reports the element focused; false if it never did. */
export const FOCUS_WAIT_MS = 3000;
export async function waitFocused(el: Element, window: WindowQuery): Promise<boolean> {
  const deadline = Date.now() + FOCUS_WAIT_MS;
  while (Date.now() < deadline) {
    const r = await desktop.read({ ...window, bbox: el.bounds, actions: false });
    if (allElements(r.elements).some((e) => e.id === el.id && e.focused)) return true;
    await sleep(15);
  }
  return false;
}

/** Clicks an element and waits until it has the focus (keys typed before go elsewhere). */
export async function focusElement(found: Located, label: string): Promise<boolean> {
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

/** The focused element of the active window (or of windowId), for the public tool's `focused` field. */
export async function focusedElement(windowId?: number): Promise<ElementInfo | undefined> {
  try {
    const r = await desktop.read(windowId !== undefined ? { windowId, actions: false } : { actions: false });
    const el = allElements(r.elements).find((e) => e.focused);
    return el ? compactOf(el) : undefined;
  } catch {
    return undefined;
  }
}
