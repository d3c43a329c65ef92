/**
 * The runs this supervisor knows: active ones in memory, ended ones on disk. Launch validation
 * (payload, grant, paths, sandbox availability) happens here, before anything is spawned; the asks a
 * launch allows are checked in launch-allow.ts, and which card each run was for is indexed by
 * run-index.ts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { GrantError, validateGrant, validateReadable } from '../common/grants.ts';
import { runLogDir, type StatePaths } from '../common/paths.ts';
import {
  drivesDesktop,
  ErrorCodes,
  JsonRpcCodes,
  ResponseError,
  RunId,
  RunResult,
  type DisplayBusy,
  type LaunchRun,
} from '../protocol/index.ts';
import { diskSource, type AttachSource } from './attach.ts';
import { allowedAsks, resumeFrom, withAllowed } from './launch-allow.ts';
import { ResultFile } from './result-file.ts';
import { CardIndex } from './run-index.ts';
import { launchKeysDir } from '../common/launch-keys.ts';
import { LaunchKeys } from './launch-keys.ts';
import type { FleetGateway } from './fleet/gateway.ts';
import type { RemoteRun } from './fleet/remote-run.ts';
import { Run } from './run.ts';
import type { RunDeps } from './run-deps.ts';
import { GONE_SCRATCH_PREFIX, removeScratch } from './run-files.ts';
import { discardWorktree, keepWorktree, worktreeWritableConflict, WorktreeError } from './worktrees.ts';
import { CopyError, settleCopy } from './workspace-copy.ts';

function newRunId(now = new Date()): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const date = `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}`;
  const time = `${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  // The suffix starts with the milliseconds (3 hex digits), so ids sort by start time, as "newest first" needs.
  const ms = now.getUTCMilliseconds().toString(16).padStart(3, '0');
  return `${date}-${time}-${ms}${randomBytes(2).toString('hex').slice(0, 3)}`;
}

/** A run of this supervisor: a local worker, or (in a fleet) a host's run mirrored here. */
type AnyRun = Run | RemoteRun;

export class RunRegistry {
  private readonly active = new Map<string, AnyRun>();
  /** Which card each run was for (run-index.ts). */
  private readonly byCard: CardIndex;
  private readonly recent = new Map<string, AnyRun>(); // ended in this process: fast attach, bounded
  /** In a fleet (scheduler.backend: redis): launches become jobs for the hosts of the fleet. */
  fleet: FleetGateway | undefined;
  private acceptingRuns = true;
  /** Keeps and discards going, by run: a second request for one joins it (settleWorktree). */
  private readonly settling = new Map<string, { how: 'keep' | 'discard'; done: Promise<RunResult> }>();
  /** Launch keys: a second launch with a key returns the first one's run (launch-keys.ts). */
  private readonly keys: LaunchKeys;

  constructor(
    readonly paths: StatePaths,
    private readonly deps: RunDeps,
  ) {
    mkdirSync(path.join(paths.supervisorDir, 'active'), { recursive: true, mode: 0o700 });
    this.byCard = new CardIndex(paths.logsDir, (id) => this.readResult(id));
    this.keys = new LaunchKeys(launchKeysDir(paths));
  }

  /** Removes the launch keys no launch can use any more (launch-keys.ts); retention's passes call it. */
  pruneLaunchKeys(): Promise<number> {
    return this.keys.prune(async (runId) => {
      // a run going has its record (an ended one may be remembered here after retention removed it)
      if (this.active.has(runId)) return true;
      try {
        await access(path.join(runLogDir(this.paths, runId), 'result.json'));
        return true;
      } catch {
        return false;
      }
    });
  }

  get activeCount(): number {
    return this.active.size;
  }

