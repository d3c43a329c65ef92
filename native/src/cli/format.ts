// desktop-cli's output shapes beyond seed 003's compact JSON, with the names and layout of the public
// desktop-cli (mj1618/desktop-cli) so scripts and prompts written for it read ours unchanged: stable
// refs, the one-line-per-element agent format, flat lists with path breadcrumbs, pruning, diffs
// (--since) and text matching (--text/--target). Pure functions over compact elements.
import type { CompactElement } from '../desktop/compact.ts';

/** A compact element in a flat list: its ref and its path of roles from the window's top. */
export interface FlatElement extends Omit<CompactElement, 'c'> {
  ref?: string;
  p?: string;
}

/** An element as the action commands report their target: id, role, title, value, description, bounds. */
export interface ElementInfo {
  i: number;
  r: string;
  t?: string;
  v?: string;
  d?: string;
  b: [number, number, number, number];
}

export function info(el: CompactElement | FlatElement): ElementInfo {
  const o = { i: el.i, r: el.r } as ElementInfo;
  if (el.t) o.t = el.t;
  if (el.v) o.v = el.v;
  if (el.d) o.d = el.d;
  o.b = el.b;
  return o;
}

const label = (el: { t?: string | undefined; d?: string | undefined }) => el.t || el.d || '';

// ---- refs: landmark paths that stay the same across reads (toolbar/back, dialog/submit) ----

const LANDMARK_ROLES = new Set(['toolbar', 'menu', 'list', 'tab']);
const SKIPPED_ROLES = new Set(['window', 'scroll', 'web']);

function slug(s: string): string {
  let out = s
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (out.length > 40) out = out.slice(0, 40).replace(/-+$/, '');
  return out;
}

const landmark = (el: CompactElement) => LANDMARK_ROLES.has(el.r) || (el.r === 'group' && label(el) !== '');
const skipped = (el: CompactElement) =>
  SKIPPED_ROLES.has(el.r) ||
  (label(el) === '' && ['group', 'other', 'row', 'cell'].includes(el.r) && !landmark(el));
const segment = (el: CompactElement) => slug(label(el)) || el.r;

/** Whether an element gets a ref and a line in the agent format: it can be acted on, or shows a value. */
export function interesting(el: CompactElement | FlatElement): boolean {
  if (el.b[2] <= 0 || el.b[3] <= 0) return false;
  return (el.a?.includes('press') ?? false) || el.r === 'input' || (el.r === 'txt' && !!el.v);
}

/** Refs of the interesting elements, by id; duplicates get .1, .2, … in tree order. */
export function refs(tree: CompactElement[]): Map<number, string> {
  const raw: [number, string][] = [];
  const walk = (els: CompactElement[], base: string) => {
    for (const el of els) {
      const own = base ? `${base}/${segment(el)}` : segment(el);
      if (interesting(el)) raw.push([el.i, own]);
      const next = skipped(el) || !landmark(el) ? base : own;
      if (el.c) walk(el.c, next);
    }
  };
  walk(tree, '');
  const count = new Map<string, number>();
  for (const [, r] of raw) count.set(r, (count.get(r) ?? 0) + 1);
  const seen = new Map<string, number>();
  const out = new Map<number, string>();
  for (const [i, r] of raw) {
    if (count.get(r)! > 1) {
      const n = (seen.get(r) ?? 0) + 1;
      seen.set(r, n);
      out.set(i, `${r}.${n}`);
    } else out.set(i, r);
  }
  return out;
}

/** The id of the element a ref names: the exact ref, else the one ref that ends with "/<ref>". */
export function resolveRef(
  refsById: Map<number, string>,
  ref: string,
): { id: number } | { error: string; candidates?: string[] } {
  const want = ref.replace(/^\/+|\/+$/g, '');
  for (const [i, r] of refsById) if (r === want) return { id: i };
  const hits = [...refsById].filter(([, r]) => r.endsWith('/' + want));
  if (hits.length === 1) return { id: hits[0]![0] };
  if (hits.length === 0) return { error: `no element has the ref "${ref}"` };
  return { error: `the ref "${ref}" matches several elements`, candidates: hits.map(([, r]) => r) };
}

// ---- tree shapes ----

/** Elements with no title, value or description that are only a group or "other" box: children move up. */
export function prune(tree: CompactElement[]): CompactElement[] {
  const out: CompactElement[] = [];
  for (const el of tree) {
    const c = el.c ? prune(el.c) : undefined;
    if ((el.r === 'group' || el.r === 'other') && !el.t && !el.v && !el.d && !el.a && !el.f) {
      if (c) out.push(...c);
      continue;
    }
    const copy: CompactElement = { ...el };
    if (c && c.length > 0) copy.c = c;
    else delete copy.c;
    out.push(copy);
  }
  return out;
}

