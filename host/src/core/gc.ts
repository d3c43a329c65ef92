/**
 * The board's disk figures (Settings → Disk): the same scan `runboard gc` makes
 * (@runboard/supervisor/gc), and what the supervisor's last pass of the policy removed by itself
 * (`<state>/supervisor/retention.json`, written by supervisor/src/node/gc-auto.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { StatePaths } from '@runboard/supervisor/paths';
import { autoText, diskUsage, policyText, scanProject, type ProjectStorage } from '@runboard/supervisor/gc';
import { retentionPolicy, type Retention } from '@runboard/project/retention';
import type { AutoGcPass, DiskUsageView } from '../shared/board-types.ts';

/** The supervisor's last pass for this project, if it made one (a file it may not have written yet). */
async function lastPass(paths: StatePaths, projectDir: string): Promise<AutoGcPass | undefined> {
  try {
    const text = await readFile(path.join(paths.supervisorDir, 'retention.json'), 'utf8');
    const data = JSON.parse(text) as { passes?: Record<string, AutoGcPass> };
    const p = data.passes?.[projectDir];
    return p && typeof p.at === 'string' && typeof p.freed === 'number' ? p : undefined;
  } catch {
    return undefined;
  }
}

/** Settings' figures for a project (a scan of its runs, copies and recordings; nothing is removed). */
export async function diskUsageView(
  paths: StatePaths,
  projectDir: string,
  retention: Retention | undefined,
): Promise<DiskUsageView> {
  let storage: ProjectStorage;
  try {
    storage = await scanProject(paths, projectDir);
  } catch {
    storage = { runs: [], recordings: [], copies: [], orphanSecrets: [] }; // a linked recordings/: gc says why
  }
  const last = await lastPass(paths, projectDir);
  const policy = retentionPolicy(retention);
  return {
    ...diskUsage(storage),
    policy: policyText(policy),
    auto: autoText(policy),
    ...(last ? { lastAuto: last } : {}),
  };
}
