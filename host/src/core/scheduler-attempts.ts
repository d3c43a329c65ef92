/**
 * Carries out a card's attempts (attempts.ts, the pure state machine) for the Scheduler: each pending
 * attempt is offered to the scheduler's policy as a queued entry of the card's flow (so it counts against
 * the global cap, the flow's cap and the queue's run slots like any run), launched when the policy says
 * so, followed to its end; then the judge's run, and the keep/discard of the attempts' workspaces. The
 * card stays Running (the scheduler's `active`) until `settle` writes its end.
 *
 * Each attempt works in its own copy of the workspace: a git worktree of its own (the flow's runs get
 * `worktree: true`, as coding runs do) when the workspace is a git repository and the flow may write it,
 * else a copy the supervisor makes (`copyWorkspace`, supervisor/src/node/workspace-copy.ts). The
 * winner's worktree or copy is kept (merged or applied back, as Keep does), the others discarded.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import type { LaunchRun, RunEvent, RunResult } from '@runboard/supervisor/protocol';
import {
  initial,
  judging,
  next,
  resumed,
  settled,
  slotsHeld,
  step,
  type AttemptEnd,
  type AttemptsEvent,
  type AttemptsState,
  type Outcome,
  type RunSeen,
} from './attempts.ts';
import type { Card, ProjectConfig } from './project.ts';
import type { QueuedCard, RunningCard } from './scheduler-policy.ts';
import type { SupervisorClient } from './supervisor-client.ts';
import { failureText } from './run-end-text.ts';
import { DEFAULT_COPY_BYTES } from '@runboard/project/limits';

type Launch = z.input<typeof LaunchRun.params>;

/** Between a card's id and its attempt's number in the policy's queued entries (no card id has it). */
const SEP = '\u0000attempt-';

/** How long the judge's run may take. */
const JUDGE_TIMEOUT_MS = 10 * 60_000;

/** What the card's front matter says of its attempts (host-written), and how its attempts ended. */
export interface AttemptsRecord {
  /** The attempts' runs, in attempt order (null: an attempt that never ran). */
  attemptRuns: (string | null)[];
  judgeRun?: string;
  /** The judge's verdict, or why the card failed. */
  verdict?: string;
  /** The winning attempt, from 1. */
  winner?: number;
}

export interface AttemptsHost {
  client: SupervisorClient;
  now(): number;
  /** Runs `task` in one of the scheduler's run slots (its p-queue). */
  enqueue(task: () => Promise<void>): void;
  /** Something shown changed, or an attempt may start: look at the board again. */
  changed(): void;
  /** The first attempt's run started: the card is Running with it (its live view). */
  started(cardId: string, runId: string): void;
  /** The attempts ended: write the card's end (`end` as a run's end) and its attempts record. */
  settle(
    cardId: string,
    end: Pick<RunResult, 'runId' | 'status' | 'summary'>,
    text: string,
    record: AttemptsRecord,
  ): void;
  warn(message: string): void;
  /** Writes the attempts' progress on the card (each launch), so that a restarted host finds them. */
  save(cardId: string, record: Pick<AttemptsRecord, 'attemptRuns'> | Pick<AttemptsRecord, 'judgeRun'>): void;
  /** The card's launch request now (after a restart), or why there is none. */
  request(card: Card): Launch;
  /** The card is running (after a restart): the scheduler holds it, its live view on `runId`. */
  hold(cardId: string, flow: string, runId: string | undefined): void;
  /** The config now: the card's flow (judgeAfter) and limits.workspaceCopy. */
  config(): ProjectConfig;
  /** An event of attempt `n` of `of` (from 1) of the card, its run `runId` (live asks: live-ask-waits.ts). */
  event?(cardId: string, runId: string, e: RunEvent, attempt: { n: number; of: number }): void;
  /** The run of one of the card's attempts ended (the card goes on while others run). */
  attemptEnded?(cardId: string, runId: string): void;
}

interface Group {
  cardId: string;
  flow: string;
  state: AttemptsState;
  request: Launch;
  timer?: NodeJS.Timeout;
  judgeRun?: string;
  /** The attempts work in worktrees or copies of the workspace: the winner's kept, the others discarded. */
  worktrees: boolean;
}