  launch(p: z.output<typeof LaunchRun.params>): { runId: string; logDir: string; again?: true } {
    // the same launch again (its key seen for this card): the run the first one started, not a second
    const first = p.key === undefined ? undefined : this.keys.runOf(p.card.path, p.key);
    const firstRun = first === undefined ? undefined : (this.get(first)?.result ?? this.record(first));
    if (firstRun && firstRun.card.path === p.card.path)
      return { runId: firstRun.runId, logDir: runLogDir(this.paths, firstRun.runId), again: true };
    if (!this.acceptingRuns)
      throw new ResponseError(
        ErrorCodes.ShuttingDown,
        'the supervisor is shutting down; launch again in a moment',
      );
    let validated;
    try {
      validated = validateGrant(this.paths, p.grant, p.workspace, p.paths ?? [], p.flow.sandbox?.writable);
      if (p.flow.sandbox?.read)
        p = {
          ...p,
          flow: {
            ...p.flow,
            sandbox: { ...p.flow.sandbox, read: validateReadable(this.paths, p.flow.sandbox.read) },
          },
        };
    } catch (err) {
      if (err instanceof GrantError) throw new ResponseError(err.code, err.message, { reason: err.reason });
      throw err;
    }
    const gitReach = p.flow.worktree
      ? worktreeWritableConflict(validated.workspace, validated.writable)
      : null;
    if (gitReach) throw new ResponseError(ErrorCodes.PathOutsideGrant, gitReach, { reason: 'outside' });
    if (p.flow.runner === 'command' && p.command === undefined) {
      throw new ResponseError(
        JsonRpcCodes.InvalidParams,
        "invalid params for run/launch: a `command` flow needs the card's `command:`",
      );
    }
    // One computer-use run at a time drives the real display (private displays have no limit here).
    if (drivesDesktop(p.flow.runner) && !p.flow.computerUse?.privateDisplay) {
      const busy = [...this.active.values()].find((r) => r.drivesRealDisplay);
      if (busy)
        throw new ResponseError(
          ErrorCodes.InvalidState,
          `run ${busy.id} is driving the display; one computer-use run at a time may (give the flow computerUse.privateDisplay: true to run in parallel)`,
          { reason: 'display-busy', runId: busy.id } satisfies DisplayBusy,
        );
    }
    const record = (id: string): RunResult | null => this.get(id)?.result ?? this.readResult(id);
    const allowed = p.allow ? allowedAsks(p, validated.workspace, record, this.deps) : [];
    const runId = newRunId();
    const logDir = runLogDir(this.paths, runId);
    let run: AnyRun;
    try {
      // the key on disk before the run's record and before anything is spawned (launch-keys.ts)
      if (p.key !== undefined) this.keys.record(p.card.path, p.key, runId, first !== undefined);
      run = this.fleet
        ? this.fleet.remoteRun(runId, logDir, p, validated.workspace, validated.grant.path)
        : new Run(this.deps, {
            runId,
            logDir,
            scratchDir: path.join(this.paths.scratchDir, runId),
            card: p.card,
            // The jail gets the writable trees as they were checked, not paths to resolve again.
            flow: withAllowed(
              p.flow.sandbox?.writable
                ? { ...p.flow, sandbox: { ...p.flow.sandbox, writable: validated.writable } }
                : p.flow,
              allowed,
              validated.workspace,
            ),
            workspace: validated.workspace,
            command: p.command,
            grantPath: validated.grant.path,
            ...resumeFrom(p, allowed, record, this.paths),
          });
    } catch (err) {
      if (p.key !== undefined && (err as NodeJS.ErrnoException).code !== 'EEXIST')
        this.keys.forget(p.card.path, p.key);
      if (err instanceof ResponseError) throw err;
      const e = err as NodeJS.ErrnoException;
      this.deps.log.warn(
        { runId, err: e.code ?? e.message },
        'launch refused: cannot create the run log dir',
      );
      if (e.code === 'ENOSPC') this.deps.onDiskFull?.(logDir);
      throw new ResponseError(
        ErrorCodes.LogDirFailed,
        `could not create the run's log dir ${logDir}: ${e.code ?? e.message}${e.code === 'ENOSPC' ? ' (the disk is full; free space and launch again)' : ''}`,
      );
    }
    if (allowed.length) run.result.allowed = allowed;
    this.track(runId, run);
    this.byCard.add(runId, p.card.path);
    run.start();
    return { runId, logDir };
  }

