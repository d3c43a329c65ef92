/**
 * Live grants (issue 28): a folder the person allowed at a run's tool call, given to that same run by
 * its jail (native/src/linux/live_grants.h). The supervisor asks on the jail's control socket
 * (JAIL_CONTROL_FD, `grant <id> <read|write> <real path>`); the jail clones the folder from the
 * machine's tree, mounts it in the run's mount namespace below one of the run's grant slots (folders
 * Landlock's rules were given when the run started) and answers where the run finds it, or why it
 * could not (no mount namespace, the slots used, the folder's place in the run not one the jail made).
 * Then the run goes on with the folder; else the run ends needs-input and a new one gets it
 * (live-asks.ts, the fallback).
 */
import readline from 'node:readline';
import type { Duplex } from 'node:stream';
import { JAIL_CONTROL_FD, type PermissionAsk } from '../protocol/index.ts';

/** Where the run finds the folder now, or why the live run could not gain it. */
export type GrantAnswer = { at: string } | { refused: string };

class JailGrants {
  private readonly waiting = new Map<string, (a: GrantAnswer) => void>();
  private closed = false;

  constructor(private readonly socket: Duplex | undefined) {
    if (!socket) {
      this.closed = true;
      return;
    }
    socket.on('error', () => this.close());
    socket.on('close', () => this.close());
    readline.createInterface({ input: socket, crlfDelay: Infinity }).on('line', (line) => {
      const m = /^(ok|refused) (a[0-9]{1,2}) (.*)$/.exec(line);
      const settle = m && this.waiting.get(m[2]!);
      if (!m || !settle) return;
      this.waiting.delete(m[2]!);
      settle(m[1] === 'ok' ? { at: m[3]! } : { refused: m[3]! });
    });
  }

  grant(ask: PermissionAsk): Promise<GrantAnswer> {
    if (this.closed || !this.socket) return Promise.resolve({ refused: 'the run has no jail to gain it in' });
    if ((ask.kind !== 'read' && ask.kind !== 'write') || !ask.path)
      return Promise.resolve({ refused: 'only folders to read or write are given to a live run' });
    if (!ask.path.startsWith('/') || /[\n\0]/.test(ask.path))
      return Promise.resolve({ refused: `${JSON.stringify(ask.path)} is not a path the jail takes` });
    if (this.waiting.has(ask.id)) return Promise.resolve({ refused: `${ask.id} is being given already` });
    const socket = this.socket;
    return new Promise((resolve) => {
      this.waiting.set(ask.id, resolve);
      socket.write(`grant ${ask.id} ${ask.kind} ${ask.path}\n`);
    });
  }

  private close(): void {
    this.closed = true;
    for (const settle of this.waiting.values()) settle({ refused: 'the jail is gone' });
    this.waiting.clear();
  }
}

const byJail = new WeakMap<object, JailGrants>();

/** Asks the run's jail (`child`, its process) to give the run the folder of `ask`. */
export function grantLive(child: { stdio: unknown } | undefined, ask: PermissionAsk): Promise<GrantAnswer> {
  if (!child) return Promise.resolve({ refused: 'the run has no jail yet' });
  let grants = byJail.get(child);
  if (!grants) {
    grants = new JailGrants((child.stdio as (Duplex | null | undefined)[])[JAIL_CONTROL_FD] ?? undefined);
    byJail.set(child, grants);
  }
  return grants.grant(ask);
}
