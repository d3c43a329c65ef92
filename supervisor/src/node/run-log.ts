/**
 * A run's records in its log dir: `events.jsonl` (numbered events, with the byte offset of each for
 * replay), `stdout.log`, `stderr.log` and `result.json`. Creating them is the launch's last check: if
 * that fails (e.g. a full disk) nothing of the run stays on disk and the launch is refused.
 */
import { mkdirSync, rmSync } from 'node:fs';
import type { EventEmitter } from 'node:events';
import path from 'node:path';
import type { RunEvent, RunResult } from '../protocol/index.ts';
import { AppendFile } from './append-file.ts';
import type { AttachSource } from './attach.ts';
import { ResultFile } from './result-file.ts';

export class RunLog {
  readonly events: AppendFile;
  readonly stdout: AppendFile;
  readonly stderr: AppendFile;
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
    const opened: AppendFile[] = [];
    try {
      this.resultFile.init(first);
      for (const name of ['events.jsonl', 'stdout.log', 'stderr.log'])
        opened.push(new AppendFile(path.join(dir, name)));
    } catch (err) {
      // The launch is refused (the caller gets the reason): nothing ran, so nothing of it stays on disk.
      for (const f of opened) void f.close();
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    [this.events, this.stdout, this.stderr] = opened as [AppendFile, AppendFile, AppendFile];
    for (const f of opened) {
      f.on('grow', onGrow);
      f.on('failed', (err) => onFailed(f.path, err));
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
    this.eventOffsets.push(this.events.committed + this.events.pendingBytes);
    this.events.append(Buffer.from(JSON.stringify(e) + '\n'));
  }

  /** Waits for everything queued, then closes the three files. */
  async close(): Promise<void> {
    await Promise.all([this.events.close(), this.stdout.close(), this.stderr.close()]);
  }

  writeResult(result: RunResult): void {
    this.resultFile.write(result);
  }

  /** What an attached client reads while the run goes on (and after). */
  attachSource(runId: string, signals: EventEmitter, result: () => Promise<RunResult>): AttachSource {
    const view = (f: AppendFile) => ({
      path: f.path,
      committed: () => f.committed,
      isFinal: () => this.final,
    });
    return {
      runId,
      events: view(this.events),
      stdout: view(this.stdout),
      stderr: view(this.stderr),
      eventOffset: (seq) => this.eventOffsets[seq],
      signals,
      result,
    };
  }
}
