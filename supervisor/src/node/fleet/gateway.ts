/**
 * The supervisor the board talks to, in a fleet (scheduler.backend: redis): a launch becomes a job on
 * the flow's BullMQ queue instead of a local worker, and the run is mirrored here, in the same records
 * as a local run (events.jsonl, stdout.log, stderr.log, result.json), from the stream the host that
 * took it writes. Everything that reads runs (attach, list, get, the board) works unchanged.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Queue, QueueEvents, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type pino from 'pino';
import type { z } from 'zod';
import {
  ErrorCodes,
  ResponseError,
  type LaunchRun,
  type RunResult,
  type TerminationReason,
} from '../../protocol/index.ts';
import { launchedResult } from '../result-file.ts';
import {
  CANCEL_CHANNEL,
  FLEET_JOB_VERSION,
  LEASE_MS,
  queueName,
  recordStream,
  redisOptions,
  RunJobResult,
  withinMs,
  type RunJob,
} from './job.ts';
import { collectInputs, inputsKey, storeInputs, type InputSources } from './inputs.ts';
import { LOOK_MS, StallJudge } from './lease.ts';
import { RemoteRun, type Finish, type RemoteMarker, type RunMirror } from './remote-run.ts';
import { readRoster, whyNoHost } from './roster.ts';

export interface GatewayOptions {
  redisUrl: string;
  /** Redis's password when kept apart from the URL (docs/deployment.md). */
  redisPassword?: string | undefined;
  log: pino.Logger;
  /** Where active runs' markers go (the registry's recoverOrphans reads them after a crash). */
  activeDir: string;
}

export class FleetGateway implements RunMirror {
  private readonly conn: ReturnType<typeof redisOptions>;
  private readonly redis: Redis;
  private readonly reader: Redis;
  private readonly queues = new Map<string, Promise<FlowQueue>>();
  private readonly runs = new Map<string, RemoteRun>();
  /** Where the inputs of runs not yet queued are on this machine (read as they are queued). */
  private readonly sources = new Map<string, InputSources>();
  private readerWake: (() => void) | undefined;
  private closed = false;
  private readonly reconciler: NodeJS.Timeout;
  /** Declares stalled the jobs of this board's queues whose lease no host held (lease.ts). */
  private readonly judge: StallJudge;
  private readonly judging: NodeJS.Timeout;

  readonly redisUrl: string;
  /** The fleet's global cap this board asks its jobs to keep (its scheduler.maxConcurrency; slots.ts). */
  cap: number | undefined;
  /** Each flow's cap as this board has it (flows.<name>.cap): kept over the whole fleet (slots.ts). */
  flowCaps: Record<string, number> | undefined;

  constructor(private readonly o: GatewayOptions) {
    this.redisUrl = o.redisUrl;
    this.conn = redisOptions(o.redisUrl, o.redisPassword);
    this.redis = new Redis(this.conn);
    this.reader = new Redis(this.conn);
    void this.readLoop();
    this.reconciler = setInterval(() => void this.reconcile(), Math.max(1000, LEASE_MS));
    this.reconciler.unref();
    this.judge = new StallJudge(this.redis);
    let looking = false;
    this.judging = setInterval(() => {
      if (looking || this.closed) return;
      looking = true;
      void this.lookForStalls().finally(() => (looking = false));
    }, LOOK_MS);
    this.judging.unref();
  }

  /**
   * Looks at the jobs of the queues this supervisor opened (also those of no run of its own: a board
   * that died without a successor), so a run is ended even when no host offering its flow is left.
   */
  private async lookForStalls(): Promise<void> {
    const queues: FlowQueue[] = [];
    for (const q of [...this.queues.values()]) {
      const opened = await q.catch(() => undefined);
      if (opened) queues.push(opened);
    }
    if (queues.length === 0) return;
    const stalled = await this.judge.look(queues.map((q) => q.queue)).catch((err: Error) => {
      this.o.log.debug({ err: err.message }, 'looking for stalled fleet jobs');
      return [];
    });
    if (stalled.length) this.o.log.warn({ jobs: stalled }, 'declared stalled: no host held their lease');
  }

