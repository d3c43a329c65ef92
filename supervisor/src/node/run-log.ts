/**
 * A run's records in its log dir: `events.jsonl` (numbered events, with the byte offset of each for
 * replay), `stdout.log`, `stderr.log` and `output.order` (see output-files.ts) and `result.json`. Creating them is the launch's last check: if
 * that fails (e.g. a full disk) nothing of the run stays on disk and the launch is refused.
 */
import { mkdirSync, rmSync } from 'node:fs';
import type { EventEmitter } from 'node:events';
import path from 'node:path';
import type { RunEvent, RunResult } from '../protocol/index.ts';
import { AppendFiles } from './append-file.ts';
import type { AttachSource } from './attach.ts';
import { OutputFiles } from './output-files.ts';
import { ResultFile } from './result-file.ts';

export class RunLog {
  readonly events: AppendFiles<'events'>;
  readonly output: OutputFiles;
  private readonly resultFile: ResultFile;
  private readonly eventOffsets: number[] = [];
  private seq = 0;
  /** The files are closed and result.json holds the final record. */
  final = false;

  /**
   * Creates the log dir with `first` as result.json. `onGrow`: any file grew; `onFailed`: a write
   * failed (the run must stop: its output would be lost).
   */
  constructor(
    readonly dir: string,
    first: RunResult,
    onGrow: () => void,
    onFailed: (file: string, err: NodeJS.ErrnoException) => void,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.resultFile = new ResultFile(path.join(dir, 'result.json'));
    let events: AppendFiles<'events'> | undefined;
    try {
      this.resultFile.init(first);
      events = new AppendFiles({ events: path.join(dir, 'events.jsonl') });
      this.output = new OutputFiles(dir);
    } catch (err) {
      // The launch is refused (the caller gets the reason): nothing ran, so nothing of it stays on disk.
      void events?.close();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    this.events = events;
    for (const files of [this.events, this.output]) {
      files.on('grow', onGrow);
      files.on('failed', onFailed);
    }
  }

  /** Appends an event with the next seq. */
  event(type: RunEvent['type'], message?: string, data?: Record<string, unknown>): void {
    const e: RunEvent = {
      seq: this.seq++,
      ts: new Date().toISOString(),
      type,
      ...(message !== undefined ? { message } : {}),
      ...(data ? { data } : {}),
    };
    this.eventOffsets.push(this.events.committed.events + this.events.pendingBytes);
    this.events.append('events', Buffer.from(JSON.stringify(e) + '\n'));
  }

  /** Waits for everything queued, then closes the three files. */
  async close(): Promise<void> {
    await Promise.all([this.events.close(), this.output.close()]);
  }

  writeResult(result: RunResult): void {
    this.resultFile.write(result);
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
      signals,
      result,
    };
  }
}
