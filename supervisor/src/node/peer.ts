/**
 * Who may talk to the supervisor socket: the user's own processes, but none of a run's. Landlock
 * (ABI ≤ 7) does not stop a sandboxed process from connecting to a pathname Unix socket, so without
 * this check a run could ask the supervisor to launch another run with a broader grant.
 *
 * The peer is identified by what it cannot make disappear: a pidfd of the connecting process
 * (SO_PEERPIDFD), its user namespace (every run's lies below the supervisor's) and, for runs without
 * one (the subreaper fallback), its ancestors read while the pidfd shows it alive. A peer that cannot
 * be identified, e.g. because it connected and exited and handed the socket to another process, is
 * refused.
 */
import type { PeerIdentity } from '@runboard/native';

/** The peer, or why it cannot be identified. */
export type PeerLookup = { peer: PeerIdentity } | { unknown: string };

/** Why `lookup`'s peer may not connect, or null when it may. `jailPids`: the jails of the active runs. */
export function refusePeer(lookup: PeerLookup, ownUid: number, jailPids: ReadonlySet<number>): string | null {
  if ('unknown' in lookup) return `cannot tell who the peer is (${lookup.unknown})`;
  const { peer } = lookup;
  if (peer.uid !== ownUid) return `peer uid ${peer.uid} is not the supervisor's user`;
  // Runs get a user namespace of their own below the supervisor's; the host shares the supervisor's
  // (or, when the supervisor was started inside a namespace of its own, is above it).
  if (peer.userNsBelowOwn)
    return `peer pid ${peer.pid} is in another user namespace (processes of a run may not use the supervisor socket)`;
  // Without namespaces every process of a run descends from its jail (orphans re-parent to the jail).
  if (jailPids.has(peer.pid) || peer.ancestors.some((pid) => jailPids.has(pid)))
    return `processes of a run may not use the supervisor socket (peer pid ${peer.pid})`;
  return null;
}
