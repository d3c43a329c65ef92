/**
 * A host of a fleet: pulls runs of the flows it offers from their BullMQ queues and runs them here,
 * with this host's own grants and keys, as if launched locally. At most `capacity` runs at once over
 * all its flows. It holds the lease of each job it took (lease.ts): renewed while Redis answers, taken
 * again after a Redis restart lost it; a run whose lease this host could not hold for `FENCE_MS` (Redis
 * unreachable from here, the process frozen) is stopped before the board can declare its job stalled,
 * so it never runs twice at once.
 */
import { once } from 'node:events';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import type pino from 'pino';
import { ResponseError } from '../../protocol/index.ts';
import { grantCovering } from '../../common/grants.ts';
import type { StatePaths } from '../../common/paths.ts';
import type { RunRegistry } from '../registry.ts';
import { forwardRecords } from './forward.ts';
import {
  CANCEL_CHANNEL,
  FLEET_JOB_VERSION,
  LEASE_MS,
  queueName,
  redisOptions,
  RunJob,
  versionRefusal,
  withinMs,
  type HostOffer,
  type RunJobResult,
} from './job.ts';
import { receiveInputs } from './inputs.ts';
import { holdToPolicy, jobRunId } from './policy.ts';
import { advertise, withdraw } from './roster.ts';
import { capped, releaseSlot, renewSlot, takeSlot, type SlotCaps } from './slots.ts';
import { FENCE_MS, holdJob, LOOK_MS, type HeldJob } from './lease.ts';

/** How long a host's entry in the roster (roster.ts) and a run's slot (slots.ts) last unless renewed. */
const ROSTER_TTL_MS = 3 * LEASE_MS;
/** A slot outlives the run of a host cut off from Redis: it stops its runs `FENCE_MS` after it last held them. */
const SLOT_MS = FENCE_MS + LEASE_MS;
/** A job whose slot is not free goes back to its queue for this long (then any host may take it). */
const NO_SLOT_DELAY_MS = 250;

export interface FleetHostOptions {
  redisUrl: string;
  /** Redis's password when kept apart from the URL (docs/deployment.md). */
  redisPassword?: string | undefined;
  offer: HostOffer;
  registry: RunRegistry;
  paths: StatePaths;
  /** Where card texts of remote runs are written for their runners to read (outside the state root). */
  cardsDir: string;
  log: pino.Logger;
}

/** A job this host took: its lease, when this host last held it (the hold's send time), a hold going. */
interface Held {
  job: HeldJob;
  heldAt: number;
  holding?: Promise<boolean | undefined> | undefined;
}

export class FleetHost {
  private readonly workers: Worker[] = [];
  private readonly redis: Redis;
  private readonly subscriber: Redis;
  private running = 0;
  /** runId (the submitter's) → the local run's id. */
  private readonly local = new Map<string, string>();
  /** runId (the submitter's) → the caps whose slots its run holds (renewed while it goes). */
  private readonly slots = new Map<string, SlotCaps>();
  /** Jobs this host took (job id → its lease, when it was last held, a hold under way). */
  private readonly held = new Map<string, Held>();
  private readonly watchdog: NodeJS.Timeout;
  /** This host is in the fleet's roster (or Redis did not answer within 3 s: it is added when it does). */
  readonly announced: Promise<void>;

  constructor(private readonly o: FleetHostOptions) {
    const conn = redisOptions(o.redisUrl, o.redisPassword);
    this.redis = new Redis(conn);
    this.subscriber = new Redis(conn);
    mkdirSync(o.cardsDir, { recursive: true, mode: 0o700 });
    void this.subscriber.subscribe(CANCEL_CHANNEL);
    this.subscriber.on('message', (_channel: string, runId: string) =>
      this.cancelLocal(runId, 'cancelled by the user'),
    );
    for (const flow of o.offer.flows) {
      const w: Worker = new Worker(queueName(flow), (job, token) => this.process(w, job, token), {
        connection: conn,
        concurrency: o.offer.capacity,
        name: o.offer.name,
        lockDuration: LEASE_MS,
        // The lease is this host's (lease.ts): BullMQ's renewal cannot take a lock back after a Redis
        // restart lost it, and its stalled check would fail a job whose host is alive; the board judges.
        skipLockRenewal: true,
        skipStalledCheck: true,
        maxStalledCount: 0, // a run whose host vanished ends failed; the card's backoff decides a retry
      });
      w.on('error', (err) => o.log.warn({ err: err.message, flow }, 'fleet worker error'));
      this.workers.push(w);
    }
    // What this host offers, in the roster boards read to refuse up front what no host can run.
    const ad = {
      name: o.offer.name,
      flows: o.offer.flows,
      workspaces: Object.keys(o.offer.workspaces),
      capacity: o.offer.capacity,
      v: FLEET_JOB_VERSION,
    };
    const announce = (): Promise<void> =>
      advertise(this.redis, ad, ROSTER_TTL_MS).catch((err: Error) =>
        o.log.debug({ err: err.message }, 'saying what this host offers'),
      );
    this.announced = withinMs(announce(), 3000);
    let ticks = 0;
    this.watchdog = setInterval(() => {
      if (++ticks % 2 === 0) void announce();
      for (const id of this.held.keys()) void this.hold(id);
    }, LOOK_MS);
  }

