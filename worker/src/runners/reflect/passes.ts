/**
 * Reflect's passes without I/O: a recording's steps in, the model's answers checked, a workflow out.
 * Pass A describes one step from its screenshots (expected_current_state, intent, target, post_action,
 * action_value); pass B groups all of them into subtasks and parameters. The workflow is assembled here
 * and validated with the one workflow schema (@runboard/supervisor/protocol, workflow.ts).
 */
import * as z from 'zod/mini';
import {
  checkWorkflow,
  extractProducers,
  RecordedAction,
  RecordedElement,
  stepStrings,
  templateNames,
  type RecordedFacts,
  type Workflow,
  type WorkflowActionType,
  type WorkflowLocator,
  type WorkflowParam,
  type WorkflowStep,
} from '@runboard/supervisor/protocol';

/** One line of a recording's manifest.jsonl (native/src/desktop/recording.ts, ManifestStep). */
export const ManifestLine = z.object({
  step: z.int(),
  at: z.number(),
  screenshot: z.string(),
  action: RecordedAction,
  window: z.nullable(
    z.object({
      id: z.number(),
      app: z.string(),
      title: z.string(),
      bounds: z.tuple([z.number(), z.number(), z.number(), z.number()]),
    }),
  ),
  element: z.optional(RecordedElement),
  focus: z.optional(RecordedElement),
  details: z.optional(z.string()),
  synthetic: z.optional(z.literal(true)),
});
export type ManifestLine = z.infer<typeof ManifestLine>;

/** A step as reflect works on it: the recorder's facts, its action type, and its screenshots. */
export interface StepInput {
  /** From 0, in the recording's order. */
  i: number;
  actionType: WorkflowActionType;
  recorded: RecordedFacts;
  /** Screenshot paths relative to the recording's folder: before the action, and after it (the next step's). */
  pre: string;
  post: string | null;
  /** EXTRACT steps: the variable the value is stored in (extract_0, extract_1, …). */
  variable?: string;
}

export function actionType(a: RecordedAction): WorkflowActionType {
  switch (a.type) {
    case 'click':
      if (a.button === 'right') return 'RIGHT_CLICK';
      if (a.button === 'middle') return 'MIDDLE_CLICK';
      return a.count === 2 ? 'DOUBLE_CLICK' : 'CLICK';
    case 'type':
      return 'TYPE';
    case 'press':
      return 'KEYPRESS';
    case 'scroll':
      return 'SCROLL';
    case 'drag':
      return 'DRAG';
    case 'extract':
      return 'EXTRACT';
  }
}

