// desktop-cli's conditions: wait, assert, and observe (JSON lines until --duration or a signal).
import { desktop } from '../desktop/desktop.ts';
import { DesktopError } from '../desktop/types.ts';
import { type Values, type Out, int, num, str, targetOf, hasTarget, rolesOf, sleep } from './args.ts';
import { CliError } from './errors.ts';
import { allCompact, changes, diff, flatWithPaths, textMatches, type ElementInfo } from './format.ts';
import { writeOut } from './output.ts';
import { readWindow } from './read-commands.ts';
import { locate, type Located } from './target.ts';

export async function wait(v: Values): Promise<Out> {
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

export async function assertCmd(v: Values): Promise<Out> {
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

export async function observe(v: Values): Promise<Out> {
  const q = targetOf(v);
  if (!q.app && !q.pid && !q.windowId && !q.title)
    throw new CliError('USAGE', 'observe needs --app, --window, --window-id or --pid');
  const interval = int(v.interval, 'interval', 10, 600_000) ?? 1000;
  const duration = num(v.duration, 'duration', 0, 86_400) ?? 0;
  const depth = int(v.depth, 'depth', 0);
  const roles = rolesOf(v.roles);
  const opts = { ...(depth ? { depth } : {}), ...(roles ? { roles } : {}) };
  // Every read after the first re-reads only what the accessibility events named (kept trees).
  await desktop.keepTrees(true).catch(() => undefined);
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
