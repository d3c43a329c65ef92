/**
 * The workflow editor's steps of a subtask (intent, action fields, the locator replay finds the
 * element by) and a subtask's outcome check.
 */
import { useContext } from 'react';
import type { WorkflowActionType, WorkflowStep, WorkflowSubtask } from '@runboard/supervisor/protocol/data';
import { locatorFor, move, newStep, setCheckField, setLocatorElement } from '../shared/workflow-edit.ts';
import { Choices } from './workflow-choices.ts';

/** A subtask's steps: each one's action, intent, fields and locator; add, delete, reorder. */
export function StepsEditor({
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
export function OutcomeCheckEditor({
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