/** The attempts a card's run becomes: the card's `attempts:`, else its flow's, else 1. */
export function attemptsOf(card: Card, config: ProjectConfig): number {
  const flow = Object.hasOwn(config.flows, card.front.flow) ? config.flows[card.front.flow] : undefined;
  return card.front.attempts ?? flow?.attempts ?? 1;
}

export class CardAttempts {
  private readonly groups = new Map<string, Group>();

  constructor(private readonly host: AttemptsHost) {}

  has(cardId: string): boolean {
    return this.groups.has(cardId);
  }

  /** The runs of the card's attempts that go now. */
  liveRuns(cardId: string): string[] {
    const g = this.groups.get(cardId);
    return g ? g.state.attempts.flatMap((a) => (a.kind === 'running' ? [a.runId] : [])) : [];
  }

  /** Whether `id` (a policy entry) is an attempt's, not a card's. */
  owns(id: string): boolean {
    return id.includes(SEP);
  }

  /** The card an attempt's policy entry belongs to, and the attempt's number (from 1). */
  describe(id: string): { cardId: string; attempt: number; of: number } | undefined {
    const [cardId, k] = id.split(SEP);
    const g = this.groups.get(cardId!);
    return g ? { cardId: cardId!, attempt: Number(k) + 1, of: g.state.attempts.length } : undefined;
  }

  /** Queued entries for the policy: the attempts that may start (ahead of the Queued column: their card runs). */
  pending(): QueuedCard[] {
    const out: QueuedCard[] = [];
    for (const g of this.groups.values()) {
      const a = next(g.state, this.host.now());
      if (a.kind === 'launch')
        for (const i of a.indexes) out.push({ id: `${g.cardId}${SEP}${i}`, flow: g.flow });
    }
    return out;
  }

  /** Running entries for the policy: one per attempt launching or going, and the judge's run. */
  running(): RunningCard[] {
    return [...this.groups.values()].flatMap((g) =>
      Array.from({ length: slotsHeld(g.state) }, (_, i) => ({
        id: `${g.cardId}${SEP}r${i}`,
        flow: g.flow,
        ...(g.state.phase.kind === 'judging' ? { judge: true } : {}),
      })),
    );
  }

  /**
   * The card's run becomes `n` attempts of `request` (the card's launch); the first starts now, in the
   * slot the policy gave the card; the others as the policy lets them.
   */
  begin(
    cardId: string,
    n: number,
    request: Launch,
    judgeAfterMs: number | undefined,
    copyMaxBytes = DEFAULT_COPY_BYTES,
  ): void {
    const g = group(cardId, initial(n, judgeAfterMs), request, copyMaxBytes);
    this.groups.set(cardId, g);
    this.launch(`${cardId}${SEP}0`);
  }

  /**
   * After a host restart: a running card whose front matter records unsettled attempts gets them back,
   * each recorded run followed (or its end taken from the supervisor), the attempts not started yet
   * started, and the judge launched or followed. False when the card has none to resume.
   */
  resume(cardId: string, card: Card): boolean {
    const f = card.front as Record<string, unknown>;
    const runs = f.attemptRuns;
    if (
      card.front.status !== 'running' ||
      f.verdict !== undefined ||
      !Array.isArray(runs) ||
      !runs.length ||
      !runs.every((r) => r === null || typeof r === 'string')
    )
      return false;
    let request: Launch;
    try {
      request = this.host.request(card);
    } catch (err) {
      this.host.warn(`could not resume the attempts of card ${cardId}: ${(err as Error).message}`);
      return false;
    }
    const cfg = this.host.config();
    const flow = Object.hasOwn(cfg.flows, card.front.flow) ? cfg.flows[card.front.flow] : undefined;
    const judgeRun = typeof f.judgeRun === 'string' ? f.judgeRun : undefined;
    this.host.hold(cardId, card.front.flow, card.front.lastRun ?? undefined);
    void this.resumeRuns(cardId, runs as (string | null)[], judgeRun, request, flow?.judgeAfter).catch(
      (err) => this.host.warn(`could not resume the attempts of card ${cardId}: ${(err as Error).message}`),
    );
    return true;
  }

