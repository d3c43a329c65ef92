/**
 * The inspector's workflow section and its editor (seed 002's Edit Workflow, docs/workflows.md):
 * parameters (add, delete, rename with their `{name}` templates, example values), subtasks (text,
 * expected outcome and its outcome check, add, delete, reorder), steps (intent, action fields, the
 * locator replay finds the element by), dependencies on upstream extracts, and a review of the plan. Every edit is checked by the host with the one workflow
 * schema and its problems are shown; Save writes only a valid whole.
 */
import { createContext, useContext, useEffect, useState } from 'react';
import type {
  Workflow,
  WorkflowActionType,
  WorkflowParam,
  WorkflowProblem,
  WorkflowStep,
  WorkflowSubtask,
} from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';
import {
  copy,
  locatorFor,
  move,
  newStep,
  newSubtask,
  renameParam,
  renumber,
  setCheckField,
  setLocatorElement,
  upstreamExtracts,
  type CardWorkflowView,
} from '../shared/workflow-edit.ts';

/** The schema's choices (action and parameter types), as the host sent them with the workflow. */
const Choices = createContext<Pick<CardWorkflowView, 'actionTypes' | 'paramTypes'>>({
  actionTypes: [],
  paramTypes: [],
});

type Tab = 'params' | 'subtasks' | 'review';

/** The card's workflow in the inspector: a summary, and the editor behind "Edit workflow". */
export function WorkflowSection({ api, cardId, locked }: { api: BoardApi; cardId: string; locked: boolean }) {
  const [view, setView] = useState<CardWorkflowView>();
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState('');
  const load = (): void => {
    api.workflow({ id: cardId }).then(setView, (e: Error) => setError(e.message));
  };
  useEffect(load, [api, cardId]);
  if (!view || (view.text === undefined && !view.problems.length)) return null;
  const w = view.workflow;
  return (
    <section className="workflow" aria-label="Workflow">
      <h3>
        Workflow
        {w && !locked && !editing && (
          <button type="button" onClick={() => setEditing(true)}>
            Edit workflow
          </button>
        )}
      </h3>
      {error && <div className="banner error">{error}</div>}
      {!w && (
        <div className="banner error">
          {view.file} is not a valid workflow; fix it in a text editor:
          <ProblemList problems={view.problems} />
        </div>
      )}
      {w && !editing && (
        <p className="muted">
          {view.file}: {w.plan.subtasks.length} subtasks,{' '}
          {w.plan.subtasks.reduce((n, s) => n + s.steps.length, 0)} steps, parameters:{' '}
          {w.task_params.map((p) => p.name).join(', ') || 'none'}
        </p>
      )}
      {w && editing && (
        <Choices.Provider value={view}>
          <WorkflowEditor
            api={api}
            cardId={cardId}
            initial={w}
            base={view.text}
            onClose={(saved) => {
              setEditing(false);
              if (saved) load();
            }}
          />
        </Choices.Provider>
      )}
    </section>
  );
}

function ProblemList({ problems }: { problems: WorkflowProblem[] }) {
  return (
    <ul className="problems">
      {problems.map((p, i) => (
        <li key={i}>
          <code>{p.path}</code>: {p.message}
        </li>
      ))}
    </ul>
  );
}

