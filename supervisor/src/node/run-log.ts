/**
 * A run's records in its log dir: `events.jsonl` (numbered events, with the byte offset of each for
 * replay), `stdout.log`, `stderr.log` and `output.order` (see output-files.ts) and `result.json`. Creating them is the launch's last check: if
 * that fails (e.g. a full disk) nothing of the run stays on disk and the launch is refused.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import type { EventEmitter } from 'node:events';
import path from 'node:path';
import type { RunEvent, RunResult } from '../protocol/index.ts';
import { AppendFiles } from './append-file.ts';
import type { AttachSource } from './attach.ts';
import { OutputFiles, type RunOutput } from './output-files.ts';
import { ResultFile } from './result-file.ts';

/** How many of a run's last events stay in memory for attached clients (the rest is read from disk). */
const RECENT_EVENTS = 256;

/** The run's output written by the supervisor itself, through `log.output.output()`. */
const supervisorWritten = (dir: string): OutputFiles => new OutputFiles(dir);

export class RunLog<O extends RunOutput = OutputFiles> {
  readonly events: AppendFiles<'events'>;
  readonly output: O;
  private readonly resultFile: ResultFile;
  private readonly eventOffsets: number[] = [];
  /** The last events by their offset in events.jsonl: attached clients are sent these without a read-back. */
  private readonly recent = new Map<number, { event: RunEvent; end: number }>();
  private seq = 0;
  /** The files are closed and result.json holds the final record. */
  final = false;

  /**
   * Creates the log dir with `first` as result.json. `onGrow`: any file grew; `onFailed`: a write
   * failed (the run must stop: its output would be lost). `makeOutput`: who writes the output files
   * (output-files.ts); by default the supervisor, through `output.output()`.
   */
  constructor(
    readonly dir: string,
    first: RunResult,
    onGrow: () => void,
    onFailed: (file: string, err: NodeJS.ErrnoException) => void,
    makeOutput: (dir: string) => O = supervisorWritten as unknown as (dir: string) => O,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.resultFile = new ResultFile(path.join(dir, 'result.json'));
    let events: AppendFiles<'events'> | undefined;
    try {
      this.resultFile.init(first);
      events = new AppendFiles({ events: path.join(dir, 'events.jsonl') });
      this.output = makeOutput(dir);
    } catch (err) {
      // The launch is refused (the caller gets the reason): nothing ran, so nothing of it stays on disk.
      void events?.close();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    this.events = events;
    if (events.committed.events > 0) this.continueEvents();
    for (const files of [this.events, this.output]) {
      files.on('grow', onGrow);
      files.on('failed', onFailed);
    }
  }

  /** An events.jsonl that exists (a fleet run taken over after a restart): numbering goes on after it. */
  private continueEvents(): void {
    const text = readFileSync(this.events.paths.events);
    for (let start = 0, nl = text.indexOf(10); nl !== -1; start = nl + 1, nl = text.indexOf(10, start)) {
      this.eventOffsets.push(start);
      this.seq++;
    }
  }

  /** Appends an event with the next seq (`ts`: when it happened, if not now: a mirrored run's). */
  event(
    type: RunEvent['type'],
    message?: string,
    data?: Record<string, unknown>,
    ts = new Date().toISOString(),
  ): void {
    const e: RunEvent = {
      seq: this.seq++,
      ts,
      type,
      ...(message !== undefined ? { message } : {}),
      ...(data ? { data } : {}),
    };
    const start = this.events.committed.events + this.events.pendingBytes;
    const line = Buffer.from(JSON.stringify(e) + '\n');
    this.eventOffsets.push(start);
    this.recent.set(start, { event: e, end: start + line.length });
    if (this.recent.size > RECENT_EVENTS) this.recent.delete(this.recent.keys().next().value!);
    this.events.append('events', line);
  }

  /** Waits for everything queued, then closes the three files. */
  async close(): Promise<void> {
    await Promise.all([this.events.close(), this.output.close()]);
  }

  writeResult(result: RunResult): void {
    this.resultFile.write(result);
  }

  /** The same, off the event loop. */
  writeResultAsync(result: RunResult): Promise<void> {
    return this.resultFile.writeAsync(result);
  }

  /** What an attached client reads while the run goes on (and after). */
  attachSource(runId: string, signals: EventEmitter, result: () => Promise<RunResult>): AttachSource {
    const { output, events } = this;
    return {
      runId,
      dir: this.dir,
      events: {
        path: events.paths.events,
        committed: () => events.committed.events,
        isFinal: () => this.final,
      },
      outputSizes: () => ({ ...output.committed }),
      isFinal: () => this.final,
      eventOffset: (seq) => this.eventOffsets[seq],
      recentEvent: (offset) => this.recent.get(offset),
      outputMade: () => output.made,
      signals,
      result,
    };
  }
}