  private async resumeRuns(
    cardId: string,
    runs: (string | null)[],
    judgeRun: string | undefined,
    request: Launch,
    judgeAfterMs: number | undefined,
  ): Promise<void> {
    const seen = await Promise.all(
      runs.map(async (runId): Promise<RunSeen | null> => {
        if (!runId) return null;
        const run = await this.host.client.getRun(runId).then(
          (r) => r.run,
          () => null,
        );
        if (!run) return { kind: 'lost', runId };
        if (run.status === 'running') return { kind: 'running', runId };
        return {
          kind: 'ended',
          runId,
          end: endOf(run),
          at: Date.parse(run.endedAt ?? '') || this.host.now(),
        };
      }),
    );
    const g = group(
      cardId,
      resumed(seen, judgeAfterMs, judgeRun !== undefined),
      request,
      this.host.config().limits.workspaceCopy,
    );
    this.groups.set(cardId, g);
    seen.forEach((r, index) => {
      if (r?.kind === 'running') this.host.enqueue(() => this.followAttempt(g, index, r.runId));
    });
    if (judgeRun && g.state.phase.kind === 'judging') {
      g.judgeRun = judgeRun;
      g.state = step(g.state, { type: 'judge-launched', runId: judgeRun });
      const judged = g.state.attempts.flatMap((a, index) =>
        (a.kind === 'ended' || a.kind === 'running') && a.runId ? [{ index, runId: a.runId }] : [],
      );
      this.host.enqueue(() => this.followJudge(g, judged, judgeRun));
      this.host.changed();
      return;
    }
    this.drive(g);
  }

  /** Launches the attempt of a policy entry (the policy said it may start). */
  launch(id: string): void {
    const [cardId, k] = id.split(SEP);
    const g = this.groups.get(cardId!);
    const index = Number(k);
    if (!g || g.state.attempts[index]?.kind !== 'pending') return;
    this.apply(g, { type: 'launching', index });
    this.host.enqueue(async () => {
      let runId: string;
      try {
        ({ runId } = await this.host.client.launch(g.request));
      } catch (err) {
        this.apply(g, {
          type: 'ended',
          index,
          end: { status: 'failed', text: `could not launch: ${(err as Error).message}` },
          at: this.host.now(),
        });
        return;
      }
      this.apply(g, { type: 'launched', index, runId });
      this.host.save(cardId!, { attemptRuns: attemptRunsOf(g) });
      this.host.started(cardId!, runId);
      // cancelled (or past judgeAfter) while it was being launched: it stops at once
      if (g.state.cancelled || g.state.stragglersStopped) void this.cancelRun(runId);
      await this.followAttempt(g, index, runId);
    });
  }

  /** Follows an attempt's run to its end. */
  private async followAttempt(g: Group, index: number, runId: string): Promise<void> {
    const attempt = { n: index + 1, of: g.state.attempts.length };
    const result = await this.follow(runId, (e) => this.host.event?.(g.cardId, runId, e, attempt));
    this.host.attemptEnded?.(g.cardId, runId);
    this.apply(g, { type: 'ended', index, end: endOf(result), at: this.host.now() });
  }

  /** The person cancels the card: every attempt (and the judge) stops; true when something was going. */
  async cancel(cardId: string): Promise<boolean> {
    const g = this.groups.get(cardId);
    if (!g) return false;
    if (!g.state.cancelled && g.state.phase.kind !== 'settled') this.apply(g, { type: 'cancel' });
    if (g.judgeRun) await this.cancelRun(g.judgeRun);
    return true;
  }

  private async cancelRun(runId: string): Promise<void> {
    try {
      await this.host.client.cancel(runId);
    } catch (err) {
      this.host.warn(`could not cancel attempt run ${runId}: ${(err as Error).message}`);
    }
  }

