/**
 * Settings: the caps of config.yaml (global, per flow, per column), written back changing only those
 * values. Every field is checked before anything is saved: a value that is not a whole number in its
 * range is named with what is allowed, and nothing is written. Below them, the effective config with
 * where each value came from, and what the config files should have fixed (Configuration).
 */
import { Fragment, useEffect, useRef, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import {
  COLUMN_TITLES,
  type Column,
  type ConfigView,
  type ProviderView,
  type Settings,
} from '../shared/board-types.ts';
import { ProvidersSection } from './Providers.tsx';
import { TrashSection } from './Trash.tsx';
import { DiskSection } from './DiskSection.tsx';

const LIMITABLE: Column[] = ['needs-input', 'done', 'failed'];

/** The ranges config.yaml accepts (host/src/core/project.ts). */
const RANGE = { maxConcurrency: [1, 1000], cap: [0, 1000], limit: [0, 100_000] } as const;

/** Why `text` is not a whole number from `min` to `max`, or undefined when it is. */
export function numberProblem(text: string, min: number, max: number): string | undefined {
  const t = text.trim();
  const allowed = `a whole number from ${min} to ${max.toLocaleString('en')}`;
  if (t === '') return `empty: enter ${allowed}`;
  if (!/^[+-]?\d+(\.\d+)?$/.test(t)) return `"${t}" is not a number: enter ${allowed}`;
  const n = Number(t);
  if (!Number.isInteger(n)) return `${t} is not a whole number: enter ${allowed}`;
  if (n < min) return `${t} is too small: enter ${allowed}`;
  if (n > max) return `${t} is too large: enter ${allowed}`;
  return undefined;
}

interface Draft {
  maxConcurrency: string;
  caps: Record<string, string>;
  limits: Partial<Record<Column, string>>;
}

function draftOf(s: Settings): Draft {
  return {
    maxConcurrency: String(s.maxConcurrency),
    caps: Object.fromEntries(s.flows.map((f) => [f.name, String(f.cap)])),
    limits: Object.fromEntries(LIMITABLE.map((c) => [c, String(s.columnLimits[c] ?? 0)])),
  };
}

function NumberField({
  id,
  label,
  value,
  problem,
  onChange,
}: {
  id: string;
  label: string;
  value: string;
  problem: string | undefined;
  onChange: (v: string) => void;
}) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        type="text"
        inputMode="numeric"
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? `${id}-problem` : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
      {problem && (
        <p id={`${id}-problem`} className="field-problem">
          {label}: {problem}
        </p>
      )}
    </div>
  );
}

/** The notification setting: on asks the browser's permission first, and says when it is blocked. */
function NotifyField({ on, onChange }: { on: boolean; onChange: (on: boolean) => void }) {
  const [note, setNote] = useState<string>();
  const supported = typeof Notification !== 'undefined';
  const blocked = supported && Notification.permission === 'denied';
  return (
    <fieldset className="notify">
      <legend>Notifications</legend>
      <label>
        <input
          type="checkbox"
          checked={on && supported && !blocked}
          disabled={!supported}
          onChange={(e) => {
            const want = e.target.checked;
            if (!want) return onChange(false);
            void Notification.requestPermission().then((p) => {
              if (p === 'granted') {
                setNote(undefined);
                onChange(true);
              } else
                setNote(
                  'The browser blocks notifications for this page: allow them in its site settings, then turn this on again.',
                );
            });
          }}
        />{' '}
        Notify me when a run ends or a card needs input
      </label>
      {!supported && <p className="muted">This browser has no notifications.</p>}
      {(note ??
        (blocked ? 'The browser blocks notifications for this page (its site settings).' : undefined)) && (
        <p className="field-problem" role="status">
          {note ?? 'The browser blocks notifications for this page (its site settings).'}
        </p>
      )}
    </fieldset>
  );
}

type ConfigRowView = ConfigView['rows'][number];

