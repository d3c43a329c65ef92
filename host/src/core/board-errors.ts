/**
 * What a board intent or view can refuse, by kind; the shells turn them into statuses (HTTP 400, 404,
 * 409) or IPC errors (host/src/core/board-dispatch.ts). The message says what was wrong.
 */

import { RunId } from '@runboard/supervisor/protocol';

/** The request itself is wrong (a parameter, an unknown flow name, a malformed run id). */
export class Invalid extends Error {}
/** What the request names does not exist (a card, a run, a screenshot). */
export class NotFound extends Error {}
/** The request is fine but the board's state refuses it now (a running card is locked). */
export class MoveRefused extends Error {}

export function checkRunId(runId: string): void {
  if (!RunId.safeParse(runId).success)
    throw new Invalid(`not a run id: ${runId} (run ids look like 20250101-120000-0a1b2c)`);
}