  /**
   * Holds the job's lease (and its run's slots) once more; stops its run when it was lost (the board
   * declared it stalled) or could not be held for `FENCE_MS` (fencing: Redis unreachable from here).
   * Whether the job is still this host's.
   */
  private async hold(id: string): Promise<boolean | undefined> {
    const h = this.held.get(id);
    if (!h) return false;
    if (Date.now() - h.heldAt > FENCE_MS) {
      this.cancelLocal(
        id,
        `${this.o.offer.name} could not renew its lease on the job for ${FENCE_MS} ms (Redis unreachable from here): stopped so it never runs twice`,
      );
      return false;
    }
    h.holding ??= this.holdOnce(id, h).finally(() => (h.holding = undefined));
    return h.holding;
  }

  private async holdOnce(id: string, h: Held): Promise<boolean | undefined> {
    // Sent once Redis is back, not queued while it is away: the time it is sent bounds when the lock
    // it sets runs out, and a hold sent at the start of an outage would count the outage against it.
    if (this.redis.status !== 'ready') await once(this.redis, 'ready');
    if (Date.now() - h.heldAt > FENCE_MS) return false; // fenced meanwhile: never taken back
    const sent = Date.now();
    try {
      const caps = this.slots.get(id);
      const [mine] = await Promise.all([
        holdJob(this.redis, h.job),
        caps ? renewSlot(this.redis, id, caps, SLOT_MS) : undefined, // lapses if Redis stays away
      ]);
      if (!mine) {
        this.cancelLocal(
          id,
          `${this.o.offer.name} lost its lease on the job (the fleet declared it stalled): stopped so it never runs twice`,
        );
        return false;
      }
      if (this.held.get(id) === h) h.heldAt = Math.max(h.heldAt, sent);
      return true;
    } catch (err) {
      this.o.log.warn({ jobId: id, err: (err as Error).message }, 'holding a fleet job');
      return undefined;
    }
  }

  private cancelLocal(runId: string, why: string): void {
    const localId = this.local.get(runId);
    const run = localId ? this.o.registry.get(localId) : undefined;
    if (!run?.isActive) return;
    if (why.startsWith('cancelled')) run.cancel();
    else run.stop('heartbeat-timeout', why, 0);
  }

  /**
   * Holds the job before BullMQ moves it (which needs its lock): until Redis answered whether it is
   * still this host's, whatever failed on the way. Whether it is.
   */
  private async holdToMove(id: string): Promise<boolean> {
    for (;;) {
      const mine = await this.hold(id);
      if (mine !== undefined) return mine;
      await new Promise((r) => setTimeout(r, LOOK_MS / 10)); // an error Redis answered: try again
    }
  }

  /**
   * Takes a job: its lease is held from now until it is moved on. The end is moved here too (`finish`),
   * never by BullMQ: a Redis restart meanwhile may leave the job without a lock when the move reaches
   * Redis, and BullMQ then only reports an error and leaves the job active, for the board to fail as
   * stalled although it ran.
   */
  private async process(w: Worker, job: Job, token?: string): Promise<RunJobResult> {
    const id = String(job.id);
    if (token === undefined) return this.take(job, token);
    const h = {
      job: { key: w.toKey(id), active: w.keys.active!, id, token, ats: job.attemptsStarted },
      heldAt: Date.now(),
    };
    this.held.set(id, h);
    try {
      if (!(await this.holdToMove(id))) throw new Error(`${this.o.offer.name} lost the job as it took it`);
      let result: RunJobResult;
      try {
        result = await this.take(job, token);
      } catch (err) {
        if (err instanceof DelayedError) throw err; // moved back to its queue already (delay)
        return await this.finish(job, token, { failed: err as Error });
      }
      return await this.finish(job, token, { result });
    } finally {
      if (this.held.get(id) === h) this.held.delete(id);
    }
  }