/** Pre-order flat list with path breadcrumbs ("window > group > btn") and refs. */
export function flatWithPaths(tree: CompactElement[], refsById = refs(tree)): FlatElement[] {
  const out: FlatElement[] = [];
  const walk = (els: CompactElement[], base: string) => {
    for (const el of els) {
      const { c, ...rest } = el;
      const p = base ? `${base} > ${el.r}` : el.r;
      const flat: FlatElement = { ...rest };
      const ref = refsById.get(el.i);
      if (ref) flat.ref = ref;
      flat.p = p;
      out.push(flat);
      if (c) walk(c, p);
    }
  };
  walk(tree, '');
  return out;
}

/** Keeps the elements (and their ancestors, for a tree) that satisfy `keep`. */
export function filterTree(tree: CompactElement[], keep: (el: CompactElement) => boolean): CompactElement[] {
  const out: CompactElement[] = [];
  for (const el of tree) {
    const c = el.c ? filterTree(el.c, keep) : [];
    if (keep(el) || c.length > 0) {
      const copy: CompactElement = { ...el };
      if (c.length > 0) copy.c = c;
      else delete copy.c;
      out.push(copy);
    }
  }
  return out;
}

export function allCompact(tree: CompactElement[]): CompactElement[] {
  const out: CompactElement[] = [];
  const walk = (els: CompactElement[]) => {
    for (const el of els) {
      out.push(el);
      if (el.c) walk(el.c);
    }
  };
  walk(tree);
  return out;
}

/** The subtree under element `id` (its children), or undefined when it is not in the tree. */
export function scope(tree: CompactElement[], id: number): CompactElement[] | undefined {
  const el = allCompact(tree).find((e) => e.i === id);
  return el ? (el.c ?? []) : undefined;
}

// ---- text matching (--text, --target, find, wait --for-text, assert) ----

/** Case-insensitive match on title, value or description: a substring, or the whole text with exact. */
export function textMatches(
  el: { t?: string | undefined; v?: string | undefined; d?: string | undefined },
  text: string,
  exact = false,
): boolean {
  const want = text.toLowerCase();
  return [el.t, el.v, el.d].some((s) => {
    if (!s) return false;
    const have = s.toLowerCase();
    return exact ? have === want : have.includes(want);
  });
}

/**
 * The elements an action by text can mean, best first: visible ones (non-empty bounds) that match,
 * with the role filter; when several match, exact matches win over substrings, then interactive
 * elements (with an action or an input) over plain text, then the deepest (a button over the row that
 * holds it).
 */
export function textCandidates(
  tree: CompactElement[],
  text: string,
  opts: { roles?: string[] | undefined; exact?: boolean | undefined } = {},
): CompactElement[] {
  const depth = new Map<number, number>();
  const walk = (els: CompactElement[], d: number) => {
    for (const el of els) {
      depth.set(el.i, d);
      if (el.c) walk(el.c, d + 1);
    }
  };
  walk(tree, 0);
  let hits = allCompact(tree).filter(
    (el) =>
      el.b[2] > 0 &&
      el.b[3] > 0 &&
      (!opts.roles?.length || opts.roles.includes(el.r)) &&
      textMatches(el, text, opts.exact),
  );
  const exactHits = hits.filter((el) => textMatches(el, text, true));
  if (exactHits.length > 0) hits = exactHits;
  const active = hits.filter((el) => el.a !== undefined || el.r === 'input');
  if (active.length > 0) hits = active;
  // An ancestor of another hit (a row that holds the matching button) is not what was meant.
  const ids = new Set(hits.map((h) => h.i));
  const holds = (el: CompactElement) => allCompact(el.c ?? []).some((d) => ids.has(d.i));
  const leaves = hits.filter((h) => !holds(h));
  return leaves.sort((a, b) => (depth.get(b.i) ?? 0) - (depth.get(a.i) ?? 0));
}

// ---- the agent format ----

const q = (s: string) => JSON.stringify(s);
const cut = (s: string, n: number) => (s.length <= n ? s : s.slice(0, n - 3) + '...');

export function agentHeader(window: string, app: string, pid: number): string {
  const parts = [window, app && app !== window ? app : ''].filter(Boolean).join(' - ');
  return pid ? (parts ? `${parts} (pid: ${pid})` : `pid: ${pid}`) : parts;
}

/** A read-only text that shows a value (a calculator's result, a status line): the public tool's "display". */
export const isDisplay = (el: CompactElement | FlatElement) =>
  el.r === 'txt' && !!el.v && !el.a?.includes('press');

