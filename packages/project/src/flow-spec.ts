/**
 * From a card and its project's config to a `run/launch` request. The host launches with it (a drag, the
 * CLI) and so does the supervisor (a schedule that fires while no board is open), so a run is the
 * same whoever starts it.
 */
import path from 'node:path';
import type { z } from 'zod';
import type { FlowSpec, Grant, LaunchRun } from '@runboard/supervisor/protocol/data';
import {
  isPlaceholder,
  ProjectError,
  type Card,
  type FlowConfig,
  type ProjectConfig,
  type VisionProfile,
} from './project.ts';

export class NoGrantError extends Error {
  constructor(readonly workspace: string) {
    super(
      `no grant covers the workspace ${workspace}. Grant it (your choice, once): runboard grant ${workspace}`,
    );
  }
}

/**
 * A codex flow runs with codex's own sandbox inside ours wherever the machine allows it (`'auto'`:
 * user namespaces are needed) unless it says `sandbox.agentSandbox: false` (docs/agents.md):
 * the default is decided here, where config becomes a FlowSpec.
 */
function sandboxConfig(flow: FlowConfig): FlowConfig['sandbox'] {
  if (flow.runner !== 'codex' || flow.sandbox?.agentSandbox !== undefined) return flow.sandbox;
  return { ...flow.sandbox, agentSandbox: 'auto' };
}

/** A flow's `profile:` gives the provider and model the flow does not set itself. */
function withProfile(flow: FlowConfig, config?: ProjectConfig): FlowConfig {
  const profile =
    flow.profile !== undefined && config && Object.hasOwn(config.llm_profiles, flow.profile)
      ? config.llm_profiles[flow.profile]
      : undefined;
  if (!profile) return flow;
  return {
    ...profile,
    ...Object.fromEntries(Object.entries(flow).filter(([, v]) => v !== undefined)),
  } as FlowConfig;
}

/** The provider a flow's runs use: its own, else its profile's (what the proxy needs a key for). */
export function flowProvider(flow: FlowConfig, config: ProjectConfig): string | undefined {
  return withProfile(flow, config).provider;
}

/** The FlowSpec of flow `name`; `config` (the effective config) resolves its profile. */
export function flowSpec(
  name: string,
  flowConfig: FlowConfig,
  projectDir: string,
  config?: ProjectConfig,
): FlowSpec {
  const flow = withProfile(flowConfig, config);
  const sandbox = sandboxConfig(flow);
  return {
    name,
    runner: flow.runner,
    ...(flow.timeout ? { timeoutMs: flow.timeout } : {}),
    ...(flow.heartbeatTimeout ? { heartbeatTimeoutMs: flow.heartbeatTimeout } : {}),
    ...(flow.killGrace !== undefined ? { killGraceMs: flow.killGrace } : {}),
    ...(sandbox
      ? {
          sandbox: {
            ...sandbox,
            ...(sandbox.writable
              ? { writable: sandbox.writable.map((w) => path.resolve(projectDir, w)) }
              : {}),
            ...(sandbox.read ? { read: sandbox.read.map((r) => path.resolve(projectDir, r)) } : {}),
          },
        }
      : {}),
    ...(flow.env ? { env: flow.env } : {}),
    // coding-agent flow options
    ...(flow.provider ? { provider: flow.provider } : {}),
    ...(flow.model ? { model: flow.model } : {}),
    ...(flow.stallTimeout ? { stallTimeoutMs: flow.stallTimeout } : {}),
    ...(flow.askTimeout ? { askTimeoutMs: flow.askTimeout } : {}),
    ...budgetOf(flow),
    ...(flow.debug !== undefined ? { debug: flow.debug } : {}),
    ...(config && Object.keys(config.prices).length ? { prices: config.prices } : {}),
    ...(flow.worktree !== undefined ? { worktree: flow.worktree } : {}),
    ...(flow.readOnly !== undefined ? { readOnly: flow.readOnly } : {}),
    ...(flow.prompt ? { prompt: path.resolve(projectDir, flow.prompt) } : {}),
    ...(flow.desktop !== undefined ? { desktop: flow.desktop } : {}),
    ...(flow.documents !== undefined ? { documents: flow.documents } : {}),
    ...(flow.visionProfile !== undefined &&
    config &&
    Object.hasOwn(config.vision_profiles, flow.visionProfile)
      ? { vision: { profile: flow.visionProfile, ...config.vision_profiles[flow.visionProfile]! } }
      : {}),
    // computer-use flow options
    ...(flow.computerUse
      ? {
          computerUse: (({ maxDuration, ...rest }) => ({
            ...rest,
            ...(maxDuration ? { maxDurationMs: maxDuration } : {}),
          }))(flow.computerUse),
        }
      : {}),
    // extraction flow options (the input is the host's to add: extract.ts)
    ...(flow.extract
      ? {
          extract: (({ activeTimeout, ...rest }) => ({
            ...rest,
            ...(activeTimeout ? { activeTimeoutMs: activeTimeout } : {}),
          }))(flow.extract),
        }
      : {}),
  };
}

