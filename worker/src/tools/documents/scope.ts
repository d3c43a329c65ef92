// What a run's document tools may reach, from its spec: the workspace, the card's project (its
// pdf_style.css) and the flow's writable trees, which the supervisor checked against the user's grants
// and the jail lets the run write. Types only, so the coding-agent runners stay free of the parsers.
import type { WorkerSpec } from '@runboard/supervisor/protocol';

/** The flow's vision profile and the run's vision route to its provider (no key: the proxy holds it). */
export interface VisionAccess {
  profile: string;
  provider: string;
  model: string;
  maxTokens?: number | undefined;
  /** The run's vision route (the profile's provider on the run's proxy listener); none: no route. */
  baseUrl?: string | undefined;
}

export interface DocumentScope {
  workspace: string;
  /** The flow's name, for the messages that say what to set in config.yaml. */
  flowName?: string | undefined;
  /** For analyze_media: the vision profile; undefined when the flow has none. */
  vision?: VisionAccess | undefined;
  /** The project directory, whose pdf_style.css applies when the workspace has none. */
  project?: string | undefined;
  /** A read-only run: read_document only (its jail would refuse the writes of export_document anyway). */
  readOnly?: boolean | undefined;
  /** Folders besides the workspace the tools may use (the flow's granted writable trees). */
  allow?: readonly string[] | undefined;
}

/** The run's document scope; null when the flow turned the tools off (`documents: false`). */
export function documentScope(spec: WorkerSpec): DocumentScope | null {
  if (spec.flow.documents === false) return null;
  const v = spec.flow.vision;
  return {
    workspace: spec.workspace,
    flowName: spec.flow.name,
    ...(v ? { vision: { ...v, baseUrl: spec.vision?.baseUrl } } : {}),
    project: spec.card.project,
    readOnly: spec.flow.readOnly === true,
    allow: spec.flow.sandbox?.writable ?? [],
  };
}
