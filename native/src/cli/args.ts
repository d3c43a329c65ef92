// desktop-cli's flags: the values a command gets, the checks on them (integers, roles, boxes, targets)
// and the parsing of a command's flags with its option table (spec.ts).
import { parseArgs } from 'node:util';
import { SHORT_ROLES } from '../desktop/compact.ts';
import type { MouseButton, Rect, WindowQuery } from '../desktop/types.ts';
import { CliError } from './errors.ts';
import { COMMANDS, optionsOf } from './spec.ts';

export type Values = Record<string, string | boolean | string[] | undefined>;

/** What a command produced: the value to print, and its agent-format rendering when it has one. */
export interface Out {
  value: unknown;
  /** Made only when --format agent asks for it (a 6,000-node page's lines are not free). */
  agent?: string | (() => string);
  /** Printed as is (screenshot --output -). */
  raw?: string;
  /** `value`'s compact JSON (JSON.stringify, no newline), when the command has most of it made already
   *  (read: the tree's JSON, which its snapshot keeps too); used for --format json without --pretty. */
  json?: () => string;
  /** A result that is also a failure (wait timed out, assert failed): printed, then this error, exit 1. */
  error?: CliError;
}

export function int(v: unknown, flag: string, min = -Infinity, max = Infinity): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isInteger(n) || n < min || n > max)
    throw new CliError(
      'USAGE',
      `--${flag} must be an integer${min > -Infinity ? ` >= ${min}` : ''}${max < Infinity ? ` <= ${max}` : ''}`,
    );
  return n;
}

export function num(v: unknown, flag: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
    throw new CliError('USAGE', `--${flag} must be a number from ${min} to ${max}`);
  return n;
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

export function targetOf(v: Values): WindowQuery {
  const q: WindowQuery = {};
  if (typeof v.app === 'string') q.app = v.app;
  if (typeof v.window === 'string') q.title = v.window;
  const wid = int(v['window-id'], 'window-id', 1);
  if (wid !== undefined) q.windowId = wid;
  const pid = int(v.pid, 'pid', 1);
  if (pid !== undefined) q.pid = pid;
  return q;
}

export const hasTarget = (q: WindowQuery) => Boolean(q.app || q.title || q.windowId || q.pid);

/** Short roles from --roles; "interactive" is the public tool's meta-role for anything input-like. */
export function rolesOf(v: unknown): string[] | undefined {
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

export function parseBbox(s: unknown): Rect | undefined {
  if (s === undefined) return undefined;
  const parts = String(s).split(',').map(Number);
  if (parts.length !== 4 || parts.some((n) => !Number.isFinite(n)) || parts[2]! <= 0 || parts[3]! <= 0)
    throw new CliError('USAGE', '--bbox must be x,y,w,h with a positive width and height');
  return parts as Rect;
}

export function button(v: unknown): MouseButton {
  if (v === undefined) return 'left';
  if (v === 'left' || v === 'right' || v === 'middle') return v;
  throw new CliError('USAGE', '--button must be left, right or middle');
}

export function centre(b: Rect): [number, number] {
  return [Math.round(b[0] + b[2] / 2), Math.round(b[1] + b[3] / 2)];
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Parses a command's flags; booleans also take --x=false / --no-x / --x=true. */
export function parse(name: string, rest: string[]): { values: Values; positionals: string[] } {
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
