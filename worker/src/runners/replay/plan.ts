/**
 * What replay runs: a card's workflow (its `schema.json`, checked with the protocol's one definition,
 * supervisor/src/protocol/workflow.ts) turned into the steps replay walks, subtask by subtask, each
 * with the locator that finds its element again and the recorder's facts (where the element and its
 * window were). Templates are filled with the protocol's renderTemplate.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { ElementPathStep, Rect, StepAction } from '@runboard/native';
import {
  formatWorkflowProblems,
  paramSecretRefs,
  parseWorkflowText,
  renderTemplate,
  workflowFileFor,
  type OutcomeCheck,
  type Workflow,
  type WorkflowStep,
} from '@runboard/supervisor/protocol';

/** Where a recorded element was: enough to find it again without a model. */
export interface Locator {
  role: string;
  name: string;
  /** Where the recorder saw it (screen pixels; compared relative to its window). */
  bounds?: Rect;
  path: ElementPathStep[];
}

export interface RecordedWindow {
  app: string;
  title: string;
  bounds?: Rect;
}

export interface PlanStep {
  /** 1-based over the whole plan. */
  n: number;
  intent: string;
  target?: string;
  expectedState?: string;
  postAction?: string;
  action: StepAction & { variable?: string };
  window?: RecordedWindow;
  /** Pointer steps: the element acted on; extract steps: the element read; key steps: the focused one. */
  element?: Locator;
  focus?: Locator;
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
  optional?: boolean;
  sensitive?: boolean;
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

const CLICKS = {
  CLICK: ['left', 1],
  DOUBLE_CLICK: ['left', 2],
  RIGHT_CLICK: ['right', 1],
  MIDDLE_CLICK: ['middle', 1],
} as const;

/** The step's action as replay carries it out (pointer specifics from the recording). */
function actionOf(s: WorkflowStep, dependencies: string[]): PlanStep['action'] {
  const rec = s.recorded?.action;
  const v = s.action_value ?? '';
  switch (s.action_type) {
    case 'CLICK':
    case 'DOUBLE_CLICK':
    case 'RIGHT_CLICK':
    case 'MIDDLE_CLICK': {
      const [button, count] = CLICKS[s.action_type];
      const at = rec?.type === 'click' ? { x: rec.x, y: rec.y } : { x: 0, y: 0 };
      return { type: 'click', ...at, button, ...(count > 1 ? { count } : {}) };
    }
    case 'TYPE':
      // no value: the subtask's one upstream extract supplies it
      return {
        type: 'type',
        text: s.action_value ?? (dependencies.length === 1 ? `{${dependencies[0]}}` : ''),
      };
    case 'KEYPRESS':
      return { type: 'press', key: v };
    case 'SCROLL':
      return rec?.type === 'scroll' ? rec : { type: 'scroll', x: 0, y: 0, dx: 0, dy: 3 };
    case 'DRAG':
      return rec?.type === 'drag' ? rec : { type: 'drag', from: [0, 0], to: [0, 0], button: 'left' };
    case 'EXTRACT':
      return { type: 'extract', query: v, ...(s.variable_name ? { variable: s.variable_name } : {}) };
  }
}

/** The workflow's subtasks and steps as replay walks them. */
export function toPlan(w: Workflow): Plan {
  let n = 0;
  return {
    task: w.task_name,
    description: w.detailed_task_description,
    params: w.task_params.map((p) => ({ ...p })),
    subtasks: w.plan.subtasks.map((st) => ({
      id: `subtask-${st.subtask_i}`,
      text: st.text,
      expectedOutcome: st.expected_outcome,
      dependencies: st.dependencies,
      ...(st.outcome_check ? { check: st.outcome_check } : {}),
      steps: st.steps.map((s) => {
        const win = s.recorded?.window;
        const seen = s.recorded?.element ?? s.recorded?.focus;
        // The step's locator is the one way replay finds its element without a model: a step whose
        // locator a person removed in the editor goes to the model even though its recorded facts
        // remain (they are kept as history, and for the place the element was seen).
        const loc: Locator | undefined = s.locator
          ? {
              role: s.locator.role,
              name: s.locator.name,
              path: s.locator.path,
              ...(seen ? { bounds: seen.bounds } : {}),
            }
          : undefined;
        const window: RecordedWindow | undefined = s.locator
          ? { app: s.locator.app, title: s.locator.window_title, ...(win ? { bounds: win.bounds } : {}) }
          : win && !seen
            ? // keys the recorder saw go to no field (a shortcut): sent to the recorded window
              { app: win.app, title: win.title, bounds: win.bounds }
            : undefined;
        const action = actionOf(s, st.dependencies);
        // Key steps find the focused field; pointer and extract steps the element they act on or read.
        const key = action.type === 'type' || action.type === 'press';
        return {
          n: ++n,
          intent: s.intent,
          target: s.target.primary,
          expectedState: s.expected_current_state,
          postAction: s.post_action.join(' '),
          action,
          ...(window ? { window } : {}),
          ...(loc ? (key ? { focus: loc } : { element: loc }) : {}),
        };
      }),
    })),
  };
}

/** The card's front matter and its workflow file (`cards/<card>/schema.json`). */
export function cardWorkflow(cardPath: string): { front: O; workflowFile: string } {
  const text = readFileSync(cardPath, 'utf8');
  const m = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text);
  const front = (m ? obj(parse(m[1]!)) : undefined) ?? {};
  return { front, workflowFile: workflowFileFor(cardPath) };
}

