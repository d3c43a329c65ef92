/**
 * A workflow: what `reflect` makes of a recording, what the inspector's workflow editor edits, and what
 * `replay` runs (seed 002). It lives in a card's folder as `schema.json`. This is its one definition:
 * reflect validates the model's work with it, the host validates every save with it, and replay reads
 * the file with it, so the three cannot disagree. docs/workflows.md describes it field by field.
 *
 * The field names follow seed 002's schema.json (snake_case) so a workflow from the seed's tools reads
 * the same. Objects are strict: an unknown key is an error (a typo in a hand edit is shown, not dropped).
 */
import * as z from 'zod/mini';

/** The file a workflow lives in, in its card's folder. */
export const WORKFLOW_FILE = 'schema.json';

/**
 * A card's workflow file: `cards/fill-form.md` → `cards/fill-form/schema.json` (the card's folder sits
 * beside its markdown file, so the two move, diff and commit together).
 */
export function workflowFileFor(cardFile: string): string {
  return `${cardFile.replace(/\.md$/i, '')}/${WORKFLOW_FILE}`;
}

/** A parameter's or an extract's name: what `{name}` templates refer to. */
const IDENT = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const Ident = z
  .string()
  .check(z.regex(IDENT, 'must be a name of letters, digits and _ (not starting with a digit)'));
const Text = z.string().check(z.maxLength(20_000));
const Rect = z.tuple([z.number(), z.number(), z.number(), z.number()]);

/** One parameter of the task: what a person may change between runs (`{name}` in the plan's strings). */
export const WorkflowParam = z.strictObject({
  name: Ident,
  type: z.enum(['string', 'number', 'date', 'boolean']),
  description: Text,
  /** The value recorded (or a sample): replay's default when a run gives none. */
  example: Text,
  /** Passwords, tokens: never shown in logs or reports. */
  sensitive: z.boolean(),
  /** A run may leave it out (templates using it then render the example). */
  optional: z.boolean(),
});
export type WorkflowParam = z.infer<typeof WorkflowParam>;

/** Seed 002's action types. */
export const WorkflowActionType = z.enum([
  'CLICK',
  'DOUBLE_CLICK',
  'RIGHT_CLICK',
  'MIDDLE_CLICK',
  'TYPE',
  'KEYPRESS',
  'SCROLL',
  'DRAG',
  'EXTRACT',
]);
export type WorkflowActionType = z.infer<typeof WorkflowActionType>;

/** A step of an element's path in its window's accessibility tree (as the recorder writes it). */
export const ElementPathStep = z.strictObject({ role: z.string(), name: z.string(), index: z.int() });
export type ElementPathStep = z.infer<typeof ElementPathStep>;

/** An accessibility element as the recorder saw it (native's ManifestElement). */
export const RecordedElement = z.strictObject({
  role: z.string(),
  name: z.string(),
  bounds: Rect,
  path: z.array(ElementPathStep),
  secret: z.optional(z.literal(true)),
});
export type RecordedElement = z.infer<typeof RecordedElement>;

const Button = z.enum(['left', 'middle', 'right']);
/** The recorder's step action, verbatim (native's StepAction). */
export const RecordedAction = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('type'),
    text: z.optional(z.string()),
    secret: z.optional(z.literal(true)),
  }),
  z.strictObject({ type: z.literal('press'), key: z.string() }),
  z.strictObject({
    type: z.literal('click'),
    x: z.number(),
    y: z.number(),
    button: Button,
    count: z.optional(z.int()),
  }),
  z.strictObject({
    type: z.literal('drag'),
    from: z.tuple([z.number(), z.number()]),
    to: z.tuple([z.number(), z.number()]),
    button: Button,
  }),
  z.strictObject({ type: z.literal('scroll'), x: z.number(), y: z.number(), dx: z.number(), dy: z.number() }),
  z.strictObject({
    type: z.literal('extract'),
    query: z.string(),
    candidates: z.optional(z.array(z.string())),
  }),
]);
export type RecordedAction = z.infer<typeof RecordedAction>;

/**
 * What the recorder wrote for the step (manifest.jsonl), kept as facts: never templated, never edited
 * by the editor. Replay finds the element again from them; a person can see where a step came from.
 */
export const RecordedFacts = z.strictObject({
  /** The recording's folder name (`rec-…`) and the step's number in its manifest. */
  recording: z.string(),
  step: z.int(),
  /** The pre-action screenshot, relative to the recording's folder. */
  screenshot: z.string(),
  action: RecordedAction,
  window: z.nullable(z.strictObject({ id: z.number(), app: z.string(), title: z.string(), bounds: Rect })),
  /** Pointer steps: the element under the pointer. */
  element: z.optional(RecordedElement),
  /** Key steps: the focused element. */
  focus: z.optional(RecordedElement),
  /** The person's Ctrl+I note for the step. */
  details: z.optional(z.string()),
});
export type RecordedFacts = z.infer<typeof RecordedFacts>;