  /** The run's end (its result), however the attach goes. */
  private follow(runId: string, onEvent?: (e: RunEvent) => void): Promise<RunResult> {
    return new Promise<RunResult>((resolve) => {
      let done = false;
      const end = (r: RunResult): void => {
        if (!done) resolve(r);
        done = true;
      };
      const lost = (err: Error): void => {
        // the run's end is then read from the supervisor (a lost connection is retried by the client)
        void this.host.client
          .getRun(runId)
          .then(({ run }) => (run.status === 'running' ? undefined : end(run)))
          .catch(() => undefined)
          .finally(() =>
            end({ runId, status: 'failed', summary: `lost the run: ${err.message}` } as unknown as RunResult),
          );
      };
      this.host.client
        .attach(
          runId,
          { onEnd: end, onLost: lost, ...(onEvent ? { onEvent } : {}) },
          {
            // an attempt's events from its first (a live ask that waits since before a host restart)
            events: onEvent ? 0 : Number.MAX_SAFE_INTEGER,
            stdout: Number.MAX_SAFE_INTEGER,
            stderr: Number.MAX_SAFE_INTEGER,
          },
        )
        .then((run) => {
          if (run.status !== 'running') end(run);
        })
        .catch(lost);
    });
  }

  /** Moves the card's attempts on `e`, then does what they need next. */
  private apply(g: Group, e: AttemptsEvent): void {
    try {
      g.state = step(g.state, e);
    } catch (err) {
      this.host.warn((err as Error).message);
      return;
    }
    this.drive(g);
  }

  private drive(g: Group): void {
    clearTimeout(g.timer);
    const s = g.state;
    // judgeAfter: look again when it passes (the attempts then still going are stopped)
    if (
      s.firstSuccessAt !== undefined &&
      s.judgeAfterMs !== undefined &&
      !s.stragglersStopped &&
      !s.cancelled
    ) {
      const wait = s.firstSuccessAt + s.judgeAfterMs - this.host.now();
      if (wait > 0) g.timer = setTimeout(() => this.drive(g), Math.max(10, wait));
    }
    const a = next(s, this.host.now());
    switch (a.kind) {
      case 'launch': // the policy decides when (within the caps)
      case 'wait':
        this.host.changed();
        return;
      case 'stop':
        if (!g.state.cancelled) g.state = step(g.state, { type: 'stragglers-stopped' });
        for (const r of a.runIds) void this.cancelRun(r);
        if (!a.runIds.length) this.drive(g);
        return;
      case 'judge':
        g.state = judging(g.state);
        this.judge(g, a.runs);
        return;
      case 'settle':
        if (g.state.phase.kind !== 'settled') g.state = settled(g.state, a.outcome);
        void this.settle(g, a.outcome);
        return;
    }
  }

  /** The judge's run: the flow's provider and model, over the attempts' runs (their reports and screenshots). */
  private judge(g: Group, runs: { index: number; runId: string }[]): void {
    const f = g.request.flow;
    const request: Launch = {
      card: g.request.card,
      flow: {
        name: f.name,
        runner: 'judge',
        ...(f.provider ? { provider: f.provider } : {}),
        ...(f.model ? { model: f.model } : {}),
        ...(f.prompt ? { prompt: f.prompt } : {}),
        timeoutMs: JUDGE_TIMEOUT_MS,
        ...(f.heartbeatTimeoutMs ? { heartbeatTimeoutMs: f.heartbeatTimeoutMs } : {}),
        readOnly: true,
        judge: { runs: runs.map((r) => r.runId) },
      },
      workspace: g.request.workspace,
      grant: g.request.grant,
    };
    this.host.enqueue(async () => {
      let runId: string;
      try {
        ({ runId } = await this.host.client.launch(request));
      } catch (err) {
        return this.apply(g, {
          type: 'judge-failed',
          text: `could not launch the judge: ${(err as Error).message}`,
        });
      }
      g.judgeRun = runId;
      this.apply(g, { type: 'judge-launched', runId });
      this.host.save(g.cardId, { judgeRun: runId });
      if (g.state.cancelled) void this.cancelRun(runId);
      await this.followJudge(g, runs, runId);
    });
  }

  /** Follows the judge's run to its verdict. */
  private async followJudge(
    g: Group,
    runs: { index: number; runId: string }[],
    runId: string,
  ): Promise<void> {
    const result = await this.follow(runId);
    if (g.state.cancelled) return this.apply(g, { type: 'judge-failed', text: 'cancelled' });
    const winner = result.metrics?.judgeWinner;
    if (result.status !== 'succeeded' || typeof winner !== 'number')
      return this.apply(g, { type: 'judge-failed', text: result.summary || failureText(result) });
    // the judge numbers the runs it was given; map back to the attempts
    const picked = winner === 0 ? null : (runs[winner - 1]?.index ?? -1);
    this.apply(g, {
      type: 'judged',
      verdict: { winner: picked, reasons: String(result.metrics.judgeReasons ?? '') },
    });
  }