export function WorkflowEditor({
  api,
  cardId,
  initial,
  base,
  onClose,
}: {
  api: BoardApi;
  cardId: string;
  initial: Workflow;
  base: string | undefined;
  onClose: (saved: boolean) => void;
}) {
  const [w, setW] = useState<Workflow>(() => copy(initial));
  const [tab, setTab] = useState<Tab>('params');
  const [problems, setProblems] = useState<WorkflowProblem[]>([]);
  const [checking, setChecking] = useState(false);
  const [error, setError] = useState('');
  const edit = (f: (w: Workflow) => Workflow): void => setW((cur) => renumber(f(copy(cur))));
  const key = JSON.stringify(w);
  useEffect(() => {
    setChecking(true);
    const t = setTimeout(() => {
      api.checkWorkflow({ id: cardId, workflow: w }).then(
        (r) => {
          setProblems(r.problems);
          setChecking(false);
        },
        (e: Error) => setError(e.message),
      );
    }, 250);
    return () => clearTimeout(t);
    // the workflow's JSON is the dependency (a new object after every edit, equal or not)
  }, [key]);
  const save = (): void => {
    api.saveWorkflow({ id: cardId, workflow: w, ...(base !== undefined ? { base } : {}) }).then(
      (r) => (r.saved ? onClose(true) : setProblems(r.problems)),
      (e: Error) => setError(e.message),
    );
  };
  const tabs: Array<[Tab, string]> = [
    ['params', `Parameters (${w.task_params.length})`],
    ['subtasks', `Subtasks (${w.plan.subtasks.length})`],
    ['review', 'Review'],
  ];
  return (
    <div className="workflow-editor">
      <div role="tablist" aria-label="Workflow editor" className="tabs">
        {tabs.map(([t, label]) => (
          <button
            key={t}
            type="button"
            role="tab"
            aria-selected={tab === t}
            className={tab === t ? 'selected' : ''}
            onClick={() => setTab(t)}
          >
            {label}
          </button>
        ))}
      </div>
      <div role="status" aria-live="polite" className={problems.length ? 'banner error' : 'banner note'}>
        {problems.length ? (
          <>
            <div>
              {problems.length} {problems.length === 1 ? 'problem' : 'problems'}: not saved until fixed
              <ProblemList problems={problems} />
            </div>
          </>
        ) : checking ? (
          'Checking…'
        ) : (
          'The workflow is valid.'
        )}
      </div>
      {error && <div className="banner error">{error}</div>}
      <div role="tabpanel" aria-label={tabs.find(([t]) => t === tab)![1]}>
        {tab === 'params' && <ParamsEditor w={w} edit={edit} />}
        {tab === 'subtasks' && <SubtasksEditor w={w} edit={edit} />}
        {tab === 'review' && <Review w={w} />}
      </div>
      <div className="workflow-buttons">
        <button type="button" className="primary" disabled={checking || problems.length > 0} onClick={save}>
          Save workflow
        </button>
        <button type="button" onClick={() => onClose(false)}>
          Cancel
        </button>
      </div>
    </div>
  );
}

/** A parameter's name: renamed (with its templates) when the field is left, not at every key. */
function ParamName({ value, rename, label }: { value: string; rename: (to: string) => void; label: string }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  return (
    <input
      aria-label={label}
      value={draft}
      onChange={(e) => setDraft(e.target.value)}
      onBlur={() => draft !== value && rename(draft)}
      onKeyDown={(e) => e.key === 'Enter' && draft !== value && rename(draft)}
    />
  );
}

type Edit = (f: (w: Workflow) => Workflow) => void;

function ParamsEditor({ w, edit }: { w: Workflow; edit: Edit }) {
  const { paramTypes } = useContext(Choices);
  const set = (i: number, patch: Partial<WorkflowParam>): void =>
    edit((x) => ({ ...x, task_params: x.task_params.map((p, j) => (j === i ? { ...p, ...patch } : p)) }));
  return (
    <div className="workflow-params">
      <p className="muted">
        Use a parameter as <code>{'{name}'}</code> in subtasks and steps; renaming one renames its templates.
      </p>
      {w.task_params.map((p, i) => (
        <fieldset key={i} className="workflow-param">
          <legend>Parameter {i + 1}</legend>
          <label>
            Name{' '}
            <ParamName
              label={`Parameter ${i + 1} name`}
              value={p.name}
              rename={(to) => edit((x) => renameParam(x, i, to))}
            />
          </label>
          <label>
            Example{' '}
            <input
              aria-label={`Parameter ${i + 1} example`}
              value={p.example}
              onChange={(e) => set(i, { example: e.target.value })}
            />
          </label>
          <label>
            Type{' '}
            <select
              aria-label={`Parameter ${i + 1} type`}
              value={p.type}
              onChange={(e) => set(i, { type: e.target.value as WorkflowParam['type'] })}
            >
              {paramTypes.map((t) => (
                <option key={t}>{t}</option>
              ))}
            </select>
          </label>
          <label className="wide">
            Description{' '}
            <input
              aria-label={`Parameter ${i + 1} description`}
              value={p.description}
              onChange={(e) => set(i, { description: e.target.value })}
            />
          </label>
          <label>
            <input
              type="checkbox"
              checked={p.sensitive}
              onChange={(e) => set(i, { sensitive: e.target.checked })}
            />{' '}
            Sensitive
          </label>
          <label>
            <input
              type="checkbox"
              checked={p.optional}
              onChange={(e) => set(i, { optional: e.target.checked })}
            />{' '}
            Optional
          </label>
          <button
            type="button"
            className="danger"
            onClick={() => edit((x) => ({ ...x, task_params: x.task_params.filter((_, j) => j !== i) }))}
          >
            Delete parameter {p.name}
          </button>
        </fieldset>
      ))}
      <button
        type="button"
        onClick={() =>
          edit((x) => ({
            ...x,
            task_params: [
              ...x.task_params,
              {
                name: `param_${x.task_params.length + 1}`,
                type: 'string',
                description: '',
                example: '',
                sensitive: false,
                optional: false,
              },
            ],
          }))
        }
      >
        Add parameter
      </button>
    </div>
  );
}

