/**
 * Retention on disk, for `runboard gc`, the board's disk figures and the supervisor's own passes
 * (supervisor/src/node/gc-auto.ts): a project's run logs (with their artifacts, under the
 * state root), its recordings (`<project>/recordings/`) and the stored sensitive values of its deleted
 * cards, found on disk; the retention plan (@runboard/project/retention) says what goes. Never removed:
 * a run going (its result says running, or the supervisor's active marker or its live list names it),
 * a recording being made (no end recorded), anything a card (or a card in the trash) names. Sizes are
 * taken with lstat and removal never follows a link: a run may have written the project's
 * recordings/, so a link there is removed as a link, and a recordings/ that is a link is refused.
 * A run whose worktree or workspace copy is neither kept nor discarded is kept; the copies themselves
 * (`<supervisor>/copies/<run-id>/`) are found and go by the policy like the rest (their run settled as
 * discarded, through `settle`). Every file call is asynchronous: the supervisor runs this beside runs.
 */
import type { Stats } from 'node:fs';
import { access, lstat as lstatP, readdir, readFile, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  formatBytes,
  planRetention,
  type RetentionPlan,
  type RetentionPolicy,
  type StoredItem,
} from '@runboard/project/retention';
import { RunId, RunResult } from '../protocol/index.ts';
import { launchKeysDir, pruneKeys } from './launch-keys.ts';
import { runLogDir, type StatePaths } from './paths.ts';
import { paramSecretsDir, deleteParamSecret } from './secrets.ts';

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
/** A workspace copy not settled (`<supervisor>/copies/<run-id>/`); `id` is its run's. */
export interface FoundCopy extends StoredItem {
  kind: 'copy';
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
  copies: FoundCopy[];
  orphanSecrets: OrphanSecret[];
}

async function ls(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

async function lstat(p: string): Promise<Stats | undefined> {
  try {
    return await lstatP(p);
  } catch {
    return undefined;
  }
}

/** Bytes under `p`, links counted as links (never followed). */
async function sizeOf(p: string): Promise<number> {
  const st = await lstat(p);
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  let n = 0;
  for (const name of await ls(p)) n += await sizeOf(path.join(p, name));
  return n;
}

async function readJson(file: string): Promise<unknown> {
  const st = await lstat(file);
  if (!st?.isFile() || st.size > MAX_JSON_BYTES) throw new Error('not a readable JSON file');
  return JSON.parse(await readFile(file, 'utf8'));
}

const inside = (dir: string, p: string): boolean => p === dir || p.startsWith(dir + path.sep);

async function real(p: string): Promise<string> {
  try {
    return await realpath(p);
  } catch {
    return p;
  }
}

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

/** The text of every card file of the project (trash included) and of its workflows. */
async function cardTexts(projectDir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const name of await ls(dir)) {
      const p = path.join(dir, name);
      const st = await lstat(p);
      if (!st) continue;
      if (st.isDirectory() && depth < 3) await walk(p, depth + 1);
      else if (st.isFile() && st.size <= MAX_CARD_BYTES && /\.(md|json)$/.test(name))
        out.push(await readFile(p, 'utf8'));
    }
  };
  await walk(path.join(projectDir, 'cards'), 0);
  return out;
}

const unsettled = (r: RunResult): boolean => r.worktree?.state === 'active' || r.copy?.state === 'active';

/**
 * What a project holds on disk. `going`: the runs the supervisor says are going (when one runs); a run
 * writes its result.json when it ends, so a folder without one is a run starting or going (or cut
 * short): never removed, and counted as going when the supervisor names it.
 */
