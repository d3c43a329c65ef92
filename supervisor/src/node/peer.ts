/**
 * Who may talk to the supervisor socket: the user's own processes, but none of a run's. Landlock
 * (ABI ≤ 7) does not stop a sandboxed process from connecting to a pathname Unix socket, so without
 * this check a run could ask the supervisor to launch another run with a broader grant.
 */
import { readFileSync } from 'node:fs';

export interface Peer {
  pid: number;
  uid: number;
}

function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/** Why `peer` may not connect, or null when it may. `jailPids`: the jails of the active runs. */
export function refusePeer(peer: Peer | null, ownUid: number, jailPids: ReadonlySet<number>): string | null {
  if (!peer) return 'cannot tell who the peer is (no SO_PEERCRED)';
  if (peer.uid !== ownUid) return `peer uid ${peer.uid} is not the supervisor's user`;
  // Every process of a run descends from its jail (orphans re-parent to the jail or die with its PID namespace).
  for (let pid = peer.pid, hops = 0; pid > 1 && hops < 4096; pid = parentOf(pid), hops++) {
    if (jailPids.has(pid))
      return `processes of a run may not use the supervisor socket (peer pid ${peer.pid})`;
  }
  return null;
}