  private track(runId: string, run: AnyRun): void {
    this.active.set(runId, run);
    void run.whenEnded().then(() => {
      this.active.delete(runId);
      this.recent.set(runId, run);
      if (this.recent.size > 200) this.recent.delete(this.recent.keys().next().value!);
    });
  }

  /** Jail pids of the active runs: every process of a run descends from one of them. */
  jailPids(): Set<number> {
    const out = new Set<number>();
    for (const r of this.active.values()) if (r.jailPid) out.add(r.jailPid);
    return out;
  }

  get(runId: string): AnyRun | undefined {
    return this.active.get(runId) ?? this.recent.get(runId);
  }

  /** The person's answer to a live ask of an active run (live-asks.ts). */
  answerAsk(runId: string, ask: string, choice: 'allow' | 'deny'): { answered: boolean } {
    const run = this.active.get(runId);
    if (!run)
      throw new ResponseError(
        ErrorCodes.RunNotFound,
        `no active run ${runId}: its asks were answered when it ended`,
      );
    if (!(run instanceof Run))
      throw new ResponseError(
        ErrorCodes.InvalidState,
        `run ${runId} runs on a fleet host: its asks are answered there`,
      );
    if (!run.answerAsk(ask, choice))
      throw new ResponseError(ErrorCodes.AskRefused, `run ${runId} does not wait for an answer to ${ask}`, {
        reason: 'ask-refused',
      });
    return { answered: true };
  }

  cancel(runId: string): { runId: string; alreadyEnded: boolean; status: RunResult['status'] } {
    const run = this.get(runId);
    if (run) {
      const alreadyEnded = !run.isActive;
      run.cancel();
      return { runId, alreadyEnded, status: run.result.status };
    }
    const onDisk = this.readResult(runId);
    if (!onDisk) throw new ResponseError(ErrorCodes.RunNotFound, `no run ${runId}`);
    return { runId, alreadyEnded: true, status: onDisk.status };
  }

  /**
   * Keep (merge) or discard an ended run's worktree or workspace copy; the new state goes into
   * result.json. One operation per run at a time: the same asked again while it goes (a board started
   * again while its keep was being applied, decision 107) waits for it and answers its outcome; the
   * other is refused.
   */
  async settleWorktree(runId: string, how: 'keep' | 'discard'): Promise<RunResult> {
    const run = this.get(runId);
    if (run?.isActive)
      throw new ResponseError(
        ErrorCodes.InvalidState,
        `run ${runId} is still going; keep or discard it once it ended`,
      );
    const going = this.settling.get(runId);
    if (going) {
      const doing = going.how === 'keep' ? 'kept' : 'discarded';
      if (going.how !== how)
        throw new ResponseError(
          ErrorCodes.InvalidState,
          `run ${runId}'s changes are being ${doing} already; ${how} it once that ended, if it still has them`,
        );
      this.deps.log.info({ runId, how }, `run ${runId} is being ${doing} already: this ${how} waits for it`);
      return going.done;
    }
    const result = run?.result ?? this.readResult(runId);
    if (!result) throw new ResponseError(ErrorCodes.RunNotFound, `no run ${runId}`);
    if (!result.worktree && !result.copy)
      throw new ResponseError(ErrorCodes.InvalidState, `run ${runId} has no worktree or workspace copy`);
    this.deps.log.info({ runId, how }, `${how === 'keep' ? 'keeping' : 'discarding'} run ${runId}'s changes`);
    const done = this.settle(runId, result, how);
    this.settling.set(runId, { how, done });
    try {
      return await done;
    } finally {
      this.settling.delete(runId);
    }
  }