/**
 * How replay finds the step's element again without a model: the recorded element's role, name and
 * path, where a name that held a parameter's recorded value holds `{param}` instead.
 */
export const WorkflowLocator = z.strictObject({
  app: z.string(),
  window_title: z.string(),
  role: z.string().check(z.minLength(1, 'a locator needs the element\'s role (e.g. "push button")')),
  name: z.string(),
  path: z.array(
    z.strictObject({
      role: z.string().check(z.minLength(1, 'a path step needs a role')),
      name: z.string(),
      index: z.int().check(z.minimum(0, 'is a position among same-role siblings, from 0')),
    }),
  ),
});
export type WorkflowLocator = z.infer<typeof WorkflowLocator>;

/** Where the step's target is, in words a vision model can act on (no coordinates). */
export const WorkflowTarget = z.strictObject({ primary: Text, fallback: z.nullable(Text) });
export type WorkflowTarget = z.infer<typeof WorkflowTarget>;

export const WorkflowStep = z.strictObject({
  /** The step's position in its subtask, from 0. */
  i: z.int().check(z.minimum(0)),
  action_type: WorkflowActionType,
  /**
   * TYPE: the text (templates allowed; null when an upstream extract supplies it), KEYPRESS: the key,
   * EXTRACT: what to read off the screen. null for the others.
   */
  action_value: z.nullable(Text),
  /** EXTRACT steps: the name later subtasks use for the value read (`{extract_0}`). */
  variable_name: z.optional(Ident),
  intent: Text,
  expected_current_state: Text,
  target: WorkflowTarget,
  /** 1-2 short lines: what changes on screen after the action. */
  post_action: z.array(Text).check(z.maxLength(4)),
  locator: z.optional(WorkflowLocator),
  /** Absent for steps a person added in the editor. */
  recorded: z.optional(RecordedFacts),
});
export type WorkflowStep = z.infer<typeof WorkflowStep>;

/**
 * An accessibility fact that is there when a subtask is done (role, name, value; name and value may
 * hold templates): replay checks it on screen instead of taking a model's `done` for it.
 */
export const OutcomeCheck = z.strictObject({
  role: z.optional(z.string()),
  name: z.optional(Text),
  value: z.optional(Text),
});
export type OutcomeCheck = z.infer<typeof OutcomeCheck>;

export const WorkflowSubtask = z.strictObject({
  /** The subtask's position in the plan, from 0. */
  subtask_i: z.int().check(z.minimum(0)),
  text: Text.check(z.minLength(1)),
  /** What is true on screen when the subtask is done: replay's `done` waits for it. */
  expected_outcome: Text,
  /** Extract variables of earlier subtasks whose values this one receives. */
  dependencies: z.array(Ident),
  steps: z.array(WorkflowStep),
  outcome_check: z.optional(OutcomeCheck),
});
export type WorkflowSubtask = z.infer<typeof WorkflowSubtask>;

const WorkflowShape = z.strictObject({
  version: z.literal(1),
  task_name: Text.check(z.minLength(1)),
  task_description_user: Text,
  detailed_task_description: Text,
  success_criteria: Text,
  task_params: z.array(WorkflowParam),
  plan: z.strictObject({ subtasks: z.array(WorkflowSubtask) }),
});

/** Matches a `{name}` template; `{{` and `}}` stand for literal braces. */
const TEMPLATE = /\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The names a string's `{name}` templates refer to, in order of first use. */
export function templateNames(s: string): string[] {
  const out: string[] = [];
  for (const m of s.matchAll(TEMPLATE)) if (m[1] !== undefined && !out.includes(m[1])) out.push(m[1]);
  return out;
}

/**
 * Fills a string's `{name}` templates from `values`; `{{`/`}}` become `{`/`}`. A name without a value
 * is an error (validation makes sure every template of a valid workflow has a value to fill it).
 */
export function renderTemplate(s: string, values: Readonly<Record<string, string>>): string {
  return s.replace(TEMPLATE, (m, name: string | undefined) => {
    if (name === undefined) return m[0]!;
    const v = values[name];
    if (v === undefined) throw new Error(`no value for {${name}} in "${s}"`);
    return v;
  });
}

/** The templated strings of a step (recorded facts are never templated). */
export function stepStrings(s: WorkflowStep): Array<[string, string]> {
  const out: Array<[string, string]> = [
    ['intent', s.intent],
    ['expected_current_state', s.expected_current_state],
    ['target.primary', s.target.primary],
  ];
  if (s.action_value !== null) out.push(['action_value', s.action_value]);
  if (s.target.fallback !== null) out.push(['target.fallback', s.target.fallback]);
  s.post_action.forEach((p, i) => out.push([`post_action[${i}]`, p]));
  if (s.locator) {
    out.push(['locator.name', s.locator.name]);
    s.locator.path.forEach((p, i) => out.push([`locator.path[${i}].name`, p.name]));
  }
  return out;
}

