/** From a card and its project to a `run/launch` request: the host's half of launching a run. */
import path from 'node:path';
import type { z } from 'zod';
import type { FlowSpec, LaunchRun } from '@runboard/supervisor/protocol';
import type { GrantStore } from './grant-store.ts';
import { ProjectError, type Card, type FlowConfig, type ProjectConfig } from './project.ts';

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

export function flowSpec(name: string, flow: FlowConfig, projectDir: string): FlowSpec {
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
          },
        }
      : {}),
    ...(flow.env ? { env: flow.env } : {}),
    // coding-agent flow options
    ...(flow.provider ? { provider: flow.provider } : {}),
    ...(flow.model ? { model: flow.model } : {}),
    ...(flow.stallTimeout ? { stallTimeoutMs: flow.stallTimeout } : {}),
    ...(flow.worktree !== undefined ? { worktree: flow.worktree } : {}),
    ...(flow.readOnly !== undefined ? { readOnly: flow.readOnly } : {}),
    ...(flow.prompt ? { prompt: path.resolve(projectDir, flow.prompt) } : {}),
    ...(flow.desktop !== undefined ? { desktop: flow.desktop } : {}),
    ...(flow.documents !== undefined ? { documents: flow.documents } : {}),
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

export function launchRequest(
  card: Card,
  config: ProjectConfig,
  projectDir: string,
  grants: GrantStore,
): z.input<typeof LaunchRun.params> {
  // own names only: a card's `flow: constructor` names no flow
  const flow = Object.hasOwn(config.flows, card.front.flow) ? config.flows[card.front.flow] : undefined;
  if (!flow) {
    throw new ProjectError(
      card.file,
      `flow "${card.front.flow}" is not in config.yaml (flows: ${Object.keys(config.flows).join(', ') || 'none'})`,
    );
  }
  const grant = grants.find(card.workspace);
  if (!grant) throw new NoGrantError(card.workspace);
  return {
    card: {
      path: card.file,
      project: projectDir,
      ...(card.front.id ? { id: card.front.id } : {}),
      title: card.front.title,
    },
    flow: flowSpec(card.front.flow, flow, projectDir),
    workspace: card.workspace,
    grant,
    ...(card.front.command !== undefined ? { command: card.front.command } : {}),
  };
}