/** Where a value came from, in words (the file itself is in the cell's title and the section's text). */
function originOf(r: ConfigRowView, files: ConfigView['files']): string {
  if (r.layer === 'default') return 'built-in default';
  if (r.layer === 'user') return 'user config';
  if (r.layer === 'project') return 'config.yaml';
  return `profile ${r.profile ?? '?'} (${r.file === files.user ? 'user config' : 'config.yaml'})`;
}

/**
 * Settings → Configuration: the warnings of the config files (old names, unknown keys, placeholders,
 * versions) and every effective value with its origin: built-in default, user config, config.yaml, or
 * the profile a flow selects. Read-only: the files are the person's to edit.
 */
export function ConfigSection({ api }: { api: BoardApi }) {
  const [v, setV] = useState<ConfigView>();
  const [failed, setFailed] = useState<string>();
  const [filter, setFilter] = useState('');
  useEffect(() => {
    api.configView().then(setV, (e: Error) => setFailed(e.message));
  }, [api]);
  if (failed)
    return (
      <section className="providers config-view" aria-labelledby="config-title">
        <h3 id="config-title">Configuration</h3>
        <p className="error" role="alert">
          The configuration could not be read: {failed}
        </p>
      </section>
    );
  if (!v) return null;
  const f = filter.trim().toLowerCase();
  const rows = f
    ? v.rows.filter((r) => `${r.key} ${r.value} ${originOf(r, v.files)}`.toLowerCase().includes(f))
    : v.rows;
  return (
    <section className="providers config-view" aria-labelledby="config-title">
      <h3 id="config-title">Configuration</h3>
      <p className="muted small">
        Built-in defaults, then your user config (<code>{v.files.user}</code>
        {v.files.userExists ? '' : ', none yet'}), then this project&apos;s <code>{v.files.project}</code>; a
        flow&apos;s profile fills in its provider and model. Edit the files to change a value (
        <code>runboard config --show</code> prints the same).
      </p>
      {v.error && (
        <p className="error" role="alert">
          {v.error}
        </p>
      )}
      {v.warnings.length > 0 && (
        <div className="config-warnings" role="group" aria-labelledby="config-warnings-title">
          <h4 id="config-warnings-title">
            {v.warnings.length} config warning{v.warnings.length > 1 ? 's' : ''}
          </h4>
          <ul>
            {v.warnings.map((w) => (
              <li key={w}>{w}</li>
            ))}
          </ul>
        </div>
      )}
      <div className="field">
        <label htmlFor="config-filter">Filter values</label>
        <input
          id="config-filter"
          type="search"
          className="config-filter"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
        />
      </div>
      <div className="config-table" role="region" aria-label="Effective configuration values" tabIndex={0}>
        <table>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Value</th>
              <th scope="col">From</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.key} data-layer={r.layer}>
                <td>
                  <code>
                    {r.key.split('.').map((part, i) => (
                      // a line may break after each dot of a long key, not inside a word
                      <Fragment key={i}>
                        {i > 0 && '.'}
                        {i > 0 && <wbr />}
                        {part}
                      </Fragment>
                    ))}
                  </code>
                </td>
                <td>
                  <code>{r.value}</code>
                </td>
                <td title={r.file}>{originOf(r, v.files)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {rows.length === 0 && <p className="muted small">No value matches.</p>}
      </div>
    </section>
  );
}

