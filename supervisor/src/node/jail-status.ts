/**
 * Reads the jail's status channel (JSON lines on its status fd, written by native/src/linux/jail.cc):
 * the sandbox it set up, the worker's pid, its errors and, last, how the worker exited. Each line is
 * checked against the protocol's JailStatusLine.
 */
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { JailStatusLine } from '../protocol/index.ts';

export type JailStatus = JailStatusLine;

/**
 * Calls `onStatus` for every valid line; `onInvalid` for one that is not JSON or does not fit the
 * protocol (a jail and a supervisor of different builds), with what was wrong.
 */
export function readJailStatus(
  stream: Readable,
  onStatus: (s: JailStatus) => void,
  onInvalid: (why: string) => void,
): void {
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  rl.on('line', (line) => {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      onInvalid(`the jail sent a status line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    const parsed = JailStatusLine.safeParse(json);
    if (parsed.success) onStatus(parsed.data);
    else
      onInvalid(
        `the jail sent a status line that does not fit the protocol (${parsed.error.issues.map((i) => `${i.path.join('.') || 'line'}: ${i.message}`).join('; ')}): ${line.slice(0, 200)}`,
      );
  });
  stream.on('error', () => undefined);
}
