/**
 * The inspector's workflow section and its editor (seed 002's Edit Workflow, docs/workflows.md):
 * parameters (add, delete, rename with their `{name}` templates, example values), subtasks (text,
 * expected outcome and its outcome check, add, delete, reorder), steps (intent, action fields, the
 * locator replay finds the element by), dependencies on upstream extracts, and a review of the plan. Every edit is checked by the host with the one workflow
 * schema and its problems are shown; Save writes only a valid whole.
 */
import { useContext, useEffect, useRef, useState } from 'react';
import type {
  Workflow,
  WorkflowParam,
  WorkflowProblem,
  WorkflowSubtask,
} from '@runboard/supervisor/protocol/data';
import type { BoardApi } from '../shared/board-api.ts';
import {
  copy,
  move,
  newSubtask,
  renameParam,
  renumber,
  upstreamExtracts,
  type CardWorkflowView,
} from '../shared/workflow-edit.ts';
import { Choices, type Edit } from './workflow-choices.ts';
import { OutcomeCheckEditor, StepsEditor } from './WorkflowSteps.tsx';
import { hasCardDraft, StaleDraft, useCardDraft } from './CardDraft.tsx';

type Tab = 'params' | 'subtasks' | 'review';

/** The card's workflow in the inspector: a summary, and the editor behind "Edit workflow". */
export function WorkflowSection({ api, cardId, locked }: { api: BoardApi; cardId: string; locked: boolean }) {
  const [view, setView] = useState<CardWorkflowView>();
  // unsaved edits are the card's draft (CardDraft.tsx): coming back to the card finds the editor open with them
  const [editing, setEditing] = useState(() => hasCardDraft(cardId, 'workflow'));
  const [error, setError] = useState('');
  // the newest load's answer only (a load after a save may cross the first one's)
  const loads = useRef(0);
  const load = (): void => {
    const n = ++loads.current;
    api.workflow({ id: cardId }).then(
      (v) => n === loads.current && setView(v),
      (e: Error) => n === loads.current && setError(e.message),
    );
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
            base={view.text ?? ''}
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
  /** The file's text the workflow was read from: a draft keeps the one it was made on, for the save. */
  base: string;
  onClose: (saved: boolean) => void;
}) {
  // the edits are a draft of the card's (decision 137), kept while other cards are looked at; one made on
  // an older file is stale: shown, not saved (the host refuses a save whose base is not the file, too)
  const draft = useCardDraft<Workflow>(cardId, 'workflow', initial, base);
  const w = draft.value;
  const [tab, setTab] = useState<Tab>('params');
  const [problems, setProblems] = useState<WorkflowProblem[]>([]);
  const [checking, setChecking] = useState(false);
  const [error, setError] = useState('');
  const edit = (f: (w: Workflow) => Workflow): void => draft.set((cur) => renumber(f(copy(cur))));
  const key = JSON.stringify(w);
  useEffect(() => {
    setChecking(true);
    // an answer for an earlier edit (a slow host answers out of order) is dropped: the problems shown
    // are the workflow's as it is now
    let live = true;
    const t = setTimeout(() => {
      api.checkWorkflow({ id: cardId, workflow: w }).then(
        (r) => {
          if (!live) return;
          setProblems(r.problems);
          setChecking(false);
        },
        (e: Error) => live && setError(e.message),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
    // the workflow's JSON is the dependency (a new object after every edit, equal or not)
  }, [key]);
  const close = (saved: boolean): void => {
    draft.drop();
    onClose(saved);
  };
  const save = (): void => {
    api.saveWorkflow({ id: cardId, workflow: w, base: draft.base }).then(
      (r) => (r.saved ? close(true) : setProblems(r.problems)),
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
      {draft.stale && <StaleDraft what="Its workflow file" onDiscard={draft.drop} />}
      <div role="tabpanel" aria-label={tabs.find(([t]) => t === tab)![1]}>
        {tab === 'params' && <ParamsEditor w={w} edit={edit} />}
        {tab === 'subtasks' && <SubtasksEditor w={w} edit={edit} />}
        {tab === 'review' && <Review w={w} />}
      </div>
      <div className="workflow-buttons">
        <button
          type="button"
          className="primary"
          disabled={checking || problems.length > 0 || draft.stale}
          onClick={save}
        >
          Save workflow
        </button>
        <button type="button" onClick={() => close(false)}>
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
