// desktop-cli's `do`: a batch of steps as YAML on stdin, each run by its command's own function.
import { type Values, type Out, rolesOf, sleep, parse } from './args.ts';
import { asCliError, CliError } from './errors.ts';
import { yaml, readStdin } from './output.ts';
import { COMMANDS } from './spec.ts';
import { locate, focusedElement } from './target.ts';

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
export function stepArgs(params: Record<string, unknown>): { argv: string[]; positionals: string[] } {
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

/** desktop-cli's commands by name, as main.ts lists them. */
export type Commands = Record<string, (v: Values, positionals: string[]) => Promise<Out>>;

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
  commands: Commands,
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
        const sub = await runSteps(params, defaults, true, counter, commands);
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
        const sub = Array.isArray(body)
          ? await runSteps(body, defaults, stopOnError, counter, commands)
          : undefined;
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
        const out = await commands[name]!(values, positionals);
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
      const err = asCliError(e);
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

/** `do`: the steps on stdin, each run by its command's function in `commands` (main.ts's table). */
export async function doCmd(v: Values, commands: Commands): Promise<Out> {
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
  const res = await runSteps(steps, defaults, v['stop-on-error'] !== false, { n: 0 }, commands);
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
