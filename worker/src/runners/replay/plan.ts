/**
 * What replay runs: a card's workflow (its `schema.json`, seed 002's format) with the parameters
 * resolved. The schema's own definition is the protocol's; this file only reads it into the steps
 * replay walks (subtask by subtask, each step with its recorded accessibility facts) and fills the
 * `{param}` templates in.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import type { ElementPathStep, Rect, StepAction } from '@runboard/native';

/** Where a recorded element was: enough to find it again without a model (the recorder's facts). */
export interface Locator {
  role: string;
  name: string;
  bounds?: Rect;
  path: ElementPathStep[];
}

export interface RecordedWindow {
  app: string;
  title: string;
  bounds?: Rect;
}

export interface PlanStep {
  /** 1-based over the whole plan, as the schema lists steps. */
  n: number;
  subtask: string;
  intent: string;
  target?: string;
  expectedState?: string;
  postAction?: string;
  action: StepAction & { variable?: string };
  window?: RecordedWindow;
  element?: Locator;
  focus?: Locator;
}

/** An accessibility fact that tells a subtask's expected outcome is on screen (role, name, value). */
export interface OutcomeCheck {
  role?: string;
  name?: string;
  value?: string;
}

export interface PlanSubtask {
  id: string;
  text: string;
  expectedOutcome: string;
  /** Upstream extract variable names whose values this subtask gets. */
  dependencies: string[];
  check?: OutcomeCheck;
  steps: PlanStep[];
}

export interface TaskParam {
  name: string;
  description: string;
  example?: string;
}

export interface Plan {
  task: string;
  description: string;
  params: TaskParam[];
  subtasks: PlanSubtask[];
}

export class PlanError extends Error {}

type O = Record<string, unknown>;
const obj = (v: unknown): O | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as O) : undefined;
const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : String(v));

function locator(v: unknown): Locator | undefined {
  const o = obj(v);
  if (!o || typeof o.role !== 'string') return undefined;
  const p = Array.isArray(o.path) ? (o.path as ElementPathStep[]) : [];
  return {
    role: o.role,
    name: str(o.name),
    ...(Array.isArray(o.bounds) ? { bounds: o.bounds as Rect } : {}),
    path: p,
  };
}

/** The steps and subtasks of a workflow file's content, in the schema's order. */
export function readPlan(schema: unknown, file: string): Plan {
  const s = obj(schema);
  const where = (what: string): PlanError => new PlanError(`${file}: ${what}`);
  if (!s) throw where('the workflow is not a JSON object');
  const planObj = obj(s.plan);
  if (!planObj) throw where('it has no `plan` (subtasks and steps)');
  const rawSubtasks = Array.isArray(planObj.subtasks) ? (planObj.subtasks as unknown[]) : [];
  const rawSteps = Array.isArray(planObj.steps) ? (planObj.steps as unknown[]) : [];
  if (rawSubtasks.length === 0) throw where('its plan has no subtasks');
  const subtasks: PlanSubtask[] = rawSubtasks.map((v, i) => {
    const o = obj(v) ?? {};
    const check = obj(o.check);
    return {
      id: str(o.id) || `subtask-${i + 1}`,
      text: str(o.text ?? o.subtask ?? o.description),
      expectedOutcome: str(o.expected_outcome),
      dependencies: Array.isArray(o.dependencies) ? (o.dependencies as unknown[]).map(str) : [],
      ...(check ? { check: { ...check } } : {}),
      steps: [],
    };
  });
  const byId = new Map(subtasks.map((t) => [t.id, t]));
  rawSteps.forEach((v, i) => {
    const o = obj(v) ?? {};
    const sub = byId.get(str(o.subtask));
    if (!sub)
      throw where(`step ${i + 1} belongs to no subtask of the plan (subtask ${JSON.stringify(o.subtask)})`);
    const action = obj(o.action);
    if (!action || typeof action.type !== 'string') throw where(`step ${i + 1} has no action`);
    const win = obj(o.window);
    const element = locator(o.element);
    const focus = locator(o.focus);
    sub.steps.push({
      n: i + 1,
      subtask: sub.id,
      intent: str(o.intent),
      ...(o.target ? { target: str(o.target) } : {}),
      ...(o.expected_current_state ? { expectedState: str(o.expected_current_state) } : {}),
      ...(o.post_action ? { postAction: str(o.post_action) } : {}),
      action: action as unknown as PlanStep['action'],
      ...(win
        ? {
            window: {
              app: str(win.app),
              title: str(win.title),
              ...(Array.isArray(win.bounds) ? { bounds: win.bounds as Rect } : {}),
            },
          }
        : {}),
      ...(element ? { element } : {}),
      ...(focus ? { focus } : {}),
    });
  });
  const params = Array.isArray(s.task_params)
    ? (s.task_params as unknown[]).map((p) => {
        const o = obj(p) ?? {};
        return {
          name: str(o.name),
          description: str(o.description),
          ...(o.example !== undefined ? { example: str(o.example) } : {}),
        };
      })
    : [];
  return {
    task: str(s.task ?? s.task_name) || path.basename(file),
    description: str(s.detailed_task_description),
    params,
    subtasks,
  };
}

/** The card's front matter and the path of its workflow (front matter `workflow:`, else `<card>.schema.json`). */
export function cardWorkflow(cardPath: string): { front: O; workflowFile: string } {
  const text = readFileSync(cardPath, 'utf8');
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  const front = (m ? obj(parse(m[1]!)) : undefined) ?? {};
  const dir = path.dirname(cardPath);
  const named = typeof front.workflow === 'string' && front.workflow ? front.workflow : undefined;
  const workflowFile = named
    ? path.resolve(dir, named)
    : path.join(dir, `${path.basename(cardPath, path.extname(cardPath))}.schema.json`);
  return { front, workflowFile };
}

export function loadPlan(workflowFile: string): Plan {
  if (!existsSync(workflowFile))
    throw new PlanError(
      `no workflow at ${workflowFile}: reflect a recording into it first, or name it in the card's front matter (workflow: path/to/schema.json)`,
    );
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(workflowFile, 'utf8'));
  } catch (err) {
    throw new PlanError(`${workflowFile} is not valid JSON: ${(err as Error).message}`);
  }
  return readPlan(json, workflowFile);
}

export type Values = Record<string, string>;

/**
 * The parameters' values: the card's `params:` front matter, else each parameter's example. Missing
 * ones come back by name (the run asks for them instead of guessing).
 */
export function resolveParams(
  plan: Plan,
  front: O,
): { values: Values; missing: TaskParam[]; unknown: string[] } {
  const given = obj(front.params) ?? {};
  const values: Values = {};
  const missing: TaskParam[] = [];
  for (const p of plan.params) {
    const v = given[p.name];
    if (v !== undefined && v !== null && str(v) !== '') values[p.name] = str(v);
    else if (p.example !== undefined && p.example !== '') values[p.name] = p.example;
    else missing.push(p);
  }
  const known = new Set(plan.params.map((p) => p.name));
  return { values, missing, unknown: Object.keys(given).filter((k) => !known.has(k)) };
}

const TEMPLATE = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** `{name}` → its value; names without a value stay as written. */
export function substitute(text: string, values: Values): string {
  return text.replace(TEMPLATE, (m, k: string) => (Object.hasOwn(values, k) ? values[k]! : m));
}

/** A value (a step, a check) with every `{name}` template in its strings filled in. */
export function fillTemplates<T>(v: T, values: Values): T {
  if (typeof v === 'string') return substitute(v, values) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => fillTemplates(x, values)) as T;
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fillTemplates(x, values)])) as T;
  return v;
}