  private async settle(runId: string, result: RunResult, how: 'keep' | 'discard'): Promise<RunResult> {
    try {
      if (result.copy) result.copy = await settleCopy(result.copy, how);
      else
        result.worktree =
          how === 'keep' ? await keepWorktree(result.worktree!) : await discardWorktree(result.worktree!);
      new ResultFile(path.join(runLogDir(this.paths, runId), 'result.json')).write(result);
      return result;
    } catch (err) {
      if (err instanceof WorktreeError || err instanceof CopyError)
        throw new ResponseError(ErrorCodes.InvalidState, err.message);
      throw err;
    }
  }

  /**
   * A run's record as a reader is to see it. One that says `running` though no supervisor has it going
   * (not this one's, and the supervisor that wrote it is gone) lost its supervisor before the run's
   * crash marker was on disk: result.json is written as the launch is accepted and the marker follows
   * off the event loop, so a kill in between left recoverOrphans nothing to find (the soak's run left
   * `running` for good). It is closed here, as recoverOrphans closes the others, when first read.
   */
  record(runId: string): RunResult | null {
    const r = this.readResult(runId);
    if (!r || r.status !== 'running' || this.get(runId) || r.supervisorPid === process.pid) return r;
    if (pidAlive(r.supervisorPid)) return r;
    try {
      return closeDead(r, r.logDir, r.supervisorPid);
    } catch {
      return r; // the disk cannot take it now: the next read tries again
    }
  }

  readResult(runId: string): RunResult | null {
    try {
      const parsed = RunResult.safeParse(
        JSON.parse(readFileSync(path.join(runLogDir(this.paths, runId), 'result.json'), 'utf8')),
      );
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  async source(runId: string): Promise<AttachSource> {
    const run = this.get(runId);
    if (run) return run.attachSource();
    const result = this.readResult(runId);
    if (!result) throw new ResponseError(ErrorCodes.RunNotFound, `no run ${runId}`);
    return diskSource(runLogDir(this.paths, runId), runId, result);
  }

  list(activeOnly: boolean, limit: number, cardPath?: string): RunResult[] {
    const out: RunResult[] = [...this.active.values()]
      .map((r) => r.result)
      .filter((r) => cardPath === undefined || r.card.path === cardPath)
      .reverse();
    if (activeOnly) return out.slice(0, limit);
    const seen = new Set(out.map((r) => r.runId));
    let days: string[] = [];
    try {
      days = readdirSync(this.paths.logsDir)
        .filter((d) => /^\d{8}$/.test(d))
        .sort()
        .reverse();
    } catch {
      // no runs yet
    }
    for (const day of days) {
      if (out.length >= limit) break;
      const ids =
        (cardPath !== undefined ? this.byCard.runsOf(day, cardPath) : undefined) ??
        readdirSync(path.join(this.paths.logsDir, day)).sort().reverse();
      for (const id of ids) {
        if (out.length >= limit) break;
        if (seen.has(id)) continue;
        seen.add(id);
        const r = this.record(id);
        if (r && (cardPath === undefined || r.card.path === cardPath)) out.push(r);
      }
    }
    return out;
  }

  /**
   * After a supervisor restart: runs the previous supervisor left active died with it (parent-death
   * signals); make sure, and record why they ended. A fleet's run goes on on its host: the fleet
   * gateway (set before this is called) takes it over when it is on the same Redis.
   */
  recoverOrphans(): string[] {
    const dir = path.join(this.paths.supervisorDir, 'active');
    const closed: string[] = [];
    for (const runId of readdirSync(dir)) {
      const file = path.join(dir, runId);
      if (runId.startsWith('.')) {
        rmSync(file, { force: true }); // an older version's next marker, cut short by a crash
        continue;
      }
      let marker: {
        logDir: string;
        jailPid: number;
        workerPid: number | null;
        supervisorPid: number;
        scratchDir?: string;
        fleet?: { redisUrl: string; flow: string };
      };
      try {
        marker = lastMarker(readFileSync(file, 'utf8')) as typeof marker;
      } catch {
        // Unreadable (written by an older version as the crash hit, or damaged): the run is still
        // closed, from what its id says of where its folders are.
        if (!RunId.safeParse(runId).success) continue;
        marker = {
          logDir: runLogDir(this.paths, runId),
          jailPid: 0,
          workerPid: null,
          supervisorPid: this.readResult(runId)?.supervisorPid ?? 0,
          scratchDir: path.join(this.paths.scratchDir, runId),
        };
      }
      const prevRemote = marker.fleet ? this.readResult(runId) : null;
      if (
        marker.fleet &&
        this.fleet?.redisUrl === marker.fleet.redisUrl &&
        prevRemote?.status === 'running'
      ) {
        const run = this.fleet.takenOver(runId, { logDir: marker.logDir, fleet: marker.fleet }, prevRemote);
        this.track(runId, run);
        run.start();
        continue;
      }
      for (const pid of [marker.workerPid, marker.jailPid]) {
        if (pid && isJailOrWorker(pid)) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
      }
      const prev = this.readResult(runId);
      if (prev && prev.status === 'running') closeDead(prev, marker.logDir, marker.supervisorPid);
      if (marker.scratchDir) removeScratch(marker.scratchDir);
      try {
        unlinkSync(file);
      } catch {
        // ignore
      }
      closed.push(runId);
    }
    // scratch dirs of ended runs whose removal a crash cut short
    try {
      for (const name of readdirSync(this.paths.scratchDir))
        if (name.startsWith(GONE_SCRATCH_PREFIX)) removeScratch(path.join(this.paths.scratchDir, name));
    } catch {
      // no scratch dir yet
    }
    return closed;
  }

  /** Stop taking runs; cancel the active ones; resolve when all have ended. */
  async drain(cancel: boolean): Promise<void> {
    this.acceptingRuns = false;
    const runs = [...this.active.values()];
    if (cancel) for (const r of runs) r.stop('cancelled', 'the supervisor was stopped');
    await Promise.all(runs.map((r) => r.whenEnded()));
  }

  hasLeftovers(): boolean {
    return existsSync(path.join(this.paths.supervisorDir, 'active'));
  }
}

/**
 * The newest whole version of an active-run marker: its versions are lines appended one per write
 * (run.ts), so a line cut short by a crash is skipped for the one before. Throws when none is whole.
 */
export function lastMarker(text: string): unknown {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i]) continue;
    try {
      return JSON.parse(lines[i]!) as unknown;
    } catch {
      // cut short: the version before it
    }
  }
  throw new Error('no whole marker');
}

