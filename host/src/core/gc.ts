/**
 * `runboard gc` and the board's disk figures: a project's run logs (with their artifacts, under the
 * state root), its recordings (`<project>/recordings/`) and the stored sensitive values of its deleted
 * cards, found on disk; the retention plan (@runboard/project/retention) says what goes. Never removed:
 * a run going (its result says running, or the supervisor's active marker or its live list names it),
 * a recording being made (no end recorded), anything a card (or a card in the trash) names. Sizes are
 * taken with lstat and removal never follows a link: a run may have written the project's
 * recordings/, so a link there is removed as a link, and a recordings/ that is a link is refused.
 */
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, rmSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { StatePaths } from '@runboard/supervisor/paths';
import { RunId, RunResult } from '@runboard/supervisor/protocol';
import { paramSecretsDir, deleteParamSecret } from '@runboard/supervisor/secrets';
import {
  formatBytes,
  planRetention,
  retentionPolicy,
  type Retention,
  type RetentionPlan,
  type RetentionPolicy,
  type StoredItem,
} from '@runboard/project/retention';
import type { DiskUsageView } from '../shared/board-types.ts';

const MAX_JSON_BYTES = 4 * 1024 * 1024;
const MAX_CARD_BYTES = 8 * 1024 * 1024;
const RECORDING_ID = /^rec-[0-9a-z-]{1,64}$/;
const SECRET_FILE = /^(s-[0-9a-f]{32})\.json$/;
/** Log files of a run; everything else in its folder (frames, filmstrip, schema.json, …) is an artifact. */
const LOG_FILES = new Set(['events.jsonl', 'stdout.log', 'stderr.log', 'result.json', 'output.log']);

export interface FoundRun extends StoredItem {
  kind: 'run';
  dir: string;
  /** Bytes of its artifacts (the rest of `bytes` is its log). */
  artifactBytes: number;
}
export interface FoundRecording extends StoredItem {
  kind: 'recording';
  dir: string;
}
/** A stored sensitive value whose card is gone or no longer names it. */
export interface OrphanSecret {
  ref: string;
  card: string;
  param: string;
}

export interface ProjectStorage {
  runs: FoundRun[];
  recordings: FoundRecording[];
  orphanSecrets: OrphanSecret[];
}

