/**
 * A run that a host of the fleet runs, as the supervisor the board talks to records it: its files
 * (events.jsonl, stdout.log, stderr.log, result.json, artifacts) mirrored from the host's record stream,
 * its marker, its end. The gateway (gateway.ts) feeds it records and job ends from Redis.
 */
import { EventEmitter } from 'node:events';
import { readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { RunEvent, RunResult, TerminationReason } from '../../protocol/index.ts';
import type { AttachSource } from '../attach.ts';
import { ORDER_FILE } from '@runboard/supervisor/run-output';
import { RunLog } from '../run-log.ts';
import { ArtifactMirror } from './artifacts.ts';
import { InputsRefused } from './inputs.ts';
import type { RunJob, RunJobResult } from './job.ts';

export interface RemoteLaunch {
  runId: string;
  logDir: string;
  first: RunResult;
  flow: string;
  /** The job to queue; none for a run taken over after a restart (its job is in Redis already). */
  job?: RunJob;
}

/** What a remote run's marker (`<state>/supervisor/active/<runId>`) says, for the next supervisor. */
export interface RemoteMarker {
  logDir: string;
  fleet: { redisUrl: string; flow: string };
}

/**
 * What a remote run asks of the gateway that feeds it (FleetGateway, gateway.ts): declared here so the
 * run does not import the gateway back (no import circle).
 */
export interface RunMirror {
  readonly redisUrl: string;
  markerFile(runId: string): string;
  takeOver(run: RemoteRun): Promise<void>;
  submit(run: RemoteRun, job: RunJob): Promise<void>;
  cancel(run: RemoteRun, reason: TerminationReason, detail: string): Promise<void>;
  drainStream(run: RemoteRun): Promise<void>;
  dropStream(run: RemoteRun): Promise<void>;
}

/** The board's side's own events (not the host's): a supervisor that takes the run over skips the rest. */
const OWN = { origin: 'board' } as const;

/**
 * Prepares a run's files for a supervisor that takes it over: it mirrors the whole record stream again
 * (it is kept in Redis until the run ends), so stdout, stderr and their order are written anew, byte for
 * byte as before, and artifacts again; events.jsonl is kept (cut after its last whole line) and the
 * host's events already in it are counted, to be skipped. Returns that count.
 */
function prepareTakeOver(logDir: string): number {
  for (const f of ['stdout.log', 'stderr.log', ORDER_FILE])
    try {
      truncateSync(path.join(logDir, f), 0);
    } catch {
      // not there: made anew
    }
  const file = path.join(logDir, 'events.jsonl');
  let text: Buffer;
  try {
    text = readFileSync(file);
  } catch {
    return 0;
  }
  const whole = text.lastIndexOf(10) + 1;
  if (whole < text.length) truncateSync(file, whole); // a line cut by the crash is written again
  let mirrored = 0;
  for (const line of text.subarray(0, whole).toString('utf8').split('\n')) {
    if (!line) continue;
    try {
      if ((JSON.parse(line) as RunEvent).data?.origin !== OWN.origin) mirrored++;
    } catch {
      mirrored++;
    }
  }
  return mirrored;
}

export type Finish = {
  status: RunResult['status'];
  reason: TerminationReason;
  detail: string;
  remote?: RunJobResult;
};

/** A run that a host of the fleet runs, as this supervisor records it. */
export class RemoteRun {
  readonly id: string;
  readonly signals = new EventEmitter();
  readonly drivesRealDisplay = false;
  readonly jailPid = undefined;
  result: RunResult;
  private readonly log: RunLog;
  private readonly ended: Promise<RunResult>;
  private resolveEnded!: (r: RunResult) => void;
  private active = true;
  /** The record stream's position mirrored so far. */
  streamId = '0';
  /** The host sent its last record. */
  streamEnded = false;
  /** BullMQ found its job stalled (the run ends a lease later). */
  stalledSeen = false;
  private finishing: Finish | undefined;
  private readonly artifacts: ArtifactMirror;
  /** Events of the stream that the files hold already (a run taken over): not written again. */
  private skipEvents = 0;

  constructor(
    private readonly gw: RunMirror,
    private readonly l: RemoteLaunch,
  ) {
    this.id = l.runId;
    this.result = l.first;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    if (!l.job) this.skipEvents = prepareTakeOver(l.logDir);
    this.log = new RunLog(
      l.logDir,
      l.first,
      () => this.signals.emit('grow'),
      () => undefined,
    );
    this.artifacts = new ArtifactMirror(l.logDir, (name, why) =>
      this.mirrored('error', `artifact ${JSON.stringify(name)} was not copied here: ${why}`, {
        artifact: name,
      }),
    );
  }

  get flowName(): string {
    return this.l.flow;
  }

  /** An event that comes of the record stream (skipped while a take-over replays what is on disk). */
  private mirrored(
    type: RunEvent['type'],
    message?: string,
    data?: Record<string, unknown>,
    ts?: string,
  ): void {
    if (this.skipEvents > 0) this.skipEvents--;
    else this.log.event(type, message, data, ts);
  }

  /** An event of this side's own (queued, cancelled, ended, taken over). */
  private own(type: RunEvent['type'], message: string, data: Record<string, unknown> = {}): void {
    this.log.event(type, message, { ...data, ...OWN });
  }

  private writeMarker(): void {
    // Like a local run's marker: if this supervisor dies, the next one takes the run over (or records
    // how the mirror ended).
    const marker: RemoteMarker & Record<string, unknown> = {
      logDir: this.l.logDir,
      jailPid: 0,
      workerPid: null,
      supervisorPid: process.pid,
      fleet: { redisUrl: this.gw.redisUrl, flow: this.l.flow },
    };
    try {
      writeFileSync(this.gw.markerFile(this.id), JSON.stringify(marker));
    } catch {
      // without a marker only the record of a supervisor crash is lost
    }
  }

  get isActive(): boolean {
    return this.active;
  }

  /** Whether its end is being recorded (or was). */
  get isFinishing(): boolean {
    return this.finishing !== undefined;
  }

  start(): void {
    this.writeMarker();
    if (!this.l.job) {
      this.own(
        'log',
        `this supervisor (pid ${process.pid}) took the run over: mirroring it on from its host`,
      );
      void this.gw.takeOver(this);
      return;
    }
    this.own('launched', `queued for a host of the fleet that offers flow ${this.l.flow}`, {
      workspace: this.l.job.workspace,
    });
    void this.gw.submit(this, this.l.job).catch((err: unknown) =>
      this.finish({
        status: 'failed',
        reason: 'spawn-failed',
        // inputs that cannot go with the job are said as they are (what to do is in the words)
        detail:
          err instanceof InputsRefused
            ? err.message
            : `could not queue the run in Redis: ${(err as Error).message}`,
      }),
    );
  }

  cancel(): void {
    this.stop('cancelled', 'cancelled by the user');
  }

  stop(reason: TerminationReason, detail: string): void {
    if (!this.active) return;
    this.own('cancel', detail, { reason });
    void this.gw.cancel(this, reason, detail);
  }

  attachSource(): AttachSource {
    return this.log.attachSource(this.id, this.signals, () => this.ended);
  }

  whenEnded(): Promise<RunResult> {
    return this.ended;
  }

  /** A record from the host (`f`: the record's other fields). */
  take(kind: string, data: Buffer, f: Record<string, Buffer> = {}): void {
    if (kind === 'stdout' || kind === 'stderr') this.log.output.output(kind, data);
    else if (kind === 'artifact')
      this.artifacts.piece({
        name: f.n?.toString() ?? '',
        offset: Number(f.o?.toString()),
        size: Number(f.t?.toString()),
        data,
      });
    else if (kind === 'artifact-gone') this.artifacts.gone(f.n?.toString() ?? '');
    else if (kind === 'artifact-note') {
      const host = typeof this.result.metrics.host === 'string' ? this.result.metrics.host : 'its host';
      this.mirrored(
        'error',
        `artifact ${JSON.stringify(f.n?.toString() ?? '')} was not copied here: ${data.toString('utf8').slice(0, 500)}; it stays on ${host}, in the run's folder there`,
        { artifact: f.n?.toString() ?? '' },
      );
    } else if (kind === 'events') {
      for (const line of data.toString('utf8').split('\n')) {
        if (!line) continue;
        try {
          const e = JSON.parse(line) as RunEvent;
          this.mirrored(e.type, e.message, e.data, e.ts);
        } catch {
          // a piece cut mid-line cannot happen (whole lines are sent); skip rather than stop the mirror
        }
      }
    } else if (kind === 'started') {
      const s = JSON.parse(data.toString('utf8')) as { host: string; runId: string };
      this.result = { ...this.result, metrics: { ...this.result.metrics, host: s.host, hostRunId: s.runId } };
      this.log.writeResult(this.result);
      this.mirrored('progress', `${s.host} runs it (its run ${s.runId})`, { host: s.host });
    } else if (kind === 'end') this.streamEnded = true;
  }

  /** The job ended (completed, failed or removed): record the result once the stream is mirrored. */
  async finish(f: Finish): Promise<void> {
    if (this.finishing) return;
    this.finishing = f;
    await this.gw.drainStream(this);
    this.artifacts.abandon();
    const now = new Date();
    const remote = f.remote?.result;
    const base: RunResult = remote
      ? {
          ...remote,
          runId: this.result.runId,
          card: this.result.card,
          workspace: this.result.workspace,
          logDir: this.result.logDir,
          supervisorPid: process.pid,
          metrics: {
            ...remote.metrics,
            ...this.result.metrics,
            host: f.remote!.host,
            hostRunId: remote.runId,
          },
        }
      : {
          ...this.result,
          status: f.status,
          endedAt: now.toISOString(),
          durationMs: now.getTime() - Date.parse(this.result.startedAt),
          termination: { reason: f.reason, detail: f.detail },
          summary: f.detail,
        };
    this.result = base;
    this.own('ended', `${this.result.status}: ${this.result.termination?.detail ?? ''}`, {
      status: this.result.status,
    });
    await this.log.close();
    this.result.stdoutBytes = this.log.output.committed.stdout;
    this.result.stderrBytes = this.log.output.committed.stderr;
    this.log.writeResult(this.result);
    rmSync(this.gw.markerFile(this.id), { force: true });
    void this.gw.dropStream(this);
    this.log.final = true;
    this.active = false;
    this.signals.emit('final');
    this.resolveEnded(this.result);
  }
}