  /** Whether the run's worktree or workspace copy was kept (its record, result.json, says so). */
  private kept(runId: string): Promise<boolean> {
    return this.host.client.getRun(runId).then(
      ({ run }) => run.worktree?.state === 'kept' || run.copy?.state === 'kept',
      () => false,
    );
  }

  private async settle(g: Group, outcome: Outcome): Promise<void> {
    if (!this.groups.has(g.cardId)) return;
    this.groups.delete(g.cardId);
    clearTimeout(g.timer);
    const attemptRuns = g.state.attempts.map((a) => (a.kind === 'ended' && a.runId ? a.runId : null));
    let keepProblem: string | undefined;
    if (g.worktrees) {
      for (const r of outcome.discard)
        await this.host.client
          .discardWorktree(r)
          .catch((err: Error) =>
            this.host.warn(`could not discard attempt run ${r}'s worktree: ${err.message}`),
          );
      // kept already: a board that died between the keep and the card's write, started again (the
      // run's record says so; keeping again would be refused and the card would fail for nothing)
      if (outcome.kind === 'won' && !(await this.kept(outcome.runId)))
        await this.host.client.keepWorktree(outcome.runId).catch(async (err: Error) => {
          if (await this.kept(outcome.runId)) return;
          keepProblem = `attempt ${outcome.winner + 1} won but its changes could not be kept: ${err.message} (keep or discard run ${outcome.runId} by hand)`;
        });
    }
    const record: AttemptsRecord = {
      attemptRuns,
      ...(g.judgeRun ? { judgeRun: g.judgeRun } : {}),
    };
    const last = attemptRuns.filter((r): r is string => !!r).at(-1) ?? g.judgeRun ?? '';
    switch (outcome.kind) {
      case 'won':
        record.winner = outcome.winner + 1;
        record.verdict = `attempt ${outcome.winner + 1} of ${attemptRuns.length} won: ${outcome.reasons}`;
        if (keepProblem)
          return this.host.settle(
            g.cardId,
            { runId: outcome.runId, status: 'failed', summary: keepProblem },
            keepProblem,
            record,
          );
        return this.host.settle(
          g.cardId,
          { runId: outcome.runId, status: 'succeeded', summary: record.verdict },
          '',
          record,
        );
      case 'cancelled':
        return this.host.settle(
          g.cardId,
          { runId: last, status: 'cancelled', summary: 'cancelled' },
          'cancelled',
          record,
        );
      default:
        record.verdict = outcome.text;
        return this.host.settle(
          g.cardId,
          { runId: last, status: 'failed', summary: outcome.text },
          outcome.text,
          record,
        );
    }
  }
}

/** The group of a card's attempts: each in a worktree, or a copy of a folder that is not a git repository. */
function group(
  cardId: string,
  state: AttemptsState,
  request: Launch,
  copyMaxBytes = DEFAULT_COPY_BYTES,
): Group {
  const f = request.flow;
  const worktrees = !f.readOnly && existsSync(path.join(request.workspace, '.git')) && f.worktree !== false;
  // a folder that is not a git repository: each attempt in a copy of its own (workspace-copy.ts)
  const copies = !f.readOnly && !worktrees;
  const flow = worktrees
    ? { ...f, worktree: true }
    : copies
      ? { ...f, copyWorkspace: { maxBytes: copyMaxBytes } }
      : f;
  return { cardId, flow: f.name, state, request: { ...request, flow }, worktrees: worktrees || copies };
}

/** The attempts' runs so far, in attempt order (null: not started). */
const attemptRunsOf = (g: Group): (string | null)[] =>
  g.state.attempts.map((a) => ((a.kind === 'running' || a.kind === 'ended') && a.runId ? a.runId : null));

/** How an attempt's run ended, for the judge and the card. */
function endOf(result: RunResult): AttemptEnd {
  const status = result.status === 'running' ? 'failed' : result.status;
  return { status, text: status === 'succeeded' ? result.summary || 'succeeded' : failureText(result) };
}