function SubtasksEditor({ w, edit }: { w: Workflow; edit: Edit }) {
  const setSub = (k: number, f: (s: WorkflowSubtask) => WorkflowSubtask): void =>
    edit((x) => ({ ...x, plan: { subtasks: x.plan.subtasks.map((s, j) => (j === k ? f(s) : s)) } }));
  const n = w.plan.subtasks.length;
  return (
    <div className="workflow-subtasks">
      {w.plan.subtasks.map((st, k) => {
        const upstream = upstreamExtracts(w, k);
        // a dependency the plan no longer offers upstream (after a move) stays listed, so it can be removed
        const offered = [...new Set([...upstream, ...st.dependencies])];
        return (
          <fieldset key={k} className="workflow-subtask">
            <legend>Subtask {k + 1}</legend>
            <div className="row-buttons" role="group" aria-label={`Subtask ${k + 1} actions`}>
              <button
                type="button"
                disabled={k === 0}
                onClick={() => edit((x) => ({ ...x, plan: { subtasks: move(x.plan.subtasks, k, k - 1) } }))}
                aria-label={`Move subtask ${k + 1} up`}
              >
                ↑ Up
              </button>
              <button
                type="button"
                disabled={k === n - 1}
                onClick={() => edit((x) => ({ ...x, plan: { subtasks: move(x.plan.subtasks, k, k + 1) } }))}
                aria-label={`Move subtask ${k + 1} down`}
              >
                ↓ Down
              </button>
              <button
                type="button"
                className="danger"
                onClick={() =>
                  edit((x) => ({ ...x, plan: { subtasks: x.plan.subtasks.filter((_, j) => j !== k) } }))
                }
                aria-label={`Delete subtask ${k + 1}`}
              >
                Delete subtask
              </button>
            </div>
            <label className="wide">
              Text{' '}
              <textarea
                aria-label={`Subtask ${k + 1} text`}
                value={st.text}
                rows={2}
                onChange={(e) => setSub(k, (s) => ({ ...s, text: e.target.value }))}
              />
            </label>
            <label className="wide">
              Expected outcome{' '}
              <textarea
                aria-label={`Subtask ${k + 1} expected outcome`}
                value={st.expected_outcome}
                rows={2}
                onChange={(e) => setSub(k, (s) => ({ ...s, expected_outcome: e.target.value }))}
              />
            </label>
            <OutcomeCheckEditor
              k={k}
              check={st.outcome_check}
              set={(c) =>
                setSub(k, (s) => {
                  const { outcome_check: _old, ...rest } = s;
                  void _old;
                  return c ? { ...rest, outcome_check: c } : rest;
                })
              }
            />
            <div className="dependencies" role="group" aria-label={`Subtask ${k + 1} dependencies`}>
              Depends on: {offered.length === 0 && <span className="muted">no upstream extracts</span>}
              {offered.map((v) => (
                <label key={v}>
                  <input
                    type="checkbox"
                    checked={st.dependencies.includes(v)}
                    onChange={(e) =>
                      setSub(k, (s) => ({
                        ...s,
                        dependencies: e.target.checked
                          ? [...s.dependencies, v]
                          : s.dependencies.filter((d) => d !== v),
                      }))
                    }
                  />{' '}
                  {v}
                </label>
              ))}
            </div>
            <StepsEditor k={k} steps={st.steps} set={(steps) => setSub(k, (s) => ({ ...s, steps }))} />
          </fieldset>
        );
      })}
      <button
        type="button"
        onClick={() => edit((x) => ({ ...x, plan: { subtasks: [...x.plan.subtasks, newSubtask()] } }))}
      >
        Add subtask
      </button>
    </div>
  );
}

