/**
 * The board's view of runs (the inspector's): a card's runs, one run by id, a run's worktree (its diff,
 * keep or discard), and the runs seen lately, bounded, for the tail offsets of a stream.
 */
import { ErrorCodes, JsonRpcCodes, ResponseError, type RunResult } from '@runboard/supervisor/protocol';
import { commonGitDir, safeGit } from '@runboard/supervisor/git';
import type { WorktreeDiff } from '../shared/board-types.ts';
import { checkRunId, MoveRefused, NotFound } from './board-errors.ts';
import type { SupervisorClient } from './supervisor-client.ts';

/** How many runs the host keeps at hand for the inspector (older ones are asked for again). */
const KNOWN_RUNS_MAX = 2000;

export class BoardRuns {
  /** Runs seen lately (from card details), for the tail offsets of a stream. */
  private readonly knownRuns = new Map<string, RunResult>();

  constructor(private readonly client: SupervisorClient) {}

  /** A run as last seen by this board, if it was. */
  known(runId: string): RunResult | undefined {
    return this.knownRuns.get(runId);
  }

  /**
   * A card's runs, newest first: `run/list` with `cardPath`, which the supervisor answers from its
   * per-day card index. A supervisor from before that filter (supervisors outlive host upgrades)
   * ignores it and answers with everyone's runs; then the host filters the last 2,000 itself.
   */
  async ofCard(cardFile: string): Promise<RunResult[]> {
    const { runs } = await this.client.list({ cardPath: cardFile, limit: 200 });
    if (runs.every((r) => r.card.path === cardFile)) return runs;
    const all = await this.client.list({ limit: 2000 });
    return all.runs.filter((r) => r.card.path === cardFile);
  }

  /** Runs seen lately (inspector views), most recent last: bounded, a long-lived host stays small. */
  remember(run: RunResult): void {
    this.knownRuns.delete(run.runId);
    this.knownRuns.set(run.runId, run);
    if (this.knownRuns.size > KNOWN_RUNS_MAX) this.knownRuns.delete(this.knownRuns.keys().next().value!);
  }

  /**
   * One run, asked of the supervisor (`run/get`); a supervisor from before that method (they outlive
   * host upgrades) answers MethodNotFound, and then the run as last seen is used.
   */
  async byId(runId: string): Promise<RunResult> {
    checkRunId(runId);
    const known = this.knownRuns.get(runId);
    try {
      const { run } = await this.client.getRun(runId);
      this.remember(run);
      return run;
    } catch (err) {
      if (!(err instanceof ResponseError)) throw err;
      if (err.code === ErrorCodes.RunNotFound) throw new NotFound(`no run ${runId}`);
      if (known && err.code === JsonRpcCodes.MethodNotFound) return known;
      if (err.code === JsonRpcCodes.MethodNotFound) throw new NotFound(`no run ${runId} seen by this board`);
      throw err;
    }
  }

  /** A run's worktree changes as a unified diff (base commit → the run's commit), at most 1 MiB. */
  async worktreeDiff(runId: string): Promise<WorktreeDiff> {
    const run = await this.byId(runId);
    const wt = run.worktree;
    if (!wt) throw new NotFound(`run ${runId} has no worktree`);
    if (!wt.diff?.commit) return { text: '', truncated: false };
    const max = 1024 * 1024;
    // The repository may hold what a run wrote: git runs with no config or driver that names a command.
    const stdout = await safeGit(
      { gitDir: await commonGitDir(wt.repo) },
      ['diff', '--no-color', '--no-ext-diff', '--no-textconv', wt.baseCommit, wt.diff.commit],
      { maxBuffer: 64 * 1024 * 1024, raw: true },
    );
    return stdout.length > max
      ? { text: stdout.slice(0, max), truncated: true }
      : { text: stdout, truncated: false };
  }

  /** Keep a run's worktree (merge its branch into the base branch) or discard it. */
  async settleWorktree(runId: string, how: 'keep' | 'discard'): Promise<RunResult> {
    checkRunId(runId);
    try {
      const { run } =
        how === 'keep' ? await this.client.keepWorktree(runId) : await this.client.discardWorktree(runId);
      this.remember(run);
      return run;
    } catch (err) {
      // the supervisor's refusals are the person's to fix (still running, no worktree, settled already)
      if (err instanceof ResponseError && err.code === ErrorCodes.RunNotFound)
        throw new NotFound(err.message);
      if (err instanceof ResponseError && err.code === ErrorCodes.InvalidState)
        throw new MoveRefused(err.message);
      throw err;
    }
  }
}
