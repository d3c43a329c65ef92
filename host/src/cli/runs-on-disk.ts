/**
 * `runboard runs` where no supervisor is running (a fleet host that died, a machine whose supervisor
 * was stopped): the runs as their files record them, read without starting a supervisor. A supervisor
 * started there would first close the runs its predecessor left active (`supervisor-died`, markers
 * removed): the evidence of how a dead host left its runs would be rewritten by looking at it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { StatePaths } from '@runboard/supervisor/paths';
import { RunId, RunResult } from '@runboard/supervisor/protocol';

/** A result.json larger than this is no run record (a run cannot write it; skipped, not read). */
const MAX_RESULT_BYTES = 4 * 1024 * 1024;

export interface RunsOnDisk {
  /** Recorded runs, those still marked running first, then newest first (as the supervisor lists them). */
  runs: RunResult[];
  /** Runs recorded as running whose supervisor is not there to end them: run id → that supervisor's pid. */
  stranded: Map<string, number>;
}

function readJson(file: string): unknown {
  const text = readFileSync(file);
  if (text.length > MAX_RESULT_BYTES) throw new Error('too large');
  return JSON.parse(text.toString('utf8'));
}

function ls(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** Reads the state root's run records; writes nothing and starts nothing. */
export function runsOnDisk(paths: StatePaths, o: { activeOnly: boolean; limit: number }): RunsOnDisk {
  const read = (id: string): RunResult | undefined => {
    try {
      const r = RunResult.safeParse(readJson(path.join(paths.logsDir, id.slice(0, 8), id, 'result.json')));
      return r.success ? r.data : undefined;
    } catch {
      return undefined; // cut short by a crash, or not there yet: as the supervisor's list skips it
    }
  };
  const stranded = new Map<string, number>();
  const running: RunResult[] = [];
  for (const id of ls(path.join(paths.supervisorDir, 'active')).sort().reverse()) {
    if (!RunId.safeParse(id).success) continue;
    const r = read(id);
    if (r?.status !== 'running') continue;
    stranded.set(id, r.supervisorPid);
    running.push(r);
  }
  const runs = running.slice(0, o.limit);
  if (o.activeOnly) return { runs, stranded };
  const seen = new Set(runs.map((r) => r.runId));
  const days = ls(paths.logsDir)
    .filter((d) => /^\d{8}$/.test(d))
    .sort()
    .reverse();
  for (const day of days) {
    for (const id of ls(path.join(paths.logsDir, day)).sort().reverse()) {
      if (runs.length >= o.limit) return { runs, stranded };
      if (seen.has(id) || !RunId.safeParse(id).success) continue;
      seen.add(id);
      const r = read(id);
      if (r) runs.push(r);
    }
  }
  return { runs, stranded };
}
