/**
 * `runboard gc`: the project's retention policy (config.yaml `retention:`) applied to its run logs
 * and artifacts (under the state root), the workspace copies of its attempts never kept or discarded,
 * and its recordings, and the stored sensitive values of its deleted cards swept. Says what it would
 * remove unless `--yes`; one line per kind with the space. Never a run going, a recording being made,
 * anything a card names, or a run whose worktree or copy is not settled (@runboard/supervisor/gc). A
 * copy is discarded through the supervisor (its run's record then says so), started if none runs.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { loadConfig } from '@runboard/project/config';
import { formatBytes, retentionPolicy } from '@runboard/project/retention';
import { autoText, collect, diskUsage, policyText, scanProject } from '@runboard/supervisor/gc';
import { SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';
import { findProjectDir } from './project-dir.ts';

export const GC_USAGE = `gc [--project DIR] [--yes] [--json]       what the retention policy removes (run logs, artifacts, recordings); --yes removes it`;

/** A mistake in the gc command's options. */
export class GcUsageError extends Error {}

/** The runs the supervisor says are going, when one runs (none is started to ask). */
async function goingRuns(paths: StatePaths): Promise<RunResult[]> {
  const client = await SupervisorClient.connect(paths).catch((err: unknown) => {
    if (err instanceof SupervisorUnavailable) return undefined;
    throw err;
  });
  if (!client) return [];
  try {
    return (await client.list({ activeOnly: true, limit: 10_000 })).runs;
  } finally {
    client.close();
  }
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

export async function cmdGc(args: string[], paths: StatePaths): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: { project: { type: 'string' }, yes: { type: 'boolean' }, json: { type: 'boolean' } },
    }));
  } catch (e) {
    throw new GcUsageError((e as Error).message);
  }
  const projectDir = path.resolve(findProjectDir(values.project));
  const config = loadConfig(projectDir);
  const policy = retentionPolicy(config.retention);
  const apply = values.yes === true;
  const storage = await scanProject(paths, projectDir, await goingRuns(paths));
  const before = diskUsage(storage);
  let client: SupervisorClient | undefined;
  const settle = async (runId: string): Promise<void> => {
    client ??= await SupervisorClient.connect(paths, { autoStart: true });
    await client.discardWorktree(runId);
  };
  const out = await collect(paths, storage, policy, { apply, settle }).finally(() => client?.close());
  const runBytes = out.removedRuns.reduce((s, r) => s + r.bytes, 0);
  const artifactBytes = out.removedRuns.reduce((s, r) => s + r.artifactBytes, 0);
  const recBytes = out.removedRecordings.reduce((s, r) => s + r.bytes, 0);
  const copyBytes = out.removedCopies.reduce((s, r) => s + r.bytes, 0);
  const kept = (reason: string, kind: string): number =>
    out.plan.keep.filter((k) => k.reason === reason && k.item.kind === kind).length;
  if (values.json) {
    process.stdout.write(
      JSON.stringify({
        project: projectDir,
        applied: apply,
        policy,
        before,
        removed: {
          runs: out.removedRuns.map((r) => ({ id: r.id, bytes: r.bytes, reason: reasonOf(out, r.id) })),
          recordings: out.removedRecordings.map((r) => ({
            id: r.id,
            bytes: r.bytes,
            reason: reasonOf(out, r.id),
          })),
          copies: out.removedCopies.map((r) => ({
            runId: r.id,
            bytes: r.bytes,
            reason: reasonOf(out, r.id),
          })),
          secrets: out.removedSecrets.map((s) => ({ ref: s.ref, card: s.card, param: s.param })),
        },
        freed: runBytes + recBytes + copyBytes,
        kept: {
          live: kept('live', 'run') + kept('live', 'recording') + kept('live', 'copy'),
          referenced:
            kept('referenced', 'run') + kept('referenced', 'recording') + kept('referenced', 'copy'),
          unsettled: kept('unsettled', 'run'),
          lastOfCard: kept('last-of-card', 'run'),
        },
        overSize: out.plan.overSize,
        errors: out.errors,
      }) + '\n',
    );
    return out.errors.length ? 1 : 0;
  }
  const verb = apply ? 'removed' : 'would remove';
  const lines = [
    `${projectDir}: retention ${policyText(policy)}${config.retention ? '' : ' (the defaults: no retention: in config.yaml)'}`,
    `  ${autoText(policy)}`,
    `in use: run logs ${formatBytes(before.runLogs)}, artifacts ${formatBytes(before.artifacts)} (${plural(before.runs, 'run')}), recordings ${formatBytes(before.recordings)} (${before.recordingCount}), workspace copies not kept or discarded ${formatBytes(before.copies)} (${before.copyCount})`,
    `${verb} run logs: ${plural(out.removedRuns.length, 'run')}, ${formatBytes(runBytes)} (artifacts ${formatBytes(artifactBytes)} of it)`,
    `${verb} workspace copies (discarded): ${out.removedCopies.length}, ${formatBytes(copyBytes)}${out.removedCopies.length ? ` (runs ${out.removedCopies.map((c) => c.id).join(', ')})` : ''}`,
    `${verb} recordings: ${out.removedRecordings.length}, ${formatBytes(recBytes)}`,
    `${verb} stored values of deleted cards: ${out.removedSecrets.length}`,
    `kept whatever the policy: ${plural(kept('live', 'run'), 'run')} going, ${plural(kept('live', 'recording'), 'recording')} being made, ${kept('referenced', 'run') + kept('referenced', 'recording') + kept('referenced', 'copy')} named by a card, ${plural(kept('unsettled', 'run'), 'run')} whose worktree or copy is not kept or discarded, ${plural(kept('last-of-card', 'run'), 'run')} among the last ${policy.keepPerCard} of their card`,
    `${apply ? 'freed' : 'would free'} ${formatBytes(runBytes + recBytes + copyBytes)}`,
  ];
  if (out.plan.overSize)
    lines.push(
      `still over maxSize after this: what is left is going, named by a card or kept per card (lower keepPerCard, or raise maxSize)`,
    );
  if (!apply && out.plan.remove.length + out.removedSecrets.length > 0)
    lines.push('nothing was removed: run `runboard gc --yes` to remove it');
  process.stdout.write(lines.join('\n') + '\n');
  for (const e of out.errors) process.stderr.write(`runboard: could not remove ${e}\n`);
  return out.errors.length ? 1 : 0;
}

function reasonOf(out: Awaited<ReturnType<typeof collect>>, id: string): string {
  return out.plan.remove.find((r) => r.item.id === id)?.reason ?? '';
}