/** Where each extract variable is produced: its subtask's index. */
export function extractProducers(w: Pick<Workflow, 'plan'>): Map<string, number> {
  const out = new Map<string, number>();
  w.plan.subtasks.forEach((st, k) => {
    for (const s of st.steps)
      if (s.variable_name !== undefined && !out.has(s.variable_name)) out.set(s.variable_name, k);
  });
  return out;
}

/**
 * A locator replay can resolve: it names a window (app or title) and its element by a name or a path,
 * and a path ends at the element itself (replay walks the path and then checks role and name).
 */
function locatorCheck(
  l: WorkflowLocator,
  at: Array<string | number>,
  issue: (path: Array<string | number>, message: string) => void,
): void {
  if (l.app.trim() === '' && l.window_title.trim() === '')
    issue([...at, 'window_title'], 'a locator needs the window: its title or its app (or both)');
  if (l.name === '' && l.path.length === 0)
    issue(
      [...at, 'name'],
      'a locator with neither a name nor a path would match any element of its role: give one, or remove the locator',
    );
  const last = l.path.at(-1);
  if (last && (last.role !== l.role || last.name !== l.name))
    issue(
      [...at, 'path', l.path.length - 1],
      `the path must end at the element itself (${l.role} "${l.name}"), not at ${last.role} "${last.name}"`,
    );
}

type Ctx = Parameters<Parameters<typeof z.superRefine<z.infer<typeof WorkflowShape>>>[0]>[1];

/** The rules across fields: names unique, templates known, dependencies upstream, values by action type. */
function crossCheck(w: z.infer<typeof WorkflowShape>, ctx: Ctx): void {
  const issue = (path: Array<string | number>, message: string): void =>
    ctx.addIssue({ code: 'custom', message, path, input: w });
  const params = new Set<string>();
  const sensitive = new Set(w.task_params.filter((p) => p.sensitive).map((p) => p.name));
  w.task_params.forEach((p, i) => {
    if (params.has(p.name)) issue(['task_params', i, 'name'], `parameter "${p.name}" is declared twice`);
    params.add(p.name);
  });
  const producers = new Map<string, number>();
  w.plan.subtasks.forEach((st, k) => {
    if (st.subtask_i !== k)
      issue(
        ['plan', 'subtasks', k, 'subtask_i'],
        `is ${st.subtask_i} but the subtask is number ${k} in the plan`,
      );
    st.steps.forEach((s, j) => {
      const at = ['plan', 'subtasks', k, 'steps', j];
      if (s.i !== j) issue([...at, 'i'], `is ${s.i} but the step is number ${j} in its subtask`);
      const v = s.action_value;
      if (s.action_type === 'EXTRACT') {
        if (v === null || v.trim() === '')
          issue([...at, 'action_value'], 'an EXTRACT step needs what to read off the screen');
        if (s.variable_name === undefined)
          issue([...at, 'variable_name'], 'an EXTRACT step needs a variable name for the value it reads');
      } else {
        if (s.variable_name !== undefined)
          issue(
            [...at, 'variable_name'],
            `only EXTRACT steps name a variable (this one is ${s.action_type})`,
          );
        if (s.action_type === 'KEYPRESS' && (v === null || v.trim() === ''))
          issue([...at, 'action_value'], 'a KEYPRESS step needs the key to press (e.g. "Enter", "ctrl+a")');
        if (s.action_type !== 'KEYPRESS' && s.action_type !== 'TYPE' && v !== null)
          issue([...at, 'action_value'], `a ${s.action_type} step has no value: use null`);
      }
      if (s.locator) locatorCheck(s.locator, [...at, 'locator'], issue);
      if (s.variable_name !== undefined) {
        if (params.has(s.variable_name))
          issue([...at, 'variable_name'], `"${s.variable_name}" is already a parameter's name`);
        else if (producers.has(s.variable_name))
          issue([...at, 'variable_name'], `"${s.variable_name}" is already extracted by another step`);
        else producers.set(s.variable_name, k);
      }
    });
  });
  w.plan.subtasks.forEach((st, k) => {
    const deps = new Set<string>();
    st.dependencies.forEach((d, n) => {
      const at = ['plan', 'subtasks', k, 'dependencies', n];
      const from = producers.get(d);
      if (deps.has(d)) issue(at, `"${d}" is listed twice`);
      else if (from === undefined) issue(at, `"${d}" is not extracted by any step of the plan`);
      else if (from === k)
        issue(at, `"${d}" is extracted by this subtask itself: only upstream extracts can be dependencies`);
      else if (from > k)
        issue(
          at,
          `"${d}" is extracted by subtask ${from}, which runs after this one: only upstream extracts can be dependencies (no cycles)`,
        );
      deps.add(d);
    });
    const known = (name: string): boolean => params.has(name) || deps.has(name);
    const check = (path: Array<string | number>, s: string): void => {
      for (const name of templateNames(s)) {
        if (known(name)) continue;
        const from = producers.get(name);
        issue(
          path,
          from !== undefined && from < k
            ? `{${name}} is an upstream extract: add "${name}" to this subtask's dependencies`
            : `{${name}} is neither a parameter${params.size ? ` (${[...params].join(', ')})` : ''} nor an upstream extract this subtask depends on`,
        );
      }
    };
    const oc = st.outcome_check;
    if (oc && oc.role === undefined && oc.name === undefined && oc.value === undefined)
      issue(
        ['plan', 'subtasks', k, 'outcome_check'],
        'an outcome check needs a role, a name or a value to look for (or remove it)',
      );
    check(['plan', 'subtasks', k, 'text'], st.text);
    check(['plan', 'subtasks', k, 'expected_outcome'], st.expected_outcome);
    for (const f of ['name', 'value'] as const) {
      const v = st.outcome_check?.[f];
      if (v === undefined) continue;
      check(['plan', 'subtasks', k, 'outcome_check', f], v);
      const secret = templateNames(v).find((n) => sensitive.has(n));
      if (secret !== undefined)
        issue(
          ['plan', 'subtasks', k, 'outcome_check', f],
          `{${secret}} is a sensitive parameter: a check cannot look for it (a password field's value is never read)`,
        );
    }
    st.steps.forEach((s, j) => {
      for (const [field, value] of stepStrings(s))
        check(['plan', 'subtasks', k, 'steps', j, ...field.split('.')], value);
    });
  });
}