/**
 * Records the end of a run whose supervisor died while it was going (its processes died with it:
 * parent-death signals); returns the record written.
 */
function closeDead(prev: RunResult, logDir: string, supervisorPid: number): RunResult {
  const now = new Date();
  // the output the dead supervisor had not counted yet is in the log files: record their sizes
  const logged = (name: string, counted: number): number => {
    try {
      return Math.max(counted, statSync(path.join(logDir, name)).size);
    } catch {
      return counted;
    }
  };
  const closed: RunResult = {
    ...prev,
    stdoutBytes: logged('stdout.log', prev.stdoutBytes),
    stderrBytes: logged('stderr.log', prev.stderrBytes),
    status: 'failed',
    endedAt: now.toISOString(),
    durationMs: now.getTime() - Date.parse(prev.startedAt),
    termination: {
      reason: 'supervisor-died',
      detail: `the supervisor (pid ${supervisorPid}) died while this run was going; the run's processes died with it`,
    },
    summary: prev.summary || 'the supervisor died during the run',
  };
  new ResultFile(path.join(logDir, 'result.json')).write(closed);
  return closed;
}

/** Is a process with this pid alive (any process: a pid given again after it died counts too)? */
function pidAlive(pid: number): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Guards against PID reuse: only kill what still looks like one of our processes. */
function isJailOrWorker(pid: number): boolean {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmd.includes('runboard-jail') || cmd.includes('worker.mjs') || cmd.includes('worker.blob');
  } catch {
    return false;
  }
}

export type { RunDeps };
