/**
 * Model provider keys from the board: the onboarding panel (a flow's provider has no key) and the
 * providers of Settings (set, replace, remove, check). A key is typed into a password field, sent once
 * to the host, which hands it to the supervisor, and the field is emptied: the page never stores it
 * and is never sent it back; it shows only whether a key is saved and what the provider said to it.
 */
import { useId, useState } from 'react';
import type { BoardApi } from '../shared/board-api.ts';
import type { KeyCheck, ProviderView } from '../shared/board-types.ts';

function CheckResult({ check }: { check: KeyCheck | undefined }) {
  if (!check) return null;
  return (
    <span role="status" className={check.ok ? 'ok' : 'error'}>
      {check.ok ? '✓ ' : '✗ '}
      {check.message}
    </span>
  );
}

/** A password field for one provider's key: saved, then checked against the provider. */
function KeyForm({
  api,
  provider,
  replacing,
  onSaved,
}: {
  api: BoardApi;
  provider: string;
  replacing: boolean;
  onSaved: () => void;
}) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [check, setCheck] = useState<KeyCheck>();
  const id = useId();
  return (
    <form
      className="key-form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        if (busy) return;
        const k = key.trim();
        if (!k) return setCheck({ ok: false, message: `Paste the ${provider} key first.` });
        setBusy(true);
        setCheck(undefined);
        api
          .setProviderKey({ provider, key: k })
          .then(() => {
            setKey(''); // the page keeps no copy
            onSaved();
            return api.checkProviderKey({ provider });
          })
          .then(setCheck, (e: Error) => setCheck({ ok: false, message: e.message }))
          .finally(() => setBusy(false));
      }}
    >
      <label htmlFor={id}>{replacing ? `New ${provider} key` : `${provider} key`}</label>
      <input
        id={id}
        type="password"
        autoComplete="off"
        spellCheck={false}
        value={key}
        onChange={(e) => setKey(e.target.value)}
      />
      <button type="submit" className="primary" aria-disabled={busy || undefined}>
        {replacing ? 'Replace and check' : 'Save and check'}
      </button>
      <CheckResult check={check} />
    </form>
  );
}

/** Where a person gets a key of the providers the supervisor knows by default. */
const KEY_PAGES: Record<string, string> = {
  openai: 'https://platform.openai.com/api-keys',
  anthropic: 'https://console.anthropic.com/settings/keys',
};

/**
 * First start, or a flow whose provider has no key: asks for it, on the board itself, compactly (a
 * line per provider): where to get a key, and that most cards need none.
 */
export function KeyPanel({
  api,
  missing,
  onChanged,
  onDismiss,
}: {
  api: BoardApi;
  missing: ProviderView[];
  onChanged: () => void;
  onDismiss?: () => void;
}) {
  return (
    <section className="key-panel" aria-label="Set up model providers">
      <div className="key-panel-head">
        <h2>Model keys (optional)</h2>
        <span className="muted">
          Most cards need none (shell cards run without). Only the supervisor keeps a key; cards that need one
          wait for it.
        </span>
        {onDismiss && (
          <button className="close" onClick={onDismiss} aria-label="Hide the provider setup">
            ✕
          </button>
        )}
      </div>
      {missing.map((p) => (
        <div key={p.name} className="key-panel-provider">
          <p>
            {p.flows.length === 1 ? 'Flow' : 'Flows'} {p.flows.join(', ')}{' '}
            {p.flows.length === 1 ? 'uses' : 'use'} <strong>{p.name}</strong>
            {p.hasKey
              ? ': its key is saved.'
              : p.known
                ? KEY_PAGES[p.name]
                  ? ': no key yet; get one at '
                  : ': no key yet.'
                : `: the supervisor knows no provider "${p.name}". Correct the flow's provider in config.yaml, or start the supervisor with RUNBOARD_PROVIDER_${p.name.toUpperCase().replace(/-/g, '_')}_URL.`}
            {!p.hasKey && p.known && KEY_PAGES[p.name] && (
              <a href={KEY_PAGES[p.name]} target="_blank" rel="noreferrer noopener">
                {KEY_PAGES[p.name]!.replace('https://', '')}
              </a>
            )}
          </p>
          {p.known && <KeyForm api={api} provider={p.name} replacing={p.hasKey} onSaved={onChanged} />}
        </div>
      ))}
    </section>
  );
}

/** Settings → Providers: each provider's key state, and set / replace / remove / check. */
export function ProvidersSection({
  api,
  providers,
  onChanged,
}: {
  api: BoardApi;
  providers: ProviderView[] | undefined;
  onChanged: () => void;
}) {
  const [open, setOpen] = useState<string>();
  const [checks, setChecks] = useState<Record<string, KeyCheck>>({});
  if (!providers) return null;
  const say = (name: string, c: KeyCheck): void => setChecks((prev) => ({ ...prev, [name]: c }));
  return (
    <section className="providers" aria-labelledby="providers-title">
      <h3 id="providers-title">Providers</h3>
      <ul>
        {providers.map((p) => (
          <li key={p.name}>
            <div className="provider-line">
              <strong>{p.name}</strong>
              <span className={p.hasKey ? 'ok' : 'muted'}>{p.hasKey ? 'key saved' : 'no key'}</span>
              {p.flows.length > 0 && <span className="muted">flows: {p.flows.join(', ')}</span>}
            </div>
            {p.baseUrl && <div className="muted small">{p.baseUrl}</div>}
            {p.known ? (
              <div className="provider-actions">
                <button
                  onClick={() => setOpen(open === p.name ? undefined : p.name)}
                  aria-expanded={open === p.name}
                >
                  {p.hasKey ? 'Replace key' : 'Set key'}
                </button>
                {p.hasKey && (
                  <>
                    <button
                      onClick={() =>
                        void api.checkProviderKey({ provider: p.name }).then(
                          (c) => say(p.name, c),
                          (e: Error) => say(p.name, { ok: false, message: e.message }),
                        )
                      }
                    >
                      Check key
                    </button>
                    <button
                      className="danger"
                      onClick={() =>
                        void api.setProviderKey({ provider: p.name, key: null }).then(
                          () => {
                            say(p.name, { ok: true, message: 'key removed' });
                            onChanged();
                          },
                          (e: Error) => say(p.name, { ok: false, message: e.message }),
                        )
                      }
                    >
                      Remove key
                    </button>
                  </>
                )}
              </div>
            ) : (
              <div className="muted small">
                unknown to the supervisor: correct the flow's provider in config.yaml
              </div>
            )}
            {open === p.name && (
              <KeyForm api={api} provider={p.name} replacing={p.hasKey} onSaved={onChanged} />
            )}
            <CheckResult check={checks[p.name]} />
          </li>
        ))}
      </ul>
    </section>
  );
}
