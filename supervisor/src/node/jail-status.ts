/**
 * Reads the jail's status channel (JSON lines on fd 4, written by native/src/linux/jail.cc): the
 * sandbox it set up, the worker's pid, its errors and, last, how the worker exited.
 */
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import type { JailExit } from './classify-end.ts';

export type JailStatus =
  | { event: 'started'; pid: number; containment: string; namespaceError?: string }
  | { event: 'sandbox'; landlockAbi: number; enforced: boolean; fs?: 'landlock' | 'mounts' | 'none' }
  | { event: 'error'; message: string }
  | ({ event: 'exit' } & JailExit);

/** Calls `onStatus` for every line the jail writes; lines that are not JSON are skipped. */
export function readJailStatus(stream: Readable, onStatus: (s: JailStatus) => void): void {
  const rl = readline.createInterface({ input: stream, crlfDelay: Infinity });
  rl.on('line', (line) => {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    switch (msg.event) {
      case 'started':
        onStatus({ ...msg, event: 'started', pid: Number(msg.pid), containment: String(msg.containment) });
        break;
      case 'sandbox':
        onStatus({
          ...msg,
          event: 'sandbox',
          landlockAbi: Number(msg.landlockAbi),
          enforced: Boolean(msg.enforced),
          ...(msg.fs === 'landlock' || msg.fs === 'mounts' || msg.fs === 'none' ? { fs: msg.fs } : {}),
        } as JailStatus);
        break;
      case 'error':
        onStatus({ event: 'error', message: String(msg.message) });
        break;
      case 'exit':
        onStatus(msg as unknown as JailStatus);
        break;
    }
  });
  stream.on('error', () => undefined);
}
