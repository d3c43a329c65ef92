/** Permission asks in words, for the card (host core) and the board (renderer). */
import type { PermissionAsk } from '@runboard/supervisor/protocol/data';

/** What allowing the ask would change, in a few words. */
export function describeAsk(a: Pick<PermissionAsk, 'kind' | 'path' | 'port'>): string {
  switch (a.kind) {
    case 'write':
      return `write in ${a.path}`;
    case 'read':
      return `read ${a.path}`;
    case 'connect':
      return `connect to TCP port ${a.port}`;
    case 'delete':
      return `delete in ${a.path}`;
  }
}

const NEEDS = 'your permission to ';

/** The card's `needs:` while it waits for the person's answer to its asks (shown on the card). */
export function askNeeds(asks: readonly Pick<PermissionAsk, 'kind' | 'path' | 'port'>[]): string {
  return NEEDS + asks.map(describeAsk).join('; ');
}

/** Whether a card's `needs:` is an ask's (cleared once the asks are answered or the card runs again). */
export const isAskNeeds = (needs: string | undefined): boolean => !!needs?.startsWith(NEEDS);