/** A flow's token and cost budgets as the FlowSpec carries them. */
function budgetOf(flow: FlowConfig): Pick<FlowSpec, 'budget'> {
  if (flow.maxTokens === undefined && flow.maxCost === undefined) return {};
  return {
    budget: {
      ...(flow.maxTokens !== undefined ? { maxTokens: flow.maxTokens } : {}),
      ...(flow.maxCost !== undefined ? { maxCost: flow.maxCost } : {}),
    },
  };
}

/** A card's own budgets, which take the place of its flow's. */
function budgetOverride(card: Card): Partial<FlowConfig> {
  return {
    ...(card.front.maxTokens !== undefined ? { maxTokens: card.front.maxTokens } : {}),
    ...(card.front.maxCost !== undefined ? { maxCost: card.front.maxCost } : {}),
  };
}

/** The flow a card names, or a ProjectError saying which flows there are. */
export function flowOf(card: Card, config: ProjectConfig): FlowConfig {
  // own names only: a card's `flow: constructor` names no flow
  const flow = Object.hasOwn(config.flows, card.front.flow) ? config.flows[card.front.flow] : undefined;
  if (!flow) {
    throw new ProjectError(
      card.file,
      `flow "${card.front.flow}" is not in config.yaml (flows: ${Object.keys(config.flows).join(', ') || 'none'})`,
    );
  }
  return flow;
}

/** The `run/launch` request of a card; `grant`: the grant covering its workspace (null: NoGrantError). */
export function launchParams(
  card: Card,
  config: ProjectConfig,
  projectDir: string,
  grant: Grant | null,
): z.input<typeof LaunchRun.params> {
  const flow = flowOf(card, config);
  if (!grant) throw new NoGrantError(card.workspace);
  const spec = flowSpec(card.front.flow, { ...flow, ...budgetOverride(card) }, projectDir, config);
  if (card.front.setup !== undefined) {
    if (!spec.computerUse?.privateDisplay)
      throw new ProjectError(
        card.file,
        `setup: runs on a private display before the agent starts; flow "${card.front.flow}" has none (set computerUse.privateDisplay: true in config.yaml, or remove setup: from the card)`,
      );
    spec.computerUse = { ...spec.computerUse, setup: card.front.setup };
  }
  return {
    card: {
      path: card.file,
      project: projectDir,
      ...(card.front.id ? { id: card.front.id } : {}),
      title: card.front.title,
    },
    flow: spec,
    workspace: card.workspace,
    grant,
    ...(card.front.command !== undefined ? { command: card.front.command } : {}),
  };
}

/**
 * The vision profile a flow's runs use (`visionProfile:` naming a `vision_profiles` entry), or an error
 * telling the person what to set.
 */
export function visionProfileOf(config: ProjectConfig, flowName: string): VisionProfile {
  const flow = Object.hasOwn(config.flows, flowName) ? config.flows[flowName] : undefined;
  const name = flow?.visionProfile;
  if (name === undefined || !Object.hasOwn(config.vision_profiles, name))
    throw new Error(
      `no vision profile for flow "${flowName}": add \`visionProfile: NAME\` to the flow in config.yaml and a ` +
        '`vision_profiles: { NAME: { provider: ..., model: ... } }` entry to your user config ' +
        '(`runboard config --show` says where that is)',
    );
  const profile = config.vision_profiles[name]!;
  const placeholder = Object.entries(profile).find(([, v]) => typeof v === 'string' && isPlaceholder(v));
  if (placeholder)
    throw new Error(
      `vision profile "${name}" (flow "${flowName}") still has a placeholder ${placeholder[0]}: "${placeholder[1]}"; ` +
        'set the real provider and model in `vision_profiles` (`runboard config --show` says which file it is in)',
    );
  return profile;
}
