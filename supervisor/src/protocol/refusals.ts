/**
 * The `data` of refusals a client acts on (not just shows): the supervisor sends them with the error,
 * the host reads them with these schemas.
 */
import * as z from 'zod/mini';
import { RunId } from './schemas.ts';

/**
 * `run/launch` refused with InvalidState: another run drives the real display (one computer-use run
 * at a time may). The board keeps the card queued until that run ends.
 */
export const DisplayBusy = z.object({ reason: z.literal('display-busy'), runId: RunId });
export type DisplayBusy = z.infer<typeof DisplayBusy>;
