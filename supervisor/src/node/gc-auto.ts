/**
 * The retention policy applied by the supervisor itself (issue 34 item 4; soak 3's state root filled
 * with run logs and stayed full). For each registered project whose `retention.auto` is on (the
 * default): every `retention.interval` (default 1h) the policy as `runboard gc --yes` applies it; and
 * at once when a write in the state root fails ENOSPC or the state root's free space is below
 * `retention.minFree` (default 2%, looked at every minute): the oldest removable runs, copies and
 * recordings go until that much is free, first beyond the policy's `keepPerCard`, then down to the last
 * run of each card, then those too. Never a run going, one a card names (workflow, attempts), or one
 * whose worktree or workspace copy is not settled (@runboard/supervisor/gc decides; the copies
 * themselves are discarded through the registry). What a pass removed goes to the log and to
 * `<supervisor>/retention.json`, which the board's Disk section shows. One pass at a time. The launch
 * keys (launch-keys.ts) are pruned in the same chain: at the start, hourly, and after runs went.
 */
import { readFile, rename, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { loadConfig } from '@runboard/project/config';
import {
  formatBytes,
  minFreeBytes,
  retentionPolicy,
  type RetentionPolicy,
} from '@runboard/project/retention';
import { collect, scanProject, type GcOutcome } from '../common/gc.ts';
import type { StatePaths } from '../common/paths.ts';
import type { RunResult } from '../protocol/index.ts';

/** How often projects' intervals and the free space are looked at. */
const TICK_MS = 60_000;
/** A disk-full signal within this long of the last pressure pass's start waits for the next one. */
const PRESSURE_GAP_MS = 2_000;
/** The same after a pressure pass that found nothing to remove (all going, named or not settled). */
const FRUITLESS_GAP_MS = 30_000;
/** How often launch keys are pruned besides after a pass that removed runs (launch-keys.ts). */
const KEYS_EVERY_MS = 3600_000;

export type Trigger = 'interval' | 'low-space' | 'disk-full';

export interface PassRecord {
  at: string;
  trigger: Trigger;
  removedRuns: number;
  removedCopies: number;
  removedRecordings: number;
  freed: number;
  errors: number;
}

export interface KeeperOptions {
  paths: StatePaths;
  log: Logger;
  /** The registered projects (projects.ts). */
  projects: () => string[];
  /** The runs going now (never removed). */
  going: () => RunResult[];
  /** Discards a run's workspace copy through the registry (its result says so). */
  settle: (runId: string) => Promise<void>;
  /**
   * Removes the launch keys no launch can use any more (old, or naming a run with no record; the
   * registry's): at the start, every hour and after a pass that removed runs. Answers how many went.
   */
  pruneKeys?: () => Promise<number>;
  now?: () => number;
  tickMs?: number;
}

export class RetentionKeeper {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private busy = false;
  private pressureWanted: Trigger | undefined;
  private lastPressure = 0;
  private lastFreed = 1;
  private readonly passes = new Map<string, PassRecord>();
  private loaded = false;
  private keysPrunedAt = -Infinity;
  private readonly file: string;
  private readonly now: () => number;

  constructor(private readonly o: KeeperOptions) {
    this.file = path.join(o.paths.supervisorDir, 'retention.json');
    this.now = o.now ?? Date.now;
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.o.tickMs ?? TICK_MS);
    this.timer.unref();
    this.tick(); // a supervisor started after a long pause catches up at once
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** A write in the state root failed ENOSPC: a pressure pass now (or right after the one going). */
  diskFull(where: string): void {
    this.o.log.warn({ where }, 'the disk holding the state is full: applying the retention policy now');
    this.want('disk-full');
  }

  /** Settles once the passes asked for so far are done (tests, shutdown). */
  idle(): Promise<void> {
    return this.chain;
  }

  private want(t: Trigger): void {
    if (this.pressureWanted !== 'disk-full') this.pressureWanted = t;
    if (this.busy) return; // the pass going looks at pressureWanted when it ends
    const gap = this.lastFreed > 0 ? PRESSURE_GAP_MS : FRUITLESS_GAP_MS;
    const wait = Math.max(0, this.lastPressure + gap - this.now());
    if (wait > 0) {
      setTimeout(() => this.want(this.pressureWanted ?? t), wait).unref();
      return;
    }
    this.run(async () => {
      const trigger = this.pressureWanted;
      this.pressureWanted = undefined;
      if (!trigger) return;
      this.lastPressure = this.now();
      this.lastFreed = await this.pressurePass(trigger);
    });
  }

  private tick(): void {
    this.run(async () => {
      if (this.now() - this.keysPrunedAt >= KEYS_EVERY_MS) await this.pruneKeys('interval');
      await this.loadPasses();
      for (const project of this.o.projects()) {
        const policy = this.policy(project);
        if (!policy?.auto) continue;
        const last = this.passes.get(project);
        const due = !last || this.now() - Date.parse(last.at) >= policy.intervalMs;
        if (due) await this.apply(project, policy, 'interval', policy.keepPerCard, undefined);
      }
    });
    void this.chain.then(() => this.lowSpace());
  }

  /** Free space under a project's minFree: a pressure pass. */
  private async lowSpace(): Promise<void> {
    const disk = await this.disk();
    if (!disk) return;
    for (const project of this.o.projects()) {
      const policy = this.policy(project);
      if (!policy?.auto) continue;
      const want = minFreeBytes(policy.minFree, disk.total);
      if (want > 0 && disk.free < want) return this.want('low-space');
    }
  }

  private run(job: () => Promise<void>): void {
    this.chain = this.chain.then(async () => {
      this.busy = true;
      try {
        await job();
      } catch (err) {
        this.o.log.error({ err: (err as Error).message }, 'retention pass failed');
      } finally {
        this.busy = false;
      }
      if (this.pressureWanted) this.want(this.pressureWanted);
    });
  }

  private policy(project: string): RetentionPolicy | undefined {
    try {
      return retentionPolicy(loadConfig(project).retention);
    } catch (err) {
      this.o.log.warn(
        { project, err: (err as Error).message.slice(0, 500) },
        'retention not applied: the project config cannot be read',
      );
      return undefined;
    }
  }

  private async disk(): Promise<{ free: number; total: number } | undefined> {
    try {
      const s = await statfs(this.o.paths.logsDir);
      return { free: s.bavail * s.bsize, total: s.blocks * s.bsize };
    } catch {
      return undefined; // no logs folder yet: nothing to prune
    }
  }

  /**
   * Until each project's minFree is free: oldest removable first, keeping per card the policy's
   * keepPerCard, then 1, then (only after a write failed ENOSPC) 0; what is going, named or not
   * settled is never removable.
   */
  private async pressurePass(trigger: Trigger): Promise<number> {
    let freed = 0;
    for (const project of this.o.projects()) {
      const policy = this.policy(project);
      if (!policy?.auto) continue;
      // Low free space that other files may have caused thins a card's runs to its last one at most;
      // only a write that failed (Runboard itself cannot go on) takes a card's last run too.
      const steps = [
        policy.keepPerCard,
        Math.min(1, policy.keepPerCard),
        ...(trigger === 'disk-full' ? [0] : []),
      ];
      for (const keep of [...new Set(steps)]) {
        const disk = await this.disk();
        if (!disk) return freed;
        const need = minFreeBytes(policy.minFree, disk.total) - disk.free;
        if (need <= 0) break;
        const out = await this.apply(project, policy, trigger, keep, need);
        freed += out.plan.remove.length;
      }
    }
    return freed;
  }

  /** One project's pass: `need` bytes to free past the policy (pressure), or none (the policy alone). */
  private async apply(
    project: string,
    policy: RetentionPolicy,
    trigger: Trigger,
    keepPerCard: number,
    need: number | undefined,
  ): Promise<GcOutcome> {
    const storage = await scanProject(this.o.paths, project, this.o.going());
    const held = [...storage.runs, ...storage.recordings, ...storage.copies].reduce((s, i) => s + i.bytes, 0);
    const maxBytes =
      need === undefined ? policy.maxBytes : Math.min(policy.maxBytes ?? Infinity, Math.max(0, held - need));
    const out = await collect(
      this.o.paths,
      storage,
      { maxAgeMs: policy.maxAgeMs, maxBytes, keepPerCard },
      { apply: true, settle: this.o.settle, secrets: false, now: this.now() },
    );
    const freed = [...out.removedRuns, ...out.removedRecordings, ...out.removedCopies].reduce(
      (s, i) => s + i.bytes,
      0,
    );
    const record: PassRecord = {
      at: new Date(this.now()).toISOString(),
      trigger,
      removedRuns: out.removedRuns.length,
      removedCopies: out.removedCopies.length,
      removedRecordings: out.removedRecordings.length,
      freed,
      errors: out.errors.length,
    };
    // the launch keys of the runs removed go with them (a key naming no run would only be taken over)
    if (out.removedRuns.length) await this.pruneKeys('runs removed', out.removedKeys);
    // an interval pass is recorded always (its time is when the next is due); a pressure pass when it did something
    if (need === undefined || freed > 0 || out.errors.length) {
      this.passes.set(project, record);
      await this.savePasses();
    }
    if (freed > 0 || out.errors.length)
      this.o.log.info(
        {
          project,
          trigger,
          keepPerCard,
          runs: out.removedRuns.map((r) => r.id).slice(0, 50),
          copies: out.removedCopies.map((c) => c.id).slice(0, 50),
          recordings: out.removedRecordings.map((r) => r.id).slice(0, 50),
          errors: out.errors.slice(0, 10),
        },
        `retention removed ${out.removedRuns.length} run log(s), ${out.removedCopies.length} workspace copy(ies) and ${out.removedRecordings.length} recording(s) of ${project}: ${formatBytes(freed)} freed (${trigger})`,
      );
    return out;
  }

  /**
   * Prunes the launch keys (within the chain: one pass at a time); a failure never stops a pass.
   * `already`: the removed runs' keys the pass removed with them (common/gc.ts), said in the same line.
   */
  private async pruneKeys(why: 'interval' | 'runs removed', already = 0): Promise<void> {
    if (!this.o.pruneKeys) return;
    this.keysPrunedAt = this.now();
    try {
      const removed = already + (await this.o.pruneKeys());
      if (removed)
        this.o.log.info({ removed, why }, `pruned ${removed} launch key(s) no launch can use (${why})`);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'launch keys not pruned; the next pass tries again');
    }
  }

  private async loadPasses(): Promise<void> {
    if (this.loaded) return;
    this.loaded = true;
    try {
      const data = JSON.parse(await readFile(this.file, 'utf8')) as { passes?: Record<string, PassRecord> };
      for (const [project, p] of Object.entries(data.passes ?? {}))
        if (p && typeof p.at === 'string' && !Number.isNaN(Date.parse(p.at))) this.passes.set(project, p);
    } catch {
      // none yet (or cut short by a crash): every project is due
    }
  }

  private async savePasses(): Promise<void> {
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      await writeFile(tmp, JSON.stringify({ version: 1, passes: Object.fromEntries(this.passes) }), {
        mode: 0o600,
      });
      await rename(tmp, this.file);
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message }, 'cannot write retention.json');
    }
  }
}