  /** Ends `run` as its job ended in Redis, if it did (`job`: read there). */
  private endAsJob(run: RemoteRun, q: FlowQueue, job: Job, state: string): boolean {
    if (state === 'completed') this.completed(run, job.returnvalue);
    else if (state === 'failed') q.onFailed(run.id, job.failedReason);
    else return false;
    return true;
  }

  /**
   * Looks at the jobs of the runs still going: a run whose job ended without its event reaching this
   * supervisor (its queue's events read from after that, a lost connection) ends at the next look,
   * instead of never (a board waiting on it for good, a supervisor that cannot shut down).
   */
  private async reconcile(): Promise<void> {
    for (const run of [...this.runs.values()]) {
      if (run.isFinishing || this.closed) continue;
      try {
        const q = await this.flowQueue(run.flowName);
        const { job, state } = await readJob(q.queue, run.id);
        if (job && !run.isFinishing) this.endAsJob(run, q, job, state);
      } catch (err) {
        this.o.log.debug({ runId: run.id, err: (err as Error).message }, 'looking at a fleet job');
      }
    }
  }

  /** The job of `run` completed with `returnvalue` (the host's record of it). */
  private completed(run: RemoteRun, returnvalue: unknown): void {
    let raw: unknown = returnvalue;
    try {
      if (typeof returnvalue === 'string') raw = JSON.parse(returnvalue);
    } catch {
      // read as unreadable below
    }
    const parsed = RunJobResult.safeParse(raw);
    void run.finish(
      parsed.success
        ? { status: parsed.data.result.status, reason: 'finished', detail: '', remote: parsed.data }
        : {
            status: 'failed',
            reason: 'crashed',
            detail: 'the host answered with a result this supervisor cannot read',
          },
    );
  }

  /** The flow's queue, its events and its stall check, made once per flow. */
  private flowQueue(flow: string): Promise<FlowQueue> {
    const name = queueName(flow);
    let q = this.queues.get(name);
    if (!q) {
      q = this.openFlowQueue(name, flow);
      q.catch(() => this.queues.delete(name)); // Redis unreachable: tried again on the next use
      this.queues.set(name, q);
    }
    return q;
  }

  private async openFlowQueue(name: string, flow: string): Promise<FlowQueue> {
    const queue = new Queue(name, { connection: this.conn });
    // Its events are read from the last one there now, not from whenever the reading starts: a job
    // added next and failed at once by a host (a refusal) has its event read, never missed.
    const last = await this.redis.xrevrange(queue.keys.events!, '+', '-', 'COUNT', 1);
    const events = new QueueEvents(name, { connection: this.conn, lastEventId: last[0]?.[0] ?? '0-0' });
    events.on('completed', ({ jobId, returnvalue }) => {
      const run = this.runs.get(jobId);
      if (run) this.completed(run, returnvalue);
    });
    // A stalled job was failed by a board's StallJudge (lease.ts), which claimed it first, so no host
    // takes it again; the run ends one lease later: by then a host that is alive but cut off has
    // stopped it itself (fleet-host.ts, FENCE_MS), so a retry never overlaps it.
    const onStalled = (jobId: string): void => {
      const run = this.runs.get(jobId);
      if (!run || run.stalledSeen) return;
      run.stalledSeen = true;
      this.o.log.warn({ jobId, flow }, 'a host stopped renewing its job lease');
      void queue
        .remove(jobId)
        .catch(() => 0)
        .then(() => new Promise((r) => setTimeout(r, LEASE_MS)))
        .then(() => run.finish(this.stalled(run)));
    };
    const onFailed = (jobId: string, failedReason: string): void => {
      if (/stalled/i.test(failedReason)) return onStalled(jobId);
      const run = this.runs.get(jobId);
      if (!run) return;
      void run.finish(
        /^cancelled/.test(failedReason)
          ? { status: 'cancelled', reason: 'cancelled', detail: failedReason }
          : { status: 'failed', reason: 'spawn-failed', detail: failedReason },
      );
    };
    events.on('failed', ({ jobId, failedReason }) => onFailed(jobId, failedReason));
    events.on('stalled', ({ jobId }) => onStalled(jobId));
    return { queue, events, onFailed };
  }