/** A workflow file, with every rule of docs/workflows.md checked. */
export const Workflow = WorkflowShape.check(
  // Only on a well-formed workflow: the rules across fields read the fields.
  z.superRefine(crossCheck, { when: (payload) => payload.issues.length === 0 }),
);
export type Workflow = z.infer<typeof WorkflowShape>;

/** One thing wrong with a workflow: where (`plan.subtasks[1].text`) and what. */
export interface WorkflowProblem {
  path: string;
  message: string;
}

export type WorkflowCheck = { ok: true; workflow: Workflow } | { ok: false; problems: WorkflowProblem[] };

/** Messages in English whatever the process configured (zod/mini has none of its own). */
const english = z.locales.en().localeError;

function pathText(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out || '(the whole workflow)';
}

/** Validates anything (parsed JSON, an edited object) as a workflow; problems are listed, never thrown. */
export function checkWorkflow(raw: unknown): WorkflowCheck {
  const r = Workflow.safeParse(raw, { error: english });
  if (r.success) return { ok: true, workflow: r.data };
  return { ok: false, problems: r.error.issues.map((i) => ({ path: pathText(i.path), message: i.message })) };
}

/** Validates the text of a schema.json. */
export function parseWorkflowText(text: string): WorkflowCheck {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, problems: [{ path: '(the file)', message: `not JSON: ${(e as Error).message}` }] };
  }
  return checkWorkflow(raw);
}

/** The problems as lines a person (or a model asked to fix its answer) can read. */
export function formatWorkflowProblems(problems: readonly WorkflowProblem[]): string {
  return problems.map((p) => `- ${p.path}: ${p.message}`).join('\n');
}

/**
 * The file's text: 2-space JSON with the keys in the order of this module's definitions (parsing puts
 * them so), whatever order they came in, so saves diff line by line. Throws on an invalid workflow.
 */
export function serializeWorkflow(w: unknown): string {
  const r = checkWorkflow(w);
  if (!r.ok) throw new Error(`not a valid workflow:\n${formatWorkflowProblems(r.problems)}`);
  return JSON.stringify(r.workflow, null, 2) + '\n';
}

/**
 * A sensitive parameter's value kept by the supervisor (supervisor/src/common/secrets.ts): what a card's
 * `params:` holds in its place, `{ secret: "s-…" }` (docs/workflows.md, "Sensitive parameters").
 */
export const PARAM_SECRET_REF = /^s-[0-9a-f]{32}$/;

/** The references a card's `params:` front matter holds, by parameter name. */
export function paramSecretRefs(params: unknown): Record<string, string> {
  if (!params || typeof params !== 'object' || Array.isArray(params)) return {};
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(params as Record<string, unknown>)) {
    const ref = v && typeof v === 'object' ? (v as { secret?: unknown }).secret : undefined;
    if (typeof ref === 'string' && PARAM_SECRET_REF.test(ref)) out[name] = ref;
  }
  return out;
}