function ls(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function lstat(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** Bytes under `p`, links counted as links (never followed). */
function sizeOf(p: string): number {
  const st = lstat(p);
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  return ls(p).reduce((s, name) => s + sizeOf(path.join(p, name)), 0);
}

function readJson(file: string): unknown {
  const st = lstat(file);
  if (!st?.isFile() || st.size > MAX_JSON_BYTES) throw new Error('not a readable JSON file');
  return JSON.parse(readFileSync(file, 'utf8'));
}

const inside = (dir: string, p: string): boolean => p === dir || p.startsWith(dir + path.sep);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

/** The text of every card file of the project (trash included) and of its workflows. */
function cardTexts(projectDir: string): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number): void => {
    for (const name of ls(dir)) {
      const p = path.join(dir, name);
      const st = lstat(p);
      if (!st) continue;
      if (st.isDirectory() && depth < 3) walk(p, depth + 1);
      else if (st.isFile() && st.size <= MAX_CARD_BYTES && /\.(md|json)$/.test(name))
        out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(path.join(projectDir, 'cards'), 0);
  return out;
}

/**
 * What a project holds on disk. `going`: the runs the supervisor says are going (when one runs); a run
 * writes its result.json when it ends, so a folder without one is a run starting or going (or cut
 * short): never removed, and counted as going when the supervisor names it.
 */
export function scanProject(paths: StatePaths, projectDir: string, going: RunResult[] = []): ProjectStorage {
  const texts = cardTexts(projectDir);
  const named = new Set<string>();
  for (const t of texts) {
    for (const m of t.matchAll(/\b\d{8}-\d{6}-[0-9a-f]{6}\b/g)) named.add(m[0]);
    for (const m of t.matchAll(/\brec-[0-9a-z-]{1,64}/g)) named.add(m[0]);
    for (const m of t.matchAll(/\bs-[0-9a-f]{32}\b/g)) named.add(m[0]);
  }
  const active = new Set(ls(path.join(paths.supervisorDir, 'active')));
  const goingById = new Map(going.map((r) => [r.runId, r]));
  const realProject = real(projectDir);
  const ours = (r: RunResult): boolean =>
    r.card.project !== undefined
      ? r.card.project === projectDir || real(r.card.project) === realProject
      : inside(projectDir, r.card.path) || inside(realProject, real(r.card.path));

  const runs: FoundRun[] = [];
  for (const day of ls(paths.logsDir).filter((d) => /^\d{8}$/.test(d))) {
    for (const id of ls(path.join(paths.logsDir, day))) {
      if (!RunId.safeParse(id).success) continue;
      const dir = path.join(paths.logsDir, day, id);
      let r: RunResult | undefined = goingById.get(id);
      try {
        const parsed = RunResult.safeParse(readJson(path.join(dir, 'result.json')));
        if (parsed.success) r = parsed.data;
      } catch {
        // no result yet: a run starting or going (or cut short)
      }
      if (!r || !ours(r)) continue; // not a run gc can judge, or another project's: left alone
      const live = r.status === 'running' || active.has(id) || goingById.has(id);
      const endedAt = r.endedAt ? Date.parse(r.endedAt) : undefined;
      let bytes = 0;
      let artifactBytes = 0;
      for (const name of ls(dir)) {
        const b = sizeOf(path.join(dir, name));
        bytes += b;
        if (!LOG_FILES.has(name)) artifactBytes += b;
      }
      runs.push({
        kind: 'run',
        id,
        dir,
        card: r.card.id ?? r.card.path,
        endedAt: live || endedAt === undefined || Number.isNaN(endedAt) ? undefined : endedAt,
        bytes,
        artifactBytes,
        live,
        referenced: named.has(id),
      });
    }
  }

  const recordings: FoundRecording[] = [];
  const recDir = path.join(projectDir, 'recordings');
  const recSt = lstat(recDir);
  if (recSt?.isSymbolicLink())
    throw new Error(`${recDir} is a link, not a folder: gc does not follow it (replace it with a folder)`);
  if (recSt?.isDirectory()) {
    for (const id of ls(recDir)) {
      const dir = path.join(recDir, id);
      if (!RECORDING_ID.test(id) || !lstat(dir)?.isDirectory()) continue;
      let endedAt: number | undefined;
      try {
        const meta = readJson(path.join(dir, 'recording.json')) as { endedAt?: unknown };
        if (typeof meta.endedAt === 'string' && !Number.isNaN(Date.parse(meta.endedAt)))
          endedAt = Date.parse(meta.endedAt);
      } catch {
        endedAt = undefined; // being recorded (or its recorder died): kept
      }
      recordings.push({
        kind: 'recording',
        id,
        dir,
        endedAt,
        bytes: sizeOf(dir),
        live: endedAt === undefined,
        referenced: named.has(id),
      });
    }
  }

  const orphanSecrets: OrphanSecret[] = [];
  const secretsDir = paramSecretsDir(paths);
  for (const name of ls(secretsDir)) {
    const ref = SECRET_FILE.exec(name)?.[1];
    if (!ref || named.has(ref)) continue;
    let s: { card?: unknown; param?: unknown };
    try {
      s = readJson(path.join(secretsDir, name)) as typeof s;
    } catch {
      continue;
    }
    if (
      typeof s.card !== 'string' ||
      !(inside(path.join(projectDir, 'cards'), s.card) || inside(path.join(realProject, 'cards'), s.card))
    )
      continue;
    orphanSecrets.push({ ref, card: s.card, param: typeof s.param === 'string' ? s.param : '?' });
  }
  return { runs, recordings, orphanSecrets };
}

export interface GcOutcome {
  plan: RetentionPlan;
  removedRuns: FoundRun[];
  removedRecordings: FoundRecording[];
  removedSecrets: OrphanSecret[];
  /** Removals that failed (a file the user cannot remove): said, not fatal. */
  errors: string[];
}

/** The plan for a project's storage; with `apply`, carries it out. */
export function collect(
  paths: StatePaths,
  storage: ProjectStorage,
  policy: RetentionPolicy,
  o: { apply: boolean; now?: number },
): GcOutcome {
  const plan = planRetention([...storage.runs, ...storage.recordings], policy, o.now ?? Date.now());
  const out: GcOutcome = { plan, removedRuns: [], removedRecordings: [], removedSecrets: [], errors: [] };
  for (const { item } of plan.remove) {
    const it = item as FoundRun | FoundRecording;
    if (!o.apply) {
      if (it.kind === 'run') out.removedRuns.push(it);
      else out.removedRecordings.push(it);
      continue;
    }
    // checked again just before: a run's marker or a recording's end may have changed since the scan
    if (it.kind === 'run' && existsSync(path.join(paths.supervisorDir, 'active', it.id))) continue;
    try {
      rmSync(it.dir, { recursive: true, force: true });
      if (it.kind === 'run') out.removedRuns.push(it);
      else out.removedRecordings.push(it);
    } catch (e) {
      out.errors.push(`${it.dir}: ${(e as Error).message}`);
    }
  }
  for (const s of storage.orphanSecrets) {
    if (o.apply) deleteParamSecret(paths, s.ref);
    out.removedSecrets.push(s);
  }
  return out;
}

/** The board's figures: bytes of run logs, their artifacts and recordings of the project. */
export interface DiskUsage {
  runLogs: number;
  artifacts: number;
  recordings: number;
  runs: number;
  recordingCount: number;
}

export function diskUsage(storage: ProjectStorage): DiskUsage {
  const artifacts = storage.runs.reduce((s, r) => s + r.artifactBytes, 0);
  return {
    runLogs: storage.runs.reduce((s, r) => s + r.bytes, 0) - artifacts,
    artifacts,
    recordings: storage.recordings.reduce((s, r) => s + r.bytes, 0),
    runs: storage.runs.length,
    recordingCount: storage.recordings.length,
  };
}

const DAY_MS = 86_400_000;
const ageText = (ms: number): string =>
  ms % DAY_MS === 0 ? `${ms / DAY_MS}d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms} ms`;

/** The policy in words, as `runboard gc` and Settings say it. */
export function policyText(p: RetentionPolicy): string {
  return `maxAge ${ageText(p.maxAgeMs)}, maxSize ${p.maxBytes === undefined ? 'none' : formatBytes(p.maxBytes)}, keepPerCard ${p.keepPerCard}`;
}

/** Settings' figures for a project (a scan of its runs and recordings; nothing is removed). */
export function diskUsageView(
  paths: StatePaths,
  projectDir: string,
  retention: Retention | undefined,
): DiskUsageView {
  let storage: ProjectStorage;
  try {
    storage = scanProject(paths, projectDir);
  } catch {
    storage = { runs: [], recordings: [], orphanSecrets: [] }; // a linked recordings/: gc says why
  }
  return { ...diskUsage(storage), policy: policyText(retentionPolicy(retention)) };
}