  /**
   * Moves the job to completed (or failed: BullMQ's retries and backoff as it would apply them) with its
   * token, held first, as BullMQ would after `process` but fetching no next job; then tells BullMQ to
   * leave it (a DelayedError: BullMQ moves nothing then). A move that met "Missing lock" (sent before a
   * Redis outage and resent after the lease ran out in it) is held again and sent again, as `delay`
   * does. On BullMQ's own path that error is emitted, its moveToFailed meets the same, and the job stays
   * active with no lock (Worker.processJob / handleCompleted, BullMQ 6.7).
   */
  private async finish(
    job: Job,
    token: string,
    end: { result: RunJobResult } | { failed: Error },
  ): Promise<never> {
    const id = String(job.id);
    const stacktrace = [...(job.stacktrace ?? [])]; // moveToFailed pushes the error's stack onto it
    for (let tries = 0; ; tries++) {
      if (!(await this.holdToMove(id))) {
        // Not this host's any more: ended already (a move answered before an outage and resent after
        // it) or declared stalled by the board. Either way Redis has the job's end.
        this.o.log.warn({ jobId: id }, "a fleet job was no longer this host's at its end");
        throw new DelayedError();
      }
      try {
        await this.move('end', tries, this.lockOf(id), async () => {
          if ('result' in end) await job.moveToCompleted(end.result, token, false);
          else {
            job.stacktrace = [...stacktrace]; // once, whatever the tries
            await job.moveToFailed(end.failed, token, false);
          }
        });
      } catch (err) {
        if (/Missing lock/.test((err as Error).message)) continue;
        throw err;
      }
      throw new DelayedError();
    }
  }

  /** The Redis key of the lock of a job this host holds. */
  private lockOf(id: string): string {
    return `${this.held.get(id)?.job.key ?? ''}:lock`;
  }

  /**
   * One move of a held job (`send`: BullMQ's moveTo…; `tries`: the moves of this `kind` before it that
   * met "Missing lock"; `lock`: the job's lock in Redis). Nothing but the call: a method of its own
   * so that a test can make the lock go missing right before it (tests/fleet/drop-lock.mjs, loaded
   * into a host with node's --import, wraps it: the state a Redis outage longer than the lease leaves
   * a move that was in flight when it began). The product has no knob for that fault.
   */
  protected async move(
    _kind: 'end' | 'delay',
    _tries: number,
    _lock: string,
    send: () => Promise<unknown>,
  ): Promise<void> {
    await send();
  }

  /**
   * Back to the queue until `at` (no room here, or no slot of the fleet's caps): held, then moved. A
   * move in flight when Redis went away is sent again once it is back (ioredis resends what it had
   * not been answered), after the lease it was held for ran out in the outage: "Missing lock", though
   * the job is this host's. It is held again (taken back, lease.ts) and moved again.
   */
  private async delay(job: Job, at: number, token?: string): Promise<never> {
    const id = String(job.id);
    for (let tries = 0; ; tries++) {
      if (!(await this.holdToMove(id))) throw new Error(`${this.o.offer.name} lost the job before it ran`);
      try {
        await this.move('delay', tries, this.lockOf(id), () => job.moveToDelayed(at, token));
      } catch (err) {
        if (/Missing lock/.test((err as Error).message)) continue;
        throw err;
      }
      throw new DelayedError();
    }
  }

  private async take(job: Job, token?: string): Promise<RunJobResult> {
    // The job's id names the card file: it must be the run id the job carries (a strict pattern),
    // whatever a Redis writer put there.
    const runId = jobRunId(job.id, (job.data as { runId?: unknown } | undefined)?.runId);
    if (!runId)
      throw new UnrecoverableError(
        `${this.o.offer.name} refused the job: its id ${JSON.stringify(String(job.id).slice(0, 100))} is not the run id it carries (YYYYMMDD-HHMMSS-xxxxxx)`,
      );
    if (this.running >= this.o.offer.capacity) {
      // Another flow's worker took the last slot meanwhile: back to the queue for a moment.
      return this.delay(job, Date.now() + 200, token);
    }
    this.running++; // taken at once: the checks below wait on Redis, and another job may come meanwhile
    // The fleet's caps (several boards on one fleet share them): the global one and the flow's, a slot
    // of each or back to the queue.
    const data = job.data as { cap?: unknown; flowCap?: unknown; flow?: { name?: unknown } } | undefined;
    const caps: SlotCaps = {
      cap: typeof data?.cap === 'number' ? data.cap : undefined,
      flowCap: typeof data?.flowCap === 'number' ? data.flowCap : undefined,
      flow: typeof data?.flow?.name === 'string' ? data.flow.name : '',
    };
    const bounded = capped(caps);
    if (bounded && !(await takeSlot(this.redis, runId, caps, SLOT_MS).catch(() => false))) {
      this.running--;
      return this.delay(job, Date.now() + NO_SLOT_DELAY_MS, token);
    }
    if (bounded) this.slots.set(runId, caps);
    const cardFile = path.join(this.o.cardsDir, `${runId}.md`);
    const inputsDir = path.join(this.o.cardsDir, runId);
    try {
      return await this.runJob(job, cardFile, inputsDir);
    } finally {
      this.running--;
      rmSync(cardFile, { force: true });
      rmSync(inputsDir, { recursive: true, force: true });
      if (bounded) {
        this.slots.delete(runId);
        await releaseSlot(this.redis, runId, caps).catch(() => undefined); // else they lapse
      }
    }
  }

