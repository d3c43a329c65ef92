import { describe, expect, it } from 'vitest';
import type { FlowSpec } from '../protocol/index.ts';
import { preflight, type PreflightEnv } from './run-preflight.ts';

const env = (e: Partial<PreflightEnv> = {}): PreflightEnv => ({
  landlockAbi: 7,
  landlockReason: '',
  useNamespaces: true,
  knowsProvider: (p) => p === 'openai',
  hasKey: () => true,
  ...e,
});
const flow = (f: Partial<FlowSpec> = {}): FlowSpec => ({ name: 'f', runner: 'command', ...f });

describe('preflight', () => {
  it.each<[string, Partial<FlowSpec>, Partial<PreflightEnv>, string | null]>([
    ['a plain run', {}, {}, null],
    ['no Landlock', {}, { landlockAbi: 0, landlockReason: 'old kernel' }, 'sandbox-failed'],
    ['no Landlock, allowed', { sandbox: { allowUnsandboxed: true } }, { landlockAbi: 0 }, null],
    ['agent sandbox for a runner without one', { sandbox: { agentSandbox: true } }, {}, 'sandbox-failed'],
    [
      'agent sandbox without namespaces',
      { runner: 'codex', sandbox: { agentSandbox: true } },
      { useNamespaces: false },
      'sandbox-failed',
    ],
    [
      'agent sandbox auto without namespaces',
      { runner: 'codex', sandbox: { agentSandbox: 'auto' } },
      { useNamespaces: false },
      null,
    ],
    ['asked deletes', { sandbox: { askDeletes: true } }, {}, null],
    [
      'asked deletes without Landlock (unsandboxed allowed)',
      { sandbox: { askDeletes: true, allowUnsandboxed: true } },
      { landlockAbi: 0 },
      'sandbox-failed',
    ],
    [
      "asked deletes under codex's own sandbox",
      { runner: 'codex', sandbox: { askDeletes: true } },
      {},
      'sandbox-failed',
    ],
    [
      'asked deletes for codex without its sandbox',
      { runner: 'codex', sandbox: { askDeletes: true, agentSandbox: false } },
      {},
      null,
    ],
    ['unknown provider', { provider: 'nope' }, {}, 'missing-key'],
    ['no key', { provider: 'openai' }, { hasKey: () => false }, 'missing-key'],
  ])('%s', (_name, f, e, reason) => {
    expect(preflight(flow(f), env(e))?.reason ?? null).toBe(reason);
  });

  it('says how to get going', () => {
    expect(preflight(flow(), env({ landlockAbi: 0, landlockReason: 'old kernel' }))?.detail).toMatch(
      /old kernel.*sandbox.allowUnsandboxed: true on flow "f"/,
    );
    expect(
      preflight(
        flow({ provider: 'openai' }),
        env({ hasKey: () => false, missingKeyGuidance: (p) => `runboard key set ${p}` }),
      )?.detail,
    ).toBe('runboard key set openai');
  });
});