function StepsEditor({
  k,
  steps,
  set,
}: {
  k: number;
  steps: WorkflowStep[];
  set: (steps: WorkflowStep[]) => void;
}) {
  const { actionTypes } = useContext(Choices);
  const patch = (i: number, p: Partial<WorkflowStep>): void =>
    set(steps.map((s, j) => (j === i ? { ...s, ...p } : s)));
  const name = (i: number): string => `Subtask ${k + 1} step ${i + 1}`;
  return (
    <ol className="workflow-steps">
      {steps.map((s, i) => (
        <li key={i}>
          <div className="step-fields">
            <label>
              Action{' '}
              <select
                aria-label={`${name(i)} action type`}
                value={s.action_type}
                onChange={(e) => {
                  const t = e.target.value as WorkflowActionType;
                  const { variable_name: _drop, ...rest } = s;
                  void _drop;
                  set(
                    steps.map((x, j) =>
                      j === i
                        ? {
                            ...rest,
                            action_type: t,
                            ...(t === 'EXTRACT'
                              ? { variable_name: s.variable_name ?? `extract_${k}_${i}` }
                              : {}),
                            action_value:
                              t === 'TYPE' || t === 'KEYPRESS' || t === 'EXTRACT'
                                ? (s.action_value ?? '')
                                : null,
                          }
                        : x,
                    ),
                  );
                }}
              >
                {actionTypes.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </label>
            {(s.action_type === 'TYPE' || s.action_type === 'KEYPRESS' || s.action_type === 'EXTRACT') && (
              <label>
                {s.action_type === 'EXTRACT' ? 'Query' : 'Value'}{' '}
                <input
                  aria-label={`${name(i)} action value`}
                  value={s.action_value ?? ''}
                  placeholder={s.action_type === 'TYPE' ? 'empty: from an upstream extract' : ''}
                  onChange={(e) =>
                    patch(i, {
                      action_value: e.target.value === '' && s.action_type === 'TYPE' ? null : e.target.value,
                    })
                  }
                />
              </label>
            )}
            {s.action_type === 'EXTRACT' && (
              <label>
                Variable{' '}
                <input
                  aria-label={`${name(i)} variable name`}
                  value={s.variable_name ?? ''}
                  onChange={(e) => patch(i, { variable_name: e.target.value })}
                />
              </label>
            )}
            <label className="wide">
              Intent{' '}
              <input
                aria-label={`${name(i)} intent`}
                value={s.intent}
                onChange={(e) => patch(i, { intent: e.target.value })}
              />
            </label>
            <label className="wide">
              Target{' '}
              <input
                aria-label={`${name(i)} target`}
                value={s.target.primary}
                onChange={(e) => patch(i, { target: { ...s.target, primary: e.target.value } })}
              />
            </label>
          </div>
          <LocatorEditor
            label={name(i)}
            step={s}
            set={(locator) => {
              const { locator: _old, ...rest } = s;
              void _old;
              set(steps.map((x, j) => (j === i ? (locator ? { ...rest, locator } : rest) : x)));
            }}
          />
          <div className="row-buttons" role="group" aria-label={`${name(i)} actions`}>
            <button
              type="button"
              aria-label={`Move ${name(i).toLowerCase()} up`}
              disabled={i === 0}
              onClick={() => set(move(steps, i, i - 1))}
            >
              ↑
            </button>
            <button
              type="button"
              aria-label={`Move ${name(i).toLowerCase()} down`}
              disabled={i === steps.length - 1}
              onClick={() => set(move(steps, i, i + 1))}
            >
              ↓
            </button>
            <button
              type="button"
              className="danger"
              aria-label={`Delete ${name(i).toLowerCase()}`}
              onClick={() => set(steps.filter((_, j) => j !== i))}
            >
              Delete
            </button>
          </div>
        </li>
      ))}
      <li>
        <button type="button" onClick={() => set([...steps, newStep()])}>
          Add a step to subtask {k + 1}
        </button>
      </li>
    </ol>
  );
}

type Locator = NonNullable<WorkflowStep['locator']>;

/**
 * A step's locator (the accessibility facts replay finds its element by, without a model): shown,
 * edited field by field, removed (the step then goes to the model), or made again from the recording.
 */
function LocatorEditor({
  label,
  step,
  set,
}: {
  label: string;
  step: WorkflowStep;
  set: (l: Locator | undefined) => void;
}) {
  const l = step.locator;
  const add = step.recorded?.element || step.recorded?.focus ? 'Add the recorded locator' : 'Add a locator';
  if (!l)
    return (
      <div className="locator muted">
        No locator: replay asks the model for this step.{' '}
        <button
          type="button"
          aria-label={`${add} to ${label.toLowerCase()}`}
          onClick={() => set(locatorFor(step))}
        >
          {add}
        </button>
      </div>
    );
  const field = (f: 'app' | 'window_title', title: string) => (
    <label>
      {title}{' '}
      <input
        aria-label={`${label} locator ${title.toLowerCase()}`}
        value={l[f]}
        onChange={(e) => set({ ...l, [f]: e.target.value })}
      />
    </label>
  );
  const setPath = (k: number, p: Partial<Locator['path'][number]>): void =>
    set({ ...l, path: l.path.map((x, j) => (j === k ? { ...x, ...p } : x)) });
  return (
    <details className="locator">
      <summary title="how replay finds the element without a model">
        Locator: {l.role} “{l.name}” in {l.window_title || l.app}
      </summary>
      <div className="step-fields" role="group" aria-label={`${label} locator`}>
        {field('app', 'App')}
        {field('window_title', 'Window title')}
        <label>
          Role{' '}
          <input
            aria-label={`${label} locator role`}
            value={l.role}
            onChange={(e) => set(setLocatorElement(l, { role: e.target.value }))}
          />
        </label>
        <label>
          Name{' '}
          <input
            aria-label={`${label} locator name`}
            value={l.name}
            onChange={(e) => set(setLocatorElement(l, { name: e.target.value }))}
          />
        </label>
      </div>
      <ol className="locator-path" aria-label={`${label} locator path`}>
        {l.path.map((p, k) => (
          <li key={k}>
            <input
              aria-label={`${label} path ${k + 1} role`}
              value={p.role}
              onChange={(e) => setPath(k, { role: e.target.value })}
            />
            <input
              aria-label={`${label} path ${k + 1} name`}
              value={p.name}
              onChange={(e) => setPath(k, { name: e.target.value })}
            />
            <input
              aria-label={`${label} path ${k + 1} index`}
              type="number"
              min={0}
              value={p.index}
              onChange={(e) => setPath(k, { index: Number(e.target.value) })}
            />
            <button
              type="button"
              aria-label={`Remove ${label.toLowerCase()} path ${k + 1}`}
              onClick={() => set({ ...l, path: l.path.filter((_, j) => j !== k) })}
            >
              Remove
            </button>
          </li>
        ))}
      </ol>
      <button
        type="button"
        className="danger"
        aria-label={`Remove locator of ${label.toLowerCase()}`}
        onClick={() => set(undefined)}
      >
        Remove locator
      </button>
    </details>
  );
}

/** A subtask's outcome check: the accessibility fact replay waits for instead of a model's `done`. */
function OutcomeCheckEditor({
  k,
  check,
  set,
}: {
  k: number;
  check: WorkflowSubtask['outcome_check'];
  set: (c: WorkflowSubtask['outcome_check']) => void;
}) {
  if (!check)
    return (
      <div className="muted">
        No outcome check: the subtask is done when its steps ran.{' '}
        <button type="button" onClick={() => set({})} aria-label={`Add outcome check to subtask ${k + 1}`}>
          Add outcome check
        </button>
      </div>
    );
  return (
    <div className="step-fields" role="group" aria-label={`Subtask ${k + 1} outcome check`}>
      {(['role', 'name', 'value'] as const).map((f) => (
        <label key={f}>
          Check {f}{' '}
          <input
            aria-label={`Subtask ${k + 1} outcome check ${f}`}
            value={check[f] ?? ''}
            onChange={(e) => set(setCheckField(check, f, e.target.value))}
          />
        </label>
      ))}
      <button
        type="button"
        className="danger"
        onClick={() => set(undefined)}
        aria-label={`Remove outcome check of subtask ${k + 1}`}
      >
        Remove outcome check
      </button>
    </div>
  );
}

/** The whole plan at a glance: order, outcomes, dependencies, and subtasks with too few examples. */
function Review({ w }: { w: Workflow }) {
  return (
    <div className="workflow-review">
      <p>
        <strong>{w.task_name}</strong>: {w.detailed_task_description}
      </p>
      <p>
        Parameters:{' '}
        {w.task_params.map((p) => `${p.name} (e.g. “${p.sensitive ? '•••' : p.example}”)`).join(', ') ||
          'none'}
      </p>
      <ol>
        {w.plan.subtasks.map((st, k) => (
          <li key={k}>
            {st.text}
            <div className="muted">
              Expected: {st.expected_outcome || '(none)'} · {st.steps.length} steps
              {st.dependencies.length > 0 && ` · uses ${st.dependencies.join(', ')}`}
              {st.steps.some((s) => s.variable_name) &&
                ` · extracts ${st.steps.flatMap((s) => (s.variable_name ? [s.variable_name] : [])).join(', ')}`}
              {st.outcome_check &&
                ` · checks ${[st.outcome_check.role, st.outcome_check.name && `“${st.outcome_check.name}”`, st.outcome_check.value !== undefined && `showing “${st.outcome_check.value}”`].filter(Boolean).join(' ')}`}
              {st.steps.some((s) => !s.locator) &&
                ` · ${st.steps.filter((s) => !s.locator).length} without a locator (the model does them)`}
            </div>
            {st.steps.length === 0 && (
              <div className="banner warn">No steps: replay has no example to ground this subtask on.</div>
            )}
          </li>
        ))}
      </ol>
      <p className="muted">Success: {w.success_criteria}</p>
    </div>
  );
}