export async function scanProject(
  paths: StatePaths,
  projectDir: string,
  going: RunResult[] = [],
): Promise<ProjectStorage> {
  // A card's own `lastRun:` is the board's pointer to its newest run, which keepPerCard keeps; it names
  // the run for good only while the card waits on it (Needs input: the next run resumes from it).
  const texts = (await cardTexts(projectDir)).map((t) =>
    /^status:\s*needs-input\s*$/m.test(t) ? t : t.replace(/^lastRun:.*$/gm, ''),
  );
  const named = new Set<string>();
  for (const t of texts) {
    for (const m of t.matchAll(/\b\d{8}-\d{6}-[0-9a-f]{6}\b/g)) named.add(m[0]);
    for (const m of t.matchAll(/\brec-[0-9a-z-]{1,64}/g)) named.add(m[0]);
    for (const m of t.matchAll(/\bs-[0-9a-f]{32}\b/g)) named.add(m[0]);
  }
  const active = new Set(await ls(path.join(paths.supervisorDir, 'active')));
  const goingById = new Map(going.map((r) => [r.runId, r]));
  const realProject = await real(projectDir);
  const ours = async (r: RunResult): Promise<boolean> =>
    r.card.project !== undefined
      ? r.card.project === projectDir || (await real(r.card.project)) === realProject
      : inside(projectDir, r.card.path) || inside(realProject, await real(r.card.path));
  const resultOf = async (dir: string, id: string): Promise<RunResult | undefined> => {
    try {
      const parsed = RunResult.safeParse(await readJson(path.join(dir, 'result.json')));
      if (parsed.success) return parsed.data;
    } catch {
      // no result yet: a run starting or going (or cut short)
    }
    return goingById.get(id);
  };

  const runs: FoundRun[] = [];
  for (const day of (await ls(paths.logsDir)).filter((d) => /^\d{8}$/.test(d))) {
    for (const id of await ls(path.join(paths.logsDir, day))) {
      if (!RunId.safeParse(id).success) continue;
      const dir = path.join(paths.logsDir, day, id);
      const r = await resultOf(dir, id);
      if (!r || !(await ours(r))) continue; // not a run gc can judge, or another project's: left alone
      const live = r.status === 'running' || active.has(id) || goingById.has(id);
      const endedAt = r.endedAt ? Date.parse(r.endedAt) : undefined;
      let bytes = 0;
      let artifactBytes = 0;
      for (const name of await ls(dir)) {
        const b = await sizeOf(path.join(dir, name));
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
        unsettled: unsettled(r),
      });
    }
  }

  // Workspace copies never kept or discarded (issue 33): judged by their run's record.
  const copies: FoundCopy[] = [];
  const copiesDir = path.join(paths.supervisorDir, 'copies');
  for (const id of await ls(copiesDir)) {
    if (!RunId.safeParse(id).success) continue;
    const r = await resultOf(runLogDir(paths, id), id);
    if (!r || r.copy?.state !== 'active' || !(await ours(r))) continue;
    const live = r.status === 'running' || active.has(id) || goingById.has(id);
    const endedAt = r.endedAt ? Date.parse(r.endedAt) : undefined;
    const dir = path.join(copiesDir, id);
    copies.push({
      kind: 'copy',
      id,
      dir,
      endedAt: live || endedAt === undefined || Number.isNaN(endedAt) ? undefined : endedAt,
      bytes: await sizeOf(dir),
      live,
      referenced: named.has(id),
    });
  }

  const recordings: FoundRecording[] = [];
  const recDir = path.join(projectDir, 'recordings');
  const recSt = await lstat(recDir);
  if (recSt?.isSymbolicLink())
    throw new Error(`${recDir} is a link, not a folder: gc does not follow it (replace it with a folder)`);
  if (recSt?.isDirectory()) {
    for (const id of await ls(recDir)) {
      const dir = path.join(recDir, id);
      if (!RECORDING_ID.test(id) || !(await lstat(dir))?.isDirectory()) continue;
      let endedAt: number | undefined;
      try {
        const meta = (await readJson(path.join(dir, 'recording.json'))) as { endedAt?: unknown };
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
        bytes: await sizeOf(dir),
        live: endedAt === undefined,
        referenced: named.has(id),
      });
    }
  }

  const orphanSecrets: OrphanSecret[] = [];
  const secretsDir = paramSecretsDir(paths);
  for (const name of await ls(secretsDir)) {
    const ref = SECRET_FILE.exec(name)?.[1];
    if (!ref || named.has(ref)) continue;
    let s: { card?: unknown; param?: unknown };
    try {
      s = (await readJson(path.join(secretsDir, name))) as typeof s;
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
  return { runs, recordings, copies, orphanSecrets };
}

export interface GcOutcome {
  plan: RetentionPlan;
  removedRuns: FoundRun[];
  removedRecordings: FoundRecording[];
  /** Workspace copies discarded (their runs settled as discarded). */
  removedCopies: FoundCopy[];
  removedSecrets: OrphanSecret[];
  /** Launch keys of the removed runs, removed with them (launch-keys.ts). */
  removedKeys: number;
  /** Removals that failed (a file the user cannot remove): said, not fatal. */
  errors: string[];
}

export interface CollectOptions {
  apply: boolean;
  now?: number;
  /** Discards a run's workspace copy and records it in the run's result (the supervisor's keep/discard). */
  settle?: (runId: string) => Promise<void>;
  /** Sweep the stored values of deleted cards (default true; the supervisor's own passes do not). */
  secrets?: boolean;
}

/** The plan for a project's storage (`policy`: its retention, or a stricter one under disk pressure); with `apply`, carries it out. */
export async function collect(
  paths: StatePaths,
  storage: ProjectStorage,
  policy: Pick<RetentionPolicy, 'maxAgeMs' | 'maxBytes' | 'keepPerCard'>,
  o: CollectOptions,
): Promise<GcOutcome> {
  const plan = planRetention(
    [...storage.runs, ...storage.recordings, ...storage.copies],
    policy,
    o.now ?? Date.now(),
  );
  const out: GcOutcome = {
    plan,
    removedRuns: [],
    removedRecordings: [],
    removedCopies: [],
    removedSecrets: [],
    removedKeys: 0,
    errors: [],
  };
  const done = (it: FoundRun | FoundRecording | FoundCopy): void => {
    if (it.kind === 'run') out.removedRuns.push(it);
    else if (it.kind === 'copy') out.removedCopies.push(it);
    else out.removedRecordings.push(it);
  };
  for (const { item } of plan.remove) {
    const it = item as FoundRun | FoundRecording | FoundCopy;
    if (!o.apply) {
      done(it);
      continue;
    }
    // checked again just before: a run's marker or a recording's end may have changed since the scan
    if (it.kind !== 'recording' && (await exists(path.join(paths.supervisorDir, 'active', it.id)))) continue;
    try {
      if (it.kind === 'copy') {
        if (!o.settle) throw new Error('a workspace copy is discarded through the supervisor');
        await o.settle(it.id);
      } else await rm(it.dir, { recursive: true, force: true });
      done(it);
    } catch (e) {
      out.errors.push(`${it.dir}: ${(e as Error).message}`);
    }
  }
  // the removed runs' launch keys with them: a key naming a run with no record only waits to be taken over
  if (o.apply && out.removedRuns.length) {
    const gone = new Set(out.removedRuns.map((r) => r.id));
    out.removedKeys = await pruneKeys(launchKeysDir(paths), async (runId) => gone.has(runId));
  }
  if (o.secrets !== false)
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
  /** Workspace copies not settled: bytes and how many. */
  copies: number;
  copyCount: number;
}

export function diskUsage(storage: ProjectStorage): DiskUsage {
  const artifacts = storage.runs.reduce((s, r) => s + r.artifactBytes, 0);
  return {
    runLogs: storage.runs.reduce((s, r) => s + r.bytes, 0) - artifacts,
    artifacts,
    recordings: storage.recordings.reduce((s, r) => s + r.bytes, 0),
    runs: storage.runs.length,
    recordingCount: storage.recordings.length,
    copies: storage.copies.reduce((s, c) => s + c.bytes, 0),
    copyCount: storage.copies.length,
  };
}

const DAY_MS = 86_400_000;
const ageText = (ms: number): string =>
  ms % DAY_MS === 0
    ? `${ms / DAY_MS}d`
    : ms % 3_600_000 === 0
      ? `${ms / 3_600_000}h`
      : ms % 60_000 === 0
        ? `${ms / 60_000}m`
        : `${ms} ms`;

const minFreeText = (m: RetentionPolicy['minFree']): string =>
  'percent' in m ? `${m.percent}%` : m.bytes === 0 ? 'never' : formatBytes(m.bytes);

/** The policy in words, as `runboard gc` and Settings say it. */
export function policyText(p: RetentionPolicy): string {
  return `maxAge ${ageText(p.maxAgeMs)}, maxSize ${p.maxBytes === undefined ? 'none' : formatBytes(p.maxBytes)}, keepPerCard ${p.keepPerCard}`;
}

/** When the supervisor applies it by itself, in words. */
export function autoText(p: RetentionPolicy): string {
  return p.auto
    ? `applied by the supervisor every ${ageText(p.intervalMs)}${'bytes' in p.minFree && p.minFree.bytes === 0 ? '' : `, and at once when the disk holding the state has less than ${minFreeText(p.minFree)} free (then past the policy, oldest first)`}`
    : 'applied only by `runboard gc --yes` (auto: false)';
}