export function loadPlan(workflowFile: string): Plan {
  if (!existsSync(workflowFile))
    throw new PlanError(
      `the card has no workflow (${workflowFile}): reflect a recording into it first (a card of a reflect flow), or write one`,
    );
  const r = parseWorkflowText(readFileSync(workflowFile, 'utf8'));
  if (!r.ok)
    throw new PlanError(`${workflowFile} is not a valid workflow:\n${formatWorkflowProblems(r.problems)}`);
  return toPlan(r.workflow);
}

export type Values = Record<string, string>;

/**
 * The parameters' values: the card's `params:` front matter, else each parameter's example (replay's
 * default), else '' for an optional one. A required one with neither comes back by name: the run asks
 * for it instead of guessing.
 */
export function resolveParams(
  plan: Plan,
  front: O,
  /** The card's sensitive values the supervisor handed the run (the card holds their references). */
  secrets: Values = {},
): { values: Values; missing: TaskParam[]; unknown: string[]; lostSecrets: string[]; inClear: string[] } {
  const given = obj(front.params) ?? {};
  const refs = paramSecretRefs(given);
  const values: Values = {};
  const missing: TaskParam[] = [];
  const lostSecrets: string[] = [];
  const inClear: string[] = [];
  for (const p of plan.params) {
    const v = given[p.name];
    if (refs[p.name]) {
      // a reference: the value is the supervisor's; none means it was lost (the store, or the card moved)
      if (secrets[p.name] !== undefined) values[p.name] = secrets[p.name]!;
      else {
        lostSecrets.push(p.name);
        missing.push(p);
      }
      continue;
    }
    if (p.sensitive && v !== undefined && v !== null && str(v) !== '') inClear.push(p.name);
    if (v !== undefined && v !== null && str(v) !== '') values[p.name] = str(v);
    else if (p.example) values[p.name] = p.example;
    else if (p.optional) values[p.name] = '';
    else missing.push(p);
  }
  const known = new Set(plan.params.map((p) => p.name));
  return { values, missing, unknown: Object.keys(given).filter((k) => !known.has(k)), lostSecrets, inClear };
}

/** The sensitive parameters' values by name (what must never be shown, sent or kept). */
export function sensitiveValues(plan: Plan, values: Values): Values {
  return Object.fromEntries(
    plan.params.filter((p) => p.sensitive && values[p.name]).map((p) => [p.name, values[p.name]!]),
  );
}

/** The values as logs and reports show them: a sensitive parameter's value never. */
export function shown(plan: Plan, values: Values): Values {
  const hidden = new Set(plan.params.filter((p) => p.sensitive).map((p) => p.name));
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, hidden.has(k) ? '(hidden)' : v]));
}

/** A value (a subtask, its steps, a check) with every `{name}` template in its strings filled in. */
export function fillTemplates<T>(v: T, values: Values): T {
  if (typeof v === 'string') return renderTemplate(v, values) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => fillTemplates(x, values)) as T;
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fillTemplates(x, values)])) as T;
  return v;
}