  private async runJob(job: Job, cardFile: string, inputsDir: string): Promise<RunJobResult> {
    const { offer, registry, paths } = this.o;
    // another version's job first, with what to do (its fields may mean something else there)
    const v = (job.data as { v?: unknown } | undefined)?.v;
    if (v !== FLEET_JOB_VERSION) throw new UnrecoverableError(versionRefusal(offer.name, v));
    const parsed = RunJob.safeParse(job.data);
    if (!parsed.success)
      throw new UnrecoverableError(
        `${offer.name} refused the job: it is not a run of this version (${parsed.error.message.slice(0, 300)})`,
      );
    const spec = parsed.data;
    // The job's sandbox within this host's own policy (fleet join): narrower, never wider.
    const held = holdToPolicy(spec.flow, offer.policy, offer.name);
    if ('refused' in held) throw new UnrecoverableError(held.refused);
    const folder = Object.hasOwn(offer.workspaces, spec.workspace)
      ? offer.workspaces[spec.workspace]
      : undefined;
    if (!folder)
      throw new UnrecoverableError(
        `${offer.name} has no workspace "${spec.workspace}": grant a folder there and map it (runboard fleet join … --workspace ${spec.workspace}=/folder)`,
      );
    const grant = grantCovering(paths, folder);
    if (!grant)
      throw new UnrecoverableError(
        `${offer.name} maps workspace "${spec.workspace}" to ${folder}, which it has not granted: run \`runboard grant ${folder}\` on ${offer.name}`,
      );
    if (await this.redis.exists(`runboard:cancelled:${spec.runId}`))
      throw new UnrecoverableError('cancelled by the user before a host took it');
    // The board's paths in the flow are never used here: the run reads the copies of what they held
    // that came with the job (inputs.ts), written under this job's own folder.
    const flow: typeof held.flow = { ...held.flow };
    delete flow.prompt;
    if (flow.extract) {
      const { input: _input, ...extract } = flow.extract;
      flow.extract = extract;
    }
    const inputs = spec.inputs;
    if (inputs) {
      rmSync(inputsDir, { recursive: true, force: true });
      try {
        await receiveInputs(this.redis, spec.runId, inputs, spec.card.text, inputsDir);
      } catch (err) {
        throw new UnrecoverableError(
          `${offer.name} could not take the run's inputs: ${(err as Error).message}`,
        );
      }
      if (inputs.prompt) flow.prompt = path.join(inputsDir, 'prompt');
      if (inputs.extractInput) {
        const input = path.join(inputsDir, ...inputs.extractInput.split('/'));
        flow.extract = { ...flow.extract, input };
        flow.sandbox = { ...flow.sandbox, read: [...(flow.sandbox?.read ?? []), input] };
      }
    } else writeFileSync(cardFile, spec.card.text, { mode: 0o600 });
    const project = path.join(inputsDir, 'project');
    try {
      let launched;
      try {
        launched = registry.launch({
          card: {
            path: inputs ? path.join(project, 'cards', 'card.md') : cardFile,
            ...(inputs ? { project } : {}),
            ...(spec.card.id ? { id: spec.card.id } : {}),
            ...(spec.card.title ? { title: spec.card.title } : {}),
          },
          flow,
          workspace: folder,
          grant,
          ...(spec.command !== undefined ? { command: spec.command } : {}),
        });
      } catch (err) {
        const msg = err instanceof ResponseError ? err.message : (err as Error).message;
        throw new UnrecoverableError(`${offer.name} could not launch it: ${msg}`);
      }
      const run = registry.get(launched.runId)!;
      this.local.set(spec.runId, launched.runId);
      const forwarded = forwardRecords(this.redis, spec.runId, run.attachSource(), {
        host: offer.name,
        runId: launched.runId,
      });
      // Records that cannot reach the board's side: the run goes on for nobody, so it stops.
      forwarded.catch((err: unknown) =>
        run.stop('crashed', `its records could not be sent through Redis: ${(err as Error).message}`),
      );
      const result = await run.whenEnded();
      await forwarded;
      return { host: offer.name, result };
    } finally {
      this.local.delete(spec.runId);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.watchdog);
    await withinMs(withdraw(this.redis, this.o.offer.name), 1000);
    // The registry has stopped the runs already; a worker waiting on Redis must not hold the exit.
    await withinMs(Promise.all(this.workers.map((w) => w.close(true))), 3000);
    this.redis.disconnect();
    this.subscriber.disconnect();
  }
}