/** Parses a manifest (one JSON object a line); a bad line is an error naming its line. */
export function parseManifest(text: string): ManifestLine[] {
  const out: ManifestLine[] = [];
  text.split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (e) {
      throw new Error(`manifest.jsonl line ${n + 1} is not JSON: ${(e as Error).message}`);
    }
    const r = ManifestLine.safeParse(raw, { error: english });
    if (!r.success)
      throw new Error(
        `manifest.jsonl line ${n + 1} is not a recorded step: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    out.push(r.data);
  });
  return out;
}

const english = z.locales.en().localeError;

export function stepInputs(recording: string, lines: ManifestLine[]): StepInput[] {
  let extracts = 0;
  return lines.map((l, i) => {
    const type = actionType(l.action);
    const recorded: RecordedFacts = {
      recording,
      step: l.step,
      screenshot: l.screenshot,
      action: l.action,
      window: l.window,
      ...(l.element ? { element: l.element } : {}),
      ...(l.focus ? { focus: l.focus } : {}),
      ...(l.details !== undefined ? { details: l.details } : {}),
    };
    // An extract changes nothing on screen: its "after" is its "before" (the model invents no change).
    const post = type === 'EXTRACT' ? l.screenshot : (lines[i + 1]?.screenshot ?? null);
    return {
      i,
      actionType: type,
      recorded,
      pre: l.screenshot,
      post,
      ...(type === 'EXTRACT' ? { variable: `extract_${extracts++}` } : {}),
    };
  });
}

/** What pass A is told about a step's action (ground truth from the recorder). */
export function describeAction(s: StepInput): Record<string, unknown> {
  const a = s.recorded.action;
  const el = s.recorded.element ?? s.recorded.focus;
  return {
    action_type: s.actionType,
    action:
      a.type === 'type' && a.secret
        ? { type: 'type', secret: 'a secret was typed; its value was not recorded' }
        : a,
    ...(el ? { element: { role: el.role, name: el.name, ...(el.secret ? { secret: true } : {}) } } : {}),
    ...(s.recorded.window ? { window: { app: s.recorded.window.app, title: s.recorded.window.title } } : {}),
    ...(s.variable ? { variable_name: s.variable } : {}),
  };
}

const Str = z.string().check(z.maxLength(4000));

/** Pass A's answer for one step. */
export const PassAAnswer = z.object({
  expected_current_state: Str.check(z.minLength(1)),
  intent: Str.check(z.minLength(1)),
  target: z.object({ primary: Str.check(z.minLength(1)), fallback: z.nullable(Str) }),
  post_action: z.array(Str).check(z.minLength(1), z.maxLength(2)),
  action_value: z.nullable(Str),
});
export type PassAAnswer = z.infer<typeof PassAAnswer>;

function issues(e: z.core.$ZodError): string[] {
  return e.issues.map((i) => `${i.path.length ? i.path.join('.') : '(the answer)'}: ${i.message}`);
}

export function checkPassA(
  s: StepInput,
): (json: unknown) => { ok: true; value: PassAAnswer } | { ok: false; problems: string[] } {
  return (json) => {
    const r = PassAAnswer.safeParse(json, { error: english });
    if (!r.success) return { ok: false, problems: issues(r.error) };
    const v = r.data.action_value;
    const problems: string[] = [];
    if (s.actionType === 'EXTRACT' && !v?.trim())
      problems.push('action_value: an EXTRACT step needs the refined query of what to read off the screen');
    if (s.actionType === 'KEYPRESS' && !v?.trim())
      problems.push('action_value: a KEYPRESS step needs the key pressed');
    if (problems.length) return { ok: false, problems };
    return { ok: true, value: r.data };
  };
}

/** Pass B's answer for the whole recording. */
export const PassBAnswer = z.object({
  detailed_task_description: Str,
  success_criteria: Str,
  task_params: z.array(
    z.object({
      name: z.string(),
      type: z.enum(['string', 'number', 'date', 'boolean']),
      description: Str,
      example: Str,
      sensitive: z.boolean(),
      optional: z.optional(z.boolean()),
    }),
  ),
  subtasks: z
    .array(
      z.object({
        text: Str.check(z.minLength(1)),
        expected_outcome: Str,
        /** An accessibility fact on screen when the subtask is done (null: none can be named). */
        outcome_check: z.optional(
          z.nullable(z.object({ role: z.optional(Str), name: z.optional(Str), value: z.optional(Str) })),
        ),
      }),
    )
    .check(z.minLength(1)),
  steps: z.array(z.object({ i: z.int(), subtask: z.int(), action_value: z.nullable(Str) })),
});
export type PassBAnswer = z.infer<typeof PassBAnswer>;

export interface Reflected {
  taskName: string;
  taskDescription: string;
  steps: StepInput[];
  cards: PassAAnswer[];
}

/** `{` and `}` of recorded text doubled, so that it is never read as a template. */
const literal = (s: string): string => s.replace(/[{}]/g, (c) => c + c);

/** The step's element as a locator, with a parameter's recorded value replaced by its template. */
function locatorOf(s: StepInput, params: readonly WorkflowParam[]): WorkflowLocator | undefined {
  const el = s.recorded.element ?? s.recorded.focus;
  const w = s.recorded.window;
  if (!el || !w) return undefined;
  const templ = (name: string): string => {
    let out = literal(name);
    for (const p of params)
      if (p.example.length >= 3 && !p.sensitive) out = out.split(literal(p.example)).join(`{${p.name}}`);
    return out;
  };
  return {
    app: literal(w.app),
    window_title: templ(w.title),
    role: el.role,
    name: templ(el.name),
    path: el.path.map((p) => ({ role: p.role, name: templ(p.name), index: p.index })),
  };
}

/**
 * The workflow of pass A's cards and pass B's answer: steps grouped into their subtasks (in order),
 * action values from pass B (KEYPRESS and EXTRACT keep pass A's when pass B gives none), extract
 * variables named, dependencies from the extracts each subtask's strings use.
 */
export function assemble(r: Reflected, b: PassBAnswer): { workflow: unknown; problems: string[] } {
  const problems: string[] = [];
  const byStep = new Map<number, PassBAnswer['steps'][number]>();
  for (const s of b.steps) {
    if (byStep.has(s.i)) problems.push(`steps: step ${s.i} is listed twice`);
    else if (s.i < 0 || s.i >= r.steps.length)
      problems.push(`steps: there is no step ${s.i} (steps are 0 to ${r.steps.length - 1})`);
    else byStep.set(s.i, s);
  }
  let last = 0;
  for (const s of r.steps) {
    const u = byStep.get(s.i);
    if (!u) {
      problems.push(`steps: step ${s.i} has no entry (every step needs its subtask and action_value)`);
      continue;
    }
    if (u.subtask < 0 || u.subtask >= b.subtasks.length)
      problems.push(
        `steps[${s.i}].subtask: there is no subtask ${u.subtask} (subtasks are 0 to ${b.subtasks.length - 1})`,
      );
    else if (u.subtask < last)
      problems.push(
        `steps[${s.i}].subtask: is ${u.subtask} after an earlier step in subtask ${last}: steps keep their recorded order, so subtasks follow one another`,
      );
    else last = u.subtask;
  }
  b.subtasks.forEach((_, k) => {
    if (!r.steps.some((s) => byStep.get(s.i)?.subtask === k))
      problems.push(`subtasks[${k}]: no step belongs to it`);
  });
  if (problems.length) return { workflow: null, problems };

  const params: WorkflowParam[] = b.task_params.map((p) => ({
    name: p.name,
    type: p.type,
    description: p.description,
    // a sensitive value is never kept in the workflow (issue 30): no example; replay asks for it
    example: p.sensitive ? '' : p.example,
    sensitive: p.sensitive,
    optional: p.optional ?? false,
  }));
  const secret = new Set(b.task_params.filter((p) => p.sensitive).map((p) => p.name));
  const typesSecret = (v: string | null): boolean =>
    v !== null && [...v.matchAll(/(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].some((m) => secret.has(m[1]!));
  const subtasks = b.subtasks.map((st, k) => {
    const steps: WorkflowStep[] = r.steps
      .filter((s) => byStep.get(s.i)!.subtask === k)
      .map((s, j) => {
        const a = r.cards[s.i]!;
        const given = byStep.get(s.i)!.action_value;
        const value =
          s.actionType === 'TYPE'
            ? given
            : s.actionType === 'KEYPRESS'
              ? (given ?? a.action_value)
              : s.actionType === 'EXTRACT'
                ? (a.action_value ?? given)
                : null;
        const locator = locatorOf(s, params);
        return {
          i: j,
          action_type: s.actionType,
          action_value: value,
          ...(s.variable ? { variable_name: s.variable } : {}),
          intent: a.intent,
          expected_current_state: a.expected_current_state,
          target: a.target,
          post_action: a.post_action,
          ...(locator ? { locator } : {}),
          // what was typed for a sensitive parameter is not kept as a recorded fact either
          recorded:
            s.actionType === 'TYPE' && typesSecret(value)
              ? { ...s.recorded, action: { type: 'type' as const, secret: true as const } }
              : s.recorded,
        };
      });
    const oc = st.outcome_check;
    // Only the fields given: an empty check would be refused by the schema, with a path to fix.
    const check = oc
      ? Object.fromEntries(
          (['role', 'name', 'value'] as const).flatMap((f) => (oc[f] !== undefined ? [[f, oc[f]]] : [])),
        )
      : undefined;
    return {
      subtask_i: k,
      text: st.text,
      expected_outcome: st.expected_outcome,
      dependencies: [] as string[],
      steps,
      ...(check ? { outcome_check: check } : {}),
    };
  });
  const workflow: Workflow = {
    version: 1,
    task_name: r.taskName,
    task_description_user: r.taskDescription,
    detailed_task_description: b.detailed_task_description,
    success_criteria: b.success_criteria,
    task_params: params,
    plan: { subtasks },
  };
  const producers = extractProducers(workflow);
  for (const [k, st] of subtasks.entries()) {
    const used = [
      st.text,
      st.expected_outcome,
      st.outcome_check?.name ?? '',
      st.outcome_check?.value ?? '',
      ...st.steps.flatMap((s) => stepStrings(s).map(([, v]) => v)),
    ].flatMap(templateNames);
    st.dependencies = [...new Set(used)].filter((n) => (producers.get(n) ?? Infinity) < k);
  }
  return { workflow, problems: [] };
}

/** Pass B's check: its shape, then the workflow it makes, validated with the workflow schema. */
export function checkPassB(
  r: Reflected,
): (json: unknown) => { ok: true; value: Workflow } | { ok: false; problems: string[] } {
  return (json) => {
    const parsed = PassBAnswer.safeParse(json, { error: english });
    if (!parsed.success) return { ok: false, problems: issues(parsed.error) };
    const a = assemble(r, parsed.data);
    if (a.problems.length) return { ok: false, problems: a.problems };
    const c = checkWorkflow(a.workflow);
    if (!c.ok) return { ok: false, problems: c.problems.map((p) => `${p.path}: ${p.message}`) };
    return { ok: true, value: c.workflow };
  };
}

/** What pass B is told about each step: pass A's card with the recorded action. */
export function stepSummaries(r: Reflected): unknown[] {
  return r.steps.map((s) => ({
    i: s.i,
    ...describeAction(s),
    ...r.cards[s.i],
    ...(s.recorded.details !== undefined ? { details: s.recorded.details } : {}),
  }));
}