export function agentLine(el: FlatElement): string {
  const display = isDisplay(el);
  const lab = cut(label(el) || (display ? (el.v ?? '') : ''), 80);
  const id = el.ref ? `[${el.i}|${el.ref}]` : `[${el.i}]`;
  let line = `${id} ${el.r} ${q(lab)} (${el.b.join(',')})`;
  if (display) line += ' display';
  if (el.e === false) line += ' disabled';
  if (el.s) line += ' selected';
  if (el.f) line += ' focused';
  if (el.secret) line += ' secret';
  if (el.r === 'chk' && el.v) line += el.v === '1' ? ' checked' : ' unchecked';
  if (el.v && el.r !== 'chk' && (!display || el.t || el.d)) line += ` val=${q(cut(el.v, 60))}`;
  return line;
}

/** `read --format agent`: a header, then one line per element that can be acted on or shows a value. */
export function agentFormat(
  head: { window: string; app: string; pid: number },
  tree: CompactElement[],
  maxElements = 0,
  flat = flatWithPaths(tree),
): string {
  const header = agentHeader(head.window, head.app, head.pid);
  const lines = flat.filter(interesting);
  const shown = maxElements > 0 ? lines.slice(0, maxElements) : lines;
  let out = header ? `# ${header}\n\n` : '';
  for (const el of shown) out += agentLine(el) + '\n';
  if (shown.length < lines.length)
    out += `\n# ... truncated: showing ${shown.length} of ${lines.length} elements. Use --max-elements 0 for all, or --roles/--depth/--text to filter.\n`;
  return out;
}

// ---- diffs (--since, observe) ----

export interface Change {
  type: 'added' | 'removed' | 'changed';
  ts: number;
  el?: FlatElement;
  p?: string;
  id?: number;
  r?: string;
  t?: string;
  changes?: Record<string, [string, string]>;
}

export interface TreeDiff {
  added: FlatElement[];
  removed: FlatElement[];
  changed: { i: number; r: string; t?: string; changes: Record<string, [string, string]> }[];
  unchanged_count: number;
}

const FIELDS = ['r', 't', 'v', 'd', 'b', 'f', 'e', 's'] as const;
const str = (v: unknown) => (v === undefined ? '' : Array.isArray(v) ? v.join(',') : String(v));

function fieldChanges(a: FlatElement, b: FlatElement): Record<string, [string, string]> {
  const out: Record<string, [string, string]> = {};
  for (const k of FIELDS) {
    const [x, y] = [str(a[k]), str(b[k])];
    if (x !== y) out[k] = [x, y];
  }
  return out;
}

export function diff(prev: FlatElement[], curr: FlatElement[]): TreeDiff {
  const before = new Map(prev.map((e) => [e.i, e]));
  const now = new Set(curr.map((e) => e.i));
  const d: TreeDiff = { added: [], removed: [], changed: [], unchanged_count: 0 };
  for (const el of curr) {
    const old = before.get(el.i);
    if (!old) {
      d.added.push(el);
      continue;
    }
    const changes = fieldChanges(old, el);
    if (Object.keys(changes).length > 0)
      d.changed.push({ i: el.i, r: el.r, ...(el.t ? { t: el.t } : {}), changes });
    else d.unchanged_count++;
  }
  for (const el of prev) if (!now.has(el.i)) d.removed.push(el);
  return d;
}

/** observe's events (one JSON line each) from a diff. */
export function changes(d: TreeDiff, ts: number): Change[] {
  return [
    ...d.added.map((el): Change => ({ type: 'added', ts, el, ...(el.p ? { p: el.p } : {}) })),
    ...d.removed.map((el): Change => ({
      type: 'removed',
      ts,
      id: el.i,
      r: el.r,
      ...(el.t ? { t: el.t } : {}),
    })),
    ...d.changed.map((c): Change => ({ type: 'changed', ts, id: c.i, changes: c.changes })),
  ];
}

export function agentDiff(
  head: { window: string; app: string; pid: number },
  since: number,
  d: TreeDiff,
): string {
  const header = agentHeader(head.window, head.app, head.pid);
  let out = header ? `# ${header} [diff since ${since}]\n\n` : `# diff since ${since}\n\n`;
  for (const el of d.added) out += `+ ${agentLine(el)}\n`;
  for (const el of d.removed) {
    const lab = el.t || el.d || el.v || '';
    out += lab ? `- [${el.i}] ${el.r} ${q(cut(lab, 80))}\n` : `- [${el.i}] ${el.r}\n`;
  }
  for (const c of d.changed) {
    const parts = Object.entries(c.changes).map(([k, [a, b]]) => `${k}=${q(b)} (was ${q(a)})`);
    out += `~ [${c.i}] ${c.t || c.r} ${parts.join(', ')}\n`;
  }
  if (d.unchanged_count > 0) out += `# ${d.unchanged_count} elements unchanged\n`;
  return out;
}