  /**
   * Refuses, before anything is queued, a launch no host of the fleet can run (roster.ts): its flow
   * offered by none, or its workspace mapped by none of those that offer it. A roster that cannot be
   * read now (Redis away) refuses nothing: the job is queued as before and its host decides.
   */
  async admit(p: z.output<typeof LaunchRun.params>): Promise<void> {
    let name: string;
    try {
      name = FleetGateway.jobWorkspace(p, p.grant.path, path.resolve(p.workspace));
    } catch {
      return; // the launch itself says why
    }
    let roster;
    try {
      roster = await Promise.race([
        readRoster(this.redis),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('no answer in 2 s')), 2000).unref(),
        ),
      ]);
    } catch (err) {
      this.o.log.warn(
        { err: (err as Error).message },
        'reading the fleet roster; the launch is queued unchecked',
      );
      return;
    }
    const why = whyNoHost(roster, p.flow.name, name);
    if (why)
      throw new ResponseError(ErrorCodes.InvalidState, `the fleet cannot run this card: ${why}`, {
        reason: 'fleet-cannot-run',
        flow: p.flow.name,
        workspace: name,
      });
  }

  /** A launch (already checked against this machine's grant) as a run for the fleet. */
  remoteRun(
    runId: string,
    logDir: string,
    p: z.output<typeof LaunchRun.params>,
    workspace: string,
    grantPath: string,
  ): RemoteRun {
    let name: string;
    let text: string;
    try {
      name = FleetGateway.jobWorkspace(p, grantPath, workspace);
      text = readFileSync(p.card.path, 'utf8');
    } catch (err) {
      throw new ResponseError(ErrorCodes.InvalidState, (err as Error).message);
    }
    // The board's paths stay here: what they hold goes with the job (inputs.ts, read in submit).
    const { prompt, ...flow } = p.flow;
    if (flow.extract) {
      const { input: _input, ...extract } = flow.extract;
      flow.extract = extract;
    }
    this.sources.set(runId, {
      runner: p.flow.runner,
      cardPath: p.card.path,
      cardText: text,
      project: p.card.project,
      prompt,
      extractInput: p.flow.extract?.input,
    });
    const job: RunJob = {
      v: FLEET_JOB_VERSION,
      runId,
      flow,
      workspace: name,
      ...(p.command !== undefined ? { command: p.command } : {}),
      card: {
        ...(p.card.id ? { id: p.card.id } : {}),
        ...(p.card.title ? { title: p.card.title } : {}),
        text,
      },
      submittedAt: new Date().toISOString(),
      ...(this.cap ? { cap: this.cap } : {}),
      ...(this.flowCaps?.[p.flow.name] ? { flowCap: this.flowCaps[p.flow.name] } : {}),
    };
    const first = launchedResult({
      runId,
      card: p.card,
      flow: p.flow.name,
      runner: p.flow.runner,
      workspace,
      logDir,
      startedAt: job.submittedAt,
      metrics: { backend: 'redis' },
    });
    return new RemoteRun(this, { runId, logDir, first, flow: p.flow.name, job });
  }

  /** A run the supervisor before this one mirrored (`prev`: its record as it left it). */
  takenOver(runId: string, marker: RemoteMarker, prev: RunResult): RemoteRun {
    return new RemoteRun(this, { runId, logDir: marker.logDir, first: prev, flow: marker.fleet.flow });
  }

  /**
   * Mirrors a taken-over run on: from the start of its record stream (the files were prepared for
   * that), and ends it if its job ended while no supervisor was watching.
   */
  async takeOver(run: RemoteRun): Promise<void> {
    this.runs.set(run.id, run);
    this.readerWake?.();
    try {
      const q = await this.flowQueue(run.flowName);
      await q.events.waitUntilReady(); // from now on its events come; what came before is read below
      const { job, state } = await readJob(q.queue, run.id);
      this.o.log.info({ runId: run.id, state }, 'took over a run of the fleet');
      if (state === 'gone')
        await run.finish({
          status: 'failed',
          reason: 'supervisor-died',
          detail:
            'the supervisor mirroring this run died, and its job is no longer in Redis: how it ended on its host is not known here',
        });
      else if (job) this.endAsJob(run, q, job, state); // otherwise it waits or runs: its events come as any run's
    } catch (err) {
      this.o.log.warn({ runId: run.id, err: (err as Error).message }, 'taking over a run of the fleet');
    }
  }

  private stalled(run: RemoteRun): Finish {
    const host =
      typeof run.result.metrics.host === 'string' ? run.result.metrics.host : 'the host running it';
    return {
      status: 'failed',
      reason: 'heartbeat-timeout',
      detail: `${host} stopped renewing its lease on the run (BullMQ found the job stalled: the host died or lost its network); the card's retry policy decides whether it runs again`,
    };
  }

  markerFile(runId: string): string {
    return path.join(this.o.activeDir, runId);
  }

  /** Puts the run's job on its flow's queue (the job id is the run id: one job per run, ever). */
  async submit(run: RemoteRun, job: RunJob): Promise<void> {
    this.runs.set(run.id, run);
    this.readerWake?.();
    const src = this.sources.get(run.id);
    this.sources.delete(run.id);
    const shipped = src ? await collectInputs(src) : undefined;
    if (shipped) {
      await storeInputs(this.redis, run.id, shipped.bytes);
      job = { ...job, inputs: shipped.inputs };
    }
    const { queue } = await this.flowQueue(run.flowName);
    await queue.add('run', job, {
      jobId: run.id,
      attempts: 1,
      removeOnComplete: { age: 24 * 3600 },
      removeOnFail: { age: 7 * 24 * 3600 },
    });
  }

  async cancel(run: RemoteRun, reason: TerminationReason, detail: string): Promise<void> {
    await this.redis.set(`runboard:cancelled:${run.id}`, '1', 'EX', 24 * 3600);
    const q = await this.flowQueue(run.flowName);
    const { job, state } = await readJob(q.queue, run.id);
    if (job && this.endAsJob(run, q, job, state)) return; // it had ended already
    if (job && (state === 'waiting' || state === 'delayed' || state === 'prioritized')) {
      await job.remove().catch(() => undefined);
      await run.finish({
        status: reason === 'cancelled' ? 'cancelled' : 'failed',
        reason,
        detail: `${detail} (before a host took it)`,
      });
      return;
    }
    await this.redis.publish(CANCEL_CHANNEL, run.id);
  }

  /** Reads every active run's record stream, blocking, one connection for all. */
  private async readLoop(): Promise<void> {
    while (!this.closed) {
      const active = [...this.runs.values()].filter((r) => !r.streamEnded);
      if (active.length === 0) {
        await new Promise<void>((r) => {
          this.readerWake = r;
          setTimeout(r, 1000);
        });
        continue;
      }
      try {
        const keys = active.map((r) => recordStream(r.id));
        const ids = active.map((r) => r.streamId);
        const res = await this.reader.xreadBuffer('COUNT', 200, 'BLOCK', 500, 'STREAMS', ...keys, ...ids);
        for (const [key, entries] of res ?? []) {
          const runId = key.toString().split(':')[2]!;
          const run = this.runs.get(runId);
          if (run) this.apply(run, entries);
        }
      } catch (err) {
        if (!this.closed) this.o.log.warn({ err: (err as Error).message }, 'reading run records from Redis');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  private apply(run: RemoteRun, entries: [Buffer, Buffer[]][]): void {
    for (const [id, fields] of entries) {
      if (!streamIdAfter(id.toString(), run.streamId)) continue; // the reader and a drain may both see it
      run.streamId = id.toString();
      const f: Record<string, Buffer> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!.toString()] = fields[i + 1]!;
      run.take(f.k?.toString() ?? '', f.d ?? Buffer.alloc(0), f);
    }
  }

  /** Mirrors what is left of the run's stream (up to the host's last record, or all there is). */
  async drainStream(run: RemoteRun): Promise<void> {
    const key = recordStream(run.id);
    for (let rounds = 0; rounds < 10_000 && !run.streamEnded; rounds++) {
      const entries = (await this.redis.xrangeBuffer(key, `(${run.streamId}`, '+', 'COUNT', 500)) as [
        Buffer,
        Buffer[],
      ][];
      if (entries.length === 0) {
        if (rounds > 0 || run.streamId !== '0') break; // nothing more came: the host is gone
        await new Promise((r) => setTimeout(r, 200)); // the completion can overtake the last records
        continue;
      }
      this.apply(run, entries);
    }
    run.streamEnded = true;
    this.runs.delete(run.id);
  }

  /**
   * The run's stream is no longer needed: called once its record is final and its marker gone, so a
   * supervisor that takes a run over (from its marker) always finds the stream it replays.
   */
  async dropStream(run: RemoteRun): Promise<void> {
    await this.redis.del(recordStream(run.id), inputsKey(run.id)).catch(() => undefined); // else they expire
  }

  /**
   * The workspace name a launch's job carries. An extraction works on no workspace of its own (it reads
   * its input, shipped with the job, and writes only its artifacts): it names the project (`.`).
   */
  static jobWorkspace(p: z.output<typeof LaunchRun.params>, grantPath: string, workspace: string): string {
    if (p.flow.runner === 'extract' && p.flow.extract?.input) return '.';
    return FleetGateway.workspaceName(p.card.project ?? grantPath, workspace);
  }

  /** Project-relative workspace name of a launch. */
  static workspaceName(projectOrGrant: string, workspace: string): string {
    const rel = path.relative(projectOrGrant, workspace);
    if (rel.startsWith('..') || path.isAbsolute(rel))
      throw new Error(
        `the workspace ${workspace} is outside the project ${projectOrGrant}: a fleet names workspaces relative to the project`,
      );
    return rel === '' ? '.' : rel.split(path.sep).join('/');
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.reconciler);
    clearInterval(this.judging);
    this.readerWake?.();
    await withinMs(
      Promise.all(
        [...this.queues.values()].map((q) =>
          q.then(({ queue, events }) => Promise.all([queue.close(), events.close()])),
        ),
      ),
      3000,
    );
    this.redis.disconnect();
    this.reader.disconnect();
  }
}

