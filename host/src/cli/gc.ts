/**
 * `runboard gc`: the project's retention policy (config.yaml `retention:`) applied to its run logs
 * and artifacts (under the state root) and its recordings, and the stored sensitive values of its
 * deleted cards swept. Says what it would remove unless `--yes`; one line per kind with the space.
 * Never a run going, a recording being made, or anything a card names (host/src/core/gc.ts).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { RunResult } from '@runboard/supervisor/protocol';
import { loadConfig } from '@runboard/project/config';
import { formatBytes, retentionPolicy } from '@runboard/project/retention';
import { collect, diskUsage, policyText, scanProject } from '../core/gc.ts';
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
  const storage = scanProject(paths, projectDir, await goingRuns(paths));
  const before = diskUsage(storage);
  const out = collect(paths, storage, policy, { apply });
  const runBytes = out.removedRuns.reduce((s, r) => s + r.bytes, 0);
  const artifactBytes = out.removedRuns.reduce((s, r) => s + r.artifactBytes, 0);
  const recBytes = out.removedRecordings.reduce((s, r) => s + r.bytes, 0);
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
          secrets: out.removedSecrets.map((s) => ({ ref: s.ref, card: s.card, param: s.param })),
        },
        freed: runBytes + recBytes,
        kept: {
          live: kept('live', 'run') + kept('live', 'recording'),
          referenced: kept('referenced', 'run') + kept('referenced', 'recording'),
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
    `in use: run logs ${formatBytes(before.runLogs)}, artifacts ${formatBytes(before.artifacts)} (${plural(before.runs, 'run')}), recordings ${formatBytes(before.recordings)} (${before.recordingCount})`,
    `${verb} run logs: ${plural(out.removedRuns.length, 'run')}, ${formatBytes(runBytes)} (artifacts ${formatBytes(artifactBytes)} of it)`,
    `${verb} recordings: ${out.removedRecordings.length}, ${formatBytes(recBytes)}`,
    `${verb} stored values of deleted cards: ${out.removedSecrets.length}`,
    `kept whatever the policy: ${plural(kept('live', 'run'), 'run')} going, ${plural(kept('live', 'recording'), 'recording')} being made, ${kept('referenced', 'run') + kept('referenced', 'recording')} named by a card, ${plural(kept('last-of-card', 'run'), 'run')} among the last ${policy.keepPerCard} of their card`,
    `${apply ? 'freed' : 'would free'} ${formatBytes(runBytes + recBytes)}`,
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

function reasonOf(out: ReturnType<typeof collect>, id: string): string {
  return out.plan.remove.find((r) => r.item.id === id)?.reason ?? '';
}
