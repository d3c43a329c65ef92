/**
 * A launch that carries asks the person allowed once (run/launch's `allow`, RunRegistry.launch in
 * registry.ts): each is looked up in this supervisor's own record of an ended run of the same card and
 * checked again (asks.ts), the run's flow is extended by exactly what was asked (`withAllowed`), and a
 * claude or codex run continues the agent session the earlier run kept (`resumeFrom`). What the host,
 * the card or the page say about the ask plays no part.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { runLogDir, type StatePaths } from '../common/paths.ts';
import {
  ErrorCodes,
  ResponseError,
  type FlowSpec,
  type LaunchRun,
  type PermissionAsk,
  type RunResult,
} from '../protocol/index.ts';
import { folderRefusal } from './asks.ts';
import { projectReadOnly } from './jail-args.ts';
import type { RunDeps } from './run-deps.ts';

type Launch = z.output<typeof LaunchRun.params>;

/**
 * The asks a launch's `allow` names, checked again against `record` (a run's record, this supervisor's
 * own): the launch is refused (AskRefused) when one is not what was asked of an ended run of this card.
 */
export function allowedAsks(
  p: Launch,
  workspace: string,
  record: (runId: string) => RunResult | null | undefined,
  deps: Pick<RunDeps, 'hiddenPaths' | 'protectedPaths' | 'grantedPaths'>,
): PermissionAsk[] {
  const refuse = (why: string): never => {
    throw new ResponseError(ErrorCodes.AskRefused, `cannot allow: ${why}`, { reason: 'ask-refused' });
  };
  const out: PermissionAsk[] = [];
  for (const a of p.allow ?? []) {
    const rec = record(a.runId);
    if (!rec) refuse(`no run ${a.runId}`);
    if (rec!.card.path !== p.card.path) refuse(`run ${a.runId} was not a run of this card`);
    if (rec!.status === 'running') refuse(`run ${a.runId} is still going`);
    const ask = rec!.asks?.find((x) => x.id === a.ask);
    if (!ask) refuse(`run ${a.runId} asked nothing as ${a.ask}`);
    if (ask!.kind === 'delete') {
      // The same folder of this run's workspace (a worktree flow gets a new worktree each run); the
      // jail finds it beneath the workspace without following links.
      const rel = path.relative(rec!.workspace, ask!.path!);
      if (rel.startsWith('..') || path.isAbsolute(rel))
        refuse(`${ask!.path} is not inside the workspace of run ${a.runId}`);
      out.push({ ...ask!, path: path.join(workspace, rel) });
      continue;
    }
    if (ask!.path !== undefined) {
      let now: string | undefined;
      try {
        now = realpathSync(ask!.path);
      } catch {
        // gone
      }
      if (now !== ask!.path)
        refuse(`${ask!.path} is not the folder it was when the run asked (moved, removed or a link now)`);
      const why = folderRefusal(ask!.path, {
        writable: [],
        hidden: deps.hiddenPaths,
        readOnly: projectReadOnly(p.card, p.flow),
        ownPorts: [],
        tcpPorts: [],
        workspace,
        protected: deps.protectedPaths ?? [],
        granted: [workspace, ...(deps.grantedPaths?.() ?? [])],
      });
      if (why) refuse(`${ask!.path}: ${why}`);
    }
    out.push(ask!);
  }
  return out;
}

/**
 * A claude or codex launch whose `allow` names asks of one earlier run that kept its agent session
 * continues that session (agent-session.ts) instead of starting the task again.
 */
export function resumeFrom(
  p: Launch,
  allowed: readonly PermissionAsk[],
  record: (runId: string) => RunResult | null | undefined,
  paths: StatePaths,
): { resumeFrom?: { logDir: string; session: string; note: string } } {
  const runIds = new Set((p.allow ?? []).map((a) => a.runId));
  if (runIds.size !== 1) return {};
  const from = [...runIds][0]!;
  const session = record(from)?.session;
  if (!session || session.cli !== p.flow.runner) return {};
  const what = allowed
    .map((a) => (a.kind === 'connect' ? `connect to TCP port ${a.port}` : `${a.kind} in ${a.path}`))
    .join('; ');
  return {
    resumeFrom: {
      logDir: runLogDir(paths, from),
      session: session.id,
      note:
        `Runboard: the person allowed what was refused (${what}), for this run. ` +
        'Continue the task where you stopped: do again what was refused, then finish.',
    },
  };
}

/** The flow with the asks the person allowed once added to its sandbox (nothing else changes). */
export function withAllowed(flow: FlowSpec, allowed: readonly PermissionAsk[], workspace: string): FlowSpec {
  if (allowed.length === 0) return flow;
  const sb = flow.sandbox ?? {};
  const writable = [...(sb.writable ?? [])];
  const tcpPorts = [...(sb.tcpPorts ?? [])];
  const deletable = [...(sb.deletable ?? [])];
  const read = [...(sb.read ?? [])];
  for (const a of allowed) {
    if (a.kind === 'read' && a.path && !read.includes(a.path)) read.push(a.path);
    if (a.kind === 'write' && a.path && !writable.includes(a.path)) writable.push(a.path);
    if (a.kind === 'connect' && a.port && !tcpPorts.includes(a.port)) tcpPorts.push(a.port);
    if (a.kind === 'delete' && a.path) deletable.push(path.relative(workspace, a.path) || '.');
  }
  return {
    ...flow,
    sandbox: {
      ...sb,
      ...(writable.length ? { writable } : {}),
      ...(tcpPorts.length ? { tcpPorts } : {}),
      ...(deletable.length ? { deletable } : {}),
      ...(read.length ? { read } : {}),
    },
  };
}