export function SettingsView({
  api,
  onClose,
  providers,
  onProvidersChanged,
  notify = false,
  onNotify,
  onRestored,
}: {
  api: BoardApi;
  onClose: () => void;
  /** The model providers (Settings → Providers); none: not asked yet. */
  providers?: ProviderView[] | undefined;
  onProvidersChanged?: () => void;
  /** Browser notifications of runs (kept in this browser). */
  notify?: boolean;
  onNotify?: (on: boolean) => void;
  /** A card restored from the trash (its id when it reads as a card). */
  onRestored?: (id?: string) => void;
}) {
  const [s, setS] = useState<Settings>();
  const [d, setD] = useState<Draft>();
  const [checked, setChecked] = useState(false);
  const [msg, setMsg] = useState<{ ok: boolean; text: string }>();
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    void api.settings().then((v) => {
      setS(v);
      setD(draftOf(v));
    });
  }, [api]);
  useEffect(() => {
    if (s) heading.current?.focus();
  }, [s]);
  if (!s || !d) return null;

  const problems: Record<string, string | undefined> = {
    maxConcurrency: numberProblem(d.maxConcurrency, ...RANGE.maxConcurrency),
  };
  for (const f of s.flows) problems[`cap:${f.name}`] = numberProblem(d.caps[f.name] ?? '', ...RANGE.cap);
  for (const c of LIMITABLE) problems[`limit:${c}`] = numberProblem(d.limits[c] ?? '', ...RANGE.limit);
  const bad = Object.values(problems).filter(Boolean).length;
  const shown = (key: string): string | undefined => (checked ? problems[key] : undefined);

  const save = (): void => {
    setChecked(true);
    if (bad) {
      setMsg({
        ok: false,
        text: `Nothing saved: ${bad} field${bad > 1 ? 's need' : ' needs'} a valid value (see above).`,
      });
      return;
    }
    const next: Settings = {
      maxConcurrency: Number(d.maxConcurrency),
      flows: s.flows.map((f) => ({ name: f.name, cap: Number(d.caps[f.name]) })),
      columnLimits: Object.fromEntries(LIMITABLE.map((c) => [c, Number(d.limits[c])])),
    };
    api
      .saveSettings(next)
      .then(() => setMsg({ ok: true, text: 'Saved to config.yaml' }))
      .catch((e: Error) => setMsg({ ok: false, text: `Nothing saved: ${e.message}` }));
  };
  const edit = (next: Draft): void => {
    setD(next);
    setMsg(undefined);
  };
  return (
    <div
      className="settings"
      role="dialog"
      aria-labelledby="settings-title"
      onKeyDown={(e) => {
        if (e.key === 'Escape') {
          e.preventDefault();
          onClose();
        }
      }}
    >
      <div className="settings-head">
        <h2 id="settings-title" ref={heading} tabIndex={-1}>
          Settings
        </h2>
        <button className="close" onClick={onClose} aria-label="Close settings">
          ✕
        </button>
      </div>
      <p className="muted">
        Caps from config.yaml. Saving changes only the values you changed; the rest of the file stays as it
        is.
      </p>
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <fieldset>
          <legend>Scheduler</legend>
          <NumberField
            id="set-max"
            label="Max concurrent runs"
            value={d.maxConcurrency}
            problem={shown('maxConcurrency')}
            onChange={(v) => edit({ ...d, maxConcurrency: v })}
          />
        </fieldset>
        <fieldset>
          <legend>Flow caps</legend>
          {s.flows.map((f, i) => (
            <NumberField
              key={f.name}
              id={`set-cap-${i}`}
              label={`Cap of flow ${f.name}`}
              value={d.caps[f.name] ?? ''}
              problem={shown(`cap:${f.name}`)}
              onChange={(v) => edit({ ...d, caps: { ...d.caps, [f.name]: v } })}
            />
          ))}
        </fieldset>
        <fieldset>
          <legend>Column limits (0 = none): start no new runs while a column is full</legend>
          {LIMITABLE.map((col) => (
            <NumberField
              key={col}
              id={`set-limit-${col}`}
              label={`Limit of ${COLUMN_TITLES[col]}`}
              value={d.limits[col] ?? ''}
              problem={shown(`limit:${col}`)}
              onChange={(v) => edit({ ...d, limits: { ...d.limits, [col]: v } })}
            />
          ))}
        </fieldset>
        <button type="submit" className="primary">
          Save
        </button>
        <span role="status" className={msg?.ok ? 'ok' : 'error'}>
          {msg?.text}
        </span>
      </form>
      {onNotify && <NotifyField on={notify} onChange={onNotify} />}
      <ProvidersSection api={api} providers={providers} onChanged={onProvidersChanged ?? (() => undefined)} />
      <ConfigSection api={api} />
      <DiskSection api={api} />
      {onRestored && <TrashSection api={api} onRestored={onRestored} />}
    </div>
  );
}
