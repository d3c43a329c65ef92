/**
 * What a run's worker is told and what it tells back, beside the endpoint (worker-endpoint.ts): the spec
 * it gets once it proved itself, and what its log lines say of its agent CLI (a session, a refusal).
 */
import {
  AgentSessionId,
  type CardRef,
  type Command,
  type FlowSpec,
  type WorkerSpec,
} from '../protocol/index.ts';
import type { ProxyGrant, VisionGrant } from './model-proxy.ts';

export interface WorkerSpecInput {
  runId: string;
  flow: FlowSpec;
  card: CardRef;
  workspace: string;
  command: Command | undefined;
  heartbeatIntervalMs: number;
  artifactsDir: string | undefined;
  /** The agent session it continues (restored into its HOME), if any. */
  resume: { session: string; note: string } | undefined;
  /** A replay card's sensitive parameter values (memory only). */
  secrets: Record<string, string> | undefined;
  /** Its route to the model, through the run's proxy listener. */
  model: ProxyGrant | undefined;
  /** analyze_media's route to the vision profile's provider. */
  vision: VisionGrant | undefined;
}

/** The spec a worker gets when it reports ready. */
export function workerSpec(i: WorkerSpecInput): WorkerSpec {
  return {
    runId: i.runId,
    runner: i.flow.runner,
    flow: i.flow,
    card: i.card,
    workspace: i.workspace,
    command: i.command,
    heartbeatIntervalMs: i.heartbeatIntervalMs,
    ...(i.artifactsDir ? { artifactsDir: i.artifactsDir } : {}),
    ...(i.resume ? { resume: { session: i.resume.session, note: i.resume.note } } : {}),
    ...(i.secrets ? { secrets: i.secrets } : {}),
    ...(i.model
      ? {
          model: {
            provider: i.model.provider,
            baseUrl: i.model.baseUrl,
            token: i.model.token,
            ...(i.flow.model ? { model: i.flow.model } : {}),
          },
        }
      : {}),
    ...(i.vision
      ? {
          vision: (({ provider, model, baseUrl, token }) => ({ provider, model, baseUrl, token }))(i.vision),
        }
      : {}),
  };
}

/**
 * What a worker's log line says of its agent CLI (`data.agent`): the CLI's session id (claude's
 * system/init), or a permission the CLI itself refused, as a line for the denial scanner (it goes
 * through the same ask as the sandbox's refusals).
 */
export function agentNote(data: Record<string, unknown> | undefined): {
  session?: string;
  refused?: string;
} {
  const agent = data?.agent as { kind?: unknown; tool?: unknown; detail?: unknown; id?: unknown } | undefined;
  if (agent?.kind === 'session' && typeof agent.id === 'string' && AgentSessionId.safeParse(agent.id).success)
    return { session: agent.id };
  if (agent?.kind === 'permission-denied')
    return { refused: `${String(agent.tool)}: ${String(agent.detail).slice(0, 2000)}` };
  return {};
}
