/**
 * The workflow editor's data and its edits, as pure functions (the inspector's "Edit workflow"; the
 * host validates and saves with the protocol's one workflow schema). An edit returns a new workflow
 * and never checks it: the host's check says what is wrong, and a save writes only a valid whole.
 * Pure: imported by the untrusted renderer and by host core.
 */
import type {
  Workflow,
  WorkflowActionType,
  WorkflowParam,
  WorkflowProblem,
  WorkflowStep,
  WorkflowSubtask,
} from '@runboard/supervisor/protocol/data';

/** A card's workflow as the editor opens it. */
export interface CardWorkflowView {
  /** The file, relative to the project folder (cards/<card>/schema.json). */
  file: string;
  /** The file's text as read: the base a save checks against (absent: no workflow yet). */
  text?: string;
  /** The workflow when the file is valid. */
  workflow?: Workflow;
  /** What is wrong with the file (empty when valid or absent). */
  problems: WorkflowProblem[];
  /** The schema's choices, for the editor's menus (the renderer cannot load the schema itself). */
  actionTypes: WorkflowActionType[];
  paramTypes: Array<WorkflowParam['type']>;
}

/** A check or a save: saved only when there were no problems (and the file was still the base). */
export interface WorkflowSaveResult {
  saved: boolean;
  problems: WorkflowProblem[];
}

/** A deep copy to edit (workflows are plain JSON). */
export const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** `{name}` templates (not `{{`/`}}`) of a string. */
const TEMPLATE = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces the template `{from}` by `{to}` in a string. */
export function renameIn(s: string, from: string, to: string): string {
  return s.replace(TEMPLATE, (m, name: string | undefined) => (name === from ? `{${to}}` : m));
}

/** Every templated string of a subtask and its steps, through `f` (recorded facts are left alone). */
function mapStrings(st: WorkflowSubtask, f: (s: string) => string): WorkflowSubtask {
  return {
    ...st,
    text: f(st.text),
    expected_outcome: f(st.expected_outcome),
    ...(st.outcome_check
      ? {
          outcome_check: {
            ...st.outcome_check,
            ...(st.outcome_check.name !== undefined ? { name: f(st.outcome_check.name) } : {}),
            ...(st.outcome_check.value !== undefined ? { value: f(st.outcome_check.value) } : {}),
          },
        }
      : {}),
    steps: st.steps.map((s): WorkflowStep => ({
      ...s,
      action_value: s.action_value === null ? null : f(s.action_value),
      intent: f(s.intent),
      expected_current_state: f(s.expected_current_state),
      target: {
        primary: f(s.target.primary),
        fallback: s.target.fallback === null ? null : f(s.target.fallback),
      },
      post_action: s.post_action.map(f),
      ...(s.locator
        ? {
            locator: {
              ...s.locator,
              name: f(s.locator.name),
              path: s.locator.path.map((p) => ({ ...p, name: f(p.name) })),
            },
          }
        : {}),
    })),
  };
}

/** Renames a parameter and every `{old}` template that uses it. */
export function renameParam(w: Workflow, index: number, to: string): Workflow {
  const from = w.task_params[index]?.name;
  if (from === undefined) return w;
  return {
    ...w,
    task_params: w.task_params.map((p, i) => (i === index ? { ...p, name: to } : p)),
    plan: { subtasks: w.plan.subtasks.map((st) => mapStrings(st, (s) => renameIn(s, from, to))) },
  };
}

/** Numbers subtasks and steps from 0 in their order (after an add, a delete or a move). */
export function renumber(w: Workflow): Workflow {
  return {
    ...w,
    plan: {
      subtasks: w.plan.subtasks.map((st, k) => ({
        ...st,
        subtask_i: k,
        steps: st.steps.map((s, i) => ({ ...s, i })),
      })),
    },
  };
}

/** Moves item `from` of a list to `to`. */
export function move<T>(list: readonly T[], from: number, to: number): T[] {
  const out = [...list];
  if (to < 0 || to >= out.length) return out;
  const [item] = out.splice(from, 1);
  out.splice(to, 0, item!);
  return out;
}

/** The extract variables produced by subtasks before `k`: what subtask `k` may depend on. */
export function upstreamExtracts(w: Workflow, k: number): string[] {
  return w.plan.subtasks
    .slice(0, k)
    .flatMap((st) => st.steps.flatMap((s) => (s.variable_name ? [s.variable_name] : [])));
}

export const newSubtask = (): WorkflowSubtask => ({
  subtask_i: 0,
  text: 'New subtask',
  expected_outcome: '',
  dependencies: [],
  steps: [],
});

export const newStep = (): WorkflowStep => ({
  i: 0,
  action_type: 'CLICK',
  action_value: null,
  intent: '',
  expected_current_state: '',
  target: { primary: '', fallback: null },
  post_action: [],
});

type Locator = NonNullable<WorkflowStep['locator']>;

/**
 * A locator for a step that has none (or had it removed): from the element the recorder saw there
 * (pointer steps: under the pointer; key steps: the focused field) and its window, else empty fields
 * for a person to fill in (the check says which are missing).
 */
export function locatorFor(s: WorkflowStep): Locator {
  const el = s.recorded?.element ?? s.recorded?.focus;
  const win = s.recorded?.window;
  const literal = (t: string): string => t.replace(/[{}]/g, (c) => c + c);
  return {
    app: win ? literal(win.app) : '',
    window_title: win ? literal(win.title) : '',
    role: el?.role ?? '',
    name: el ? literal(el.name) : '',
    path: el ? el.path.map((p) => ({ ...p, name: literal(p.name) })) : [],
  };
}

/**
 * A locator with its element's role or name changed: the path's last step is the element itself,
 * so it follows (when it named the element before the change).
 */
export function setLocatorElement(l: Locator, patch: { role?: string; name?: string }): Locator {
  const last = l.path.at(-1);
  const follows = last !== undefined && last.role === l.role && last.name === l.name;
  const next = { ...l, ...patch };
  return follows
    ? { ...next, path: [...l.path.slice(0, -1), { ...last, role: next.role, name: next.name }] }
    : next;
}

/** An outcome check with a field set; an emptied field is removed (an empty check is the schema's to refuse). */
export function setCheckField(
  c: NonNullable<WorkflowSubtask['outcome_check']>,
  field: 'role' | 'name' | 'value',
  v: string,
): NonNullable<WorkflowSubtask['outcome_check']> {
  const { [field]: _old, ...rest } = c;
  void _old;
  return v === '' ? rest : { ...rest, [field]: v };
}
