/**
 * What must hold before anything of a run starts: the kernel can sandbox it (or the flow allows it
 * unconfined), an agent sandbox is possible where one is asked for, the model provider and its key exist.
 */
import type { FlowSpec, TerminationReason } from '../protocol/index.ts';

export interface PreflightEnv {
  /** Landlock ABI of the kernel (0: none). */
  landlockAbi: number;
  landlockReason: string;
  useNamespaces: boolean;
  /** Whether the model proxy knows this provider. */
  knowsProvider(provider: string): boolean;
  hasKey(provider: string): boolean;
  missingKeyGuidance?: ((provider: string) => string) | undefined;
}

/** Why the run cannot start (it then ends failed with this reason), or null. */
export function preflight(
  flow: FlowSpec,
  env: PreflightEnv,
): { reason: TerminationReason; detail: string } | null {
  if (env.landlockAbi <= 0 && !flow.sandbox?.allowUnsandboxed)
    return {
      reason: 'sandbox-failed',
      detail: `this kernel cannot sandbox runs (${env.landlockReason}); set sandbox.allowUnsandboxed: true on flow "${flow.name}" to run it unconfined`,
    };
  // An agent's own sandbox inside the jail (the jail confines the filesystem by mounts).
  if (flow.sandbox?.agentSandbox === true) {
    const why =
      flow.runner !== 'codex'
        ? `sandbox.agentSandbox is for runner codex (its bubblewrap sandbox); flow "${flow.name}" uses runner ${flow.runner}`
        : !env.useNamespaces
          ? `sandbox.agentSandbox needs user namespaces, which this supervisor runs without (RUNBOARD_NAMESPACES=off); set it to auto or false`
          : null;
    if (why) return { reason: 'sandbox-failed', detail: why };
  }
  // Deletes that must be asked are withheld by Landlock's filesystem rules, which an agent's own
  // sandbox (mounts instead) or an unsandboxed run does not have: such a run would delete unasked.
  if (flow.sandbox?.askDeletes) {
    const why =
      env.landlockAbi <= 0
        ? `sandbox.askDeletes needs Landlock, which this kernel does not offer (${env.landlockReason})`
        : flow.runner === 'codex' && flow.sandbox.agentSandbox !== false
          ? `sandbox.askDeletes needs the jail's Landlock filesystem rules; codex's own sandbox replaces them: set sandbox.agentSandbox: false on flow "${flow.name}"`
          : null;
    if (why) return { reason: 'sandbox-failed', detail: why };
  }
  if (flow.provider) {
    if (!env.knowsProvider(flow.provider))
      return { reason: 'missing-key', detail: `the supervisor knows no model provider "${flow.provider}"` };
    if (!env.hasKey(flow.provider))
      return {
        reason: 'missing-key',
        detail: env.missingKeyGuidance?.(flow.provider) ?? `no API key for provider "${flow.provider}"`,
      };
  }
  return null;
}
