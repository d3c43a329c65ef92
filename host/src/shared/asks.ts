/** Permission asks in words, for the card (host core) and the board (renderer). */
import type { PermissionAsk } from '@runboard/supervisor/protocol/data';

/** What allowing the ask would change, in a few words. */
export function describeAsk(a: Pick<PermissionAsk, 'kind' | 'path' | 'port'>): string {
  switch (a.kind) {
    case 'write':
      return `write in ${a.path}`;
    case 'connect':
      return `connect to TCP port ${a.port}`;
    case 'delete':
      return `delete in ${a.path}`;
  }
}