interface FlowQueue {
  queue: Queue;
  events: QueueEvents;
  onFailed: (jobId: string, why: string) => void;
}

/** Whether stream id `a` ("ms-seq") comes after `b`. */
function streamIdAfter(a: string, b: string): boolean {
  const [am, as = '0'] = a.split('-');
  const [bm, bs = '0'] = b.split('-');
  return BigInt(am!) !== BigInt(bm!) ? BigInt(am!) > BigInt(bm!) : BigInt(as) > BigInt(bs);
}

/**
 * A run's job and its state, read in that order of truth: the state first, then the job. Read the
 * other way round, a job read while it ran and its state read just after it ended has no return value
 * (two reads of Redis, not one), which read as a host's unreadable answer (a CI failure). A job that
 * completed is only returned with its return value.
 */
export async function readJob(queue: Queue, runId: string): Promise<{ job: Job | undefined; state: string }> {
  const state = await queue.getJobState(runId);
  if (state === 'unknown') return { job: undefined, state: 'gone' };
  const job = await queue.getJob(runId);
  if (!job) return { job: undefined, state: 'gone' };
  if (state === 'completed' && (job.returnvalue === null || job.returnvalue === undefined))
    return { job: undefined, state: 'completing' }; // looked at again on the next lease, or its event comes
  return { job, state };
}
