/**
 * result.json, kept readable whatever happens: it is written atomically (temp + rename) and the
 * first version is padded so that, when the disk is full and a rename is impossible, the final record
 * can still be written over it in place.
 */
import { closeSync, ftruncateSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import type { RunResult } from '../protocol/index.ts';

const RESERVE = 16 * 1024;

/** A run's record at launch: going, nothing measured yet. */
export function launchedResult(
  f: Pick<RunResult, 'runId' | 'card' | 'flow' | 'runner' | 'workspace' | 'logDir' | 'startedAt' | 'metrics'>,
): RunResult {
  return {
    ...f,
    status: 'running',
    endedAt: null,
    durationMs: null,
    exitCode: null,
    signal: null,
    termination: null,
    lastHeartbeat: null,
    bytesRead: null,
    bytesWritten: null,
    storageBytesRead: null,
    storageBytesWritten: null,
    stdoutBytes: 0,
    stderrBytes: 0,
    summary: '',
    containment: null,
    sandbox: null,
    pid: null,
    supervisorPid: process.pid,
  };
}

export class ResultFile {
  constructor(readonly path: string) {}

  /**
   * First write, at launch. Throws if even that is impossible (the launch then fails with the reason);
   * the file then does not exist: a half-written first version would read as a run that is running.
   */
  init(result: RunResult): void {
    const json = JSON.stringify(result, null, 2);
    const tmp = `${this.path}.tmp`;
    try {
      writeFileSync(tmp, json.padEnd(Math.max(RESERVE, json.length), ' ') + '\n', { mode: 0o644 });
      renameSync(tmp, this.path);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
  }

  write(result: RunResult): void {
    const json = JSON.stringify(result, null, 2) + '\n';
    const tmp = `${this.path}.tmp`;
    try {
      writeFileSync(tmp, json, { mode: 0o644 });
      renameSync(tmp, this.path);
    } catch {
      this.overwrite(json);
    }
  }

  /** The same, off the event loop (a create and a rename cost a millisecond or more on a busy disk). */
  async writeAsync(result: RunResult): Promise<void> {
    const json = JSON.stringify(result, null, 2) + '\n';
    const tmp = `${this.path}.tmp`;
    try {
      await writeFile(tmp, json, { mode: 0o644 });
      await rename(tmp, this.path);
    } catch {
      this.overwrite(json);
    }
  }

  /** Disk full (or similar): overwrites the reserved space in place; JSON tolerates trailing spaces. */
  private overwrite(json: string): void {
    const fd = openSync(this.path, 'r+');
    try {
      const padded = Buffer.from(json.length < RESERVE ? json.trimEnd().padEnd(RESERVE, ' ') + '\n' : json);
      writeSync(fd, padded, 0, padded.length, 0);
      ftruncateSync(fd, padded.length);
    } finally {
      closeSync(fd);
    }
  }
}
