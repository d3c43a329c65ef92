/** Settings: the caps of config.yaml (global, per flow, per column), written back keeping comments. */
import { useEffect, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import { COLUMN_TITLES, type Column, type Settings } from '../shared/board-types.ts';

const LIMITABLE: Column[] = ['needs-input', 'done', 'failed'];

export function SettingsView({ api, onClose }: { api: BoardApi; onClose: () => void }) {
  const [s, setS] = useState<Settings>();
  const [msg, setMsg] = useState<{ ok: boolean; text: string }>();
  useEffect(() => {
    void api.settings().then(setS);
  }, [api]);
  if (!s) return null;
  const num = (v: string): number => Math.max(0, Math.floor(Number(v) || 0));
  const save = (): void => {
    api
      .saveSettings(s)
      .then(() => setMsg({ ok: true, text: 'Saved to config.yaml' }))
      .catch((e: Error) => setMsg({ ok: false, text: e.message }));
  };
  return (
    <div className="settings" role="dialog" aria-label="Settings">
      <header>
        <h2>Settings</h2>
        <button className="close" onClick={onClose} aria-label="Close settings">
          ✕
        </button>
      </header>
      <p className="muted">
        Caps from config.yaml. Saving rewrites only these values; comments and order stay.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <fieldset>
          <legend>Scheduler</legend>
          <label>
            Max concurrent runs
            <input
              type="number"
              min={1}
              value={s.maxConcurrency}
              onChange={(e) => setS({ ...s, maxConcurrency: Math.max(1, num(e.target.value)) })}
            />
          </label>
        </fieldset>
        <fieldset>
          <legend>Flow caps</legend>
          {s.flows.map((f, i) => (
            <label key={f.name}>
              Cap of flow {f.name}
              <input
                type="number"
                min={0}
                value={f.cap}
                onChange={(e) => {
                  const flows = [...s.flows];
                  flows[i] = { ...f, cap: num(e.target.value) };
                  setS({ ...s, flows });
                }}
              />
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Column limits (0 = none): start no new runs while a column is full</legend>
          {LIMITABLE.map((col) => (
            <label key={col}>
              Limit of {COLUMN_TITLES[col]}
              <input
                type="number"
                min={0}
                value={s.columnLimits[col] ?? 0}
                onChange={(e) =>
                  setS({ ...s, columnLimits: { ...s.columnLimits, [col]: num(e.target.value) } })
                }
              />
            </label>
          ))}
        </fieldset>
        <button type="submit" className="primary">
          Save
        </button>
        {msg && (
          <span role="status" className={msg.ok ? 'ok' : 'error'}>
            {msg.text}
          </span>
        )}
      </form>
    </div>
  );
}
