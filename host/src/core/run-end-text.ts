/** What a failed run says on its card (`lastError`): its status and end, and what it printed last. */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import type { RunResult } from '@runboard/supervisor/protocol';

/** A failed run's lastError: its status and end, and for a command its last stderr line (`sh: 1: frobnicate: not found`). */
export function failureText(result: RunResult): string {
  const detail = result.termination ? `${result.termination.reason}: ${result.termination.detail}` : '';
  const said = result.exitCode ? lastStderrLine(result.logDir) : undefined;
  return `${result.status} (${detail})${said ? `: ${said}` : ''}`;
}

/** The last non-empty line of a run's stderr.log (its last 4 KiB read), or undefined. */
export function lastStderrLine(logDir: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path.join(logDir, 'stderr.log'), constants.O_RDONLY | constants.O_NONBLOCK);
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(4096, size));
    readSync(fd, buf, 0, buf.length, size - buf.length);
    const line = buf
      .toString('utf8')
      .split('\n')
      .map((l) => stripVTControlCharacters(l).trim())
      .filter(Boolean)
      .at(-1);
    return line?.slice(0, 300);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
