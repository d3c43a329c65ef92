/**
 * A run that waits at a tool call, from a terminal (issue 28): `runboard run` says what the run asks
 * and how to answer it, and `runboard answer <run-id> <ask> allow|deny` answers it (run/answer), as the
 * board's buttons do. Without an answer the flow's `askTimeout` ends the wait as a denial.
 */
import { parseArgs } from 'node:util';
import type { StatePaths } from '@runboard/supervisor/paths';
import { RunId, type RunEvent } from '@runboard/supervisor/protocol';
import { liveAskEvent } from '../core/live-ask-events.ts';
import { SupervisorClient, SupervisorUnavailable } from '../core/supervisor-client.ts';

export const ANSWER_USAGE = `answer <run-id> <ask> allow|deny         answer a run waiting at a tool call (asks: a1, a2…; runboard run prints them)`;

/** A mistake in how answer was called. */
export class AnswerUsageError extends Error {}

/**
 * The lines to print for a run's event when it is an ask that waits for the person, else undefined
 * (read by live-ask-events.ts, as the board reads it). An ask event Runboard cannot read is said
 * as such, with where the run's own record of it is.
 */
export function liveAskText(runId: string, e: RunEvent): string | undefined {
  const ev = liveAskEvent(e);
  if (ev?.type === 'malformed')
    return (
      `runboard: run ${runId} sent ${ev.error}. If it waits for an answer, its asks are in ` +
      `runboard logs ${runId} --json (a1, a2…): runboard answer ${runId} <ask> allow|deny`
    );
  if (ev?.type !== 'waits') return undefined;
  return ev.asks
    .map((a) => {
      const what = a.path ?? (a.port !== undefined ? `port ${a.port}` : '');
      return (
        `? the run asks to ${a.kind} ${what} and waits. Allow (this run gains it, nothing around it): ` +
        `runboard answer ${runId} ${a.id} allow — or deny: runboard answer ${runId} ${a.id} deny`
      );
    })
    .join('\n');
}

export async function cmdAnswer(args: string[], paths: StatePaths): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true });
  const [runId, ask, choice] = positionals;
  if (positionals.length !== 3 || (choice !== 'allow' && choice !== 'deny'))
    throw new AnswerUsageError('answer takes a run id, an ask (a1, a2…) and allow or deny');
  if (!RunId.safeParse(runId).success)
    throw new AnswerUsageError(`"${runId}" is not a run id: run ids look like 20250101-120000-0a1b2c`);
  if (!/^a[0-9]{1,2}$/.test(ask!))
    throw new AnswerUsageError(`"${ask}" is not an ask: asks are a1, a2… as runboard run printed them`);
  // A run that waits has a supervisor: none is started to answer.
  const client = await SupervisorClient.connect(paths).catch((err: unknown) => {
    if (err instanceof SupervisorUnavailable) return undefined;
    throw err;
  });
  if (!client) {
    process.stderr.write(
      `runboard: no supervisor is running for ${paths.root}, so no run waits for an answer\n`,
    );
    return 1;
  }
  try {
    const r = await client.answerAsk({ runId: runId!, ask: ask!, choice });
    if (!r.answered) {
      process.stderr.write(
        `runboard: run ${runId} does not wait on ${ask} (answered already, timed out, or the run ended)\n`,
      );
      return 1;
    }
    process.stdout.write(`${choice === 'allow' ? 'allowed' : 'denied'}: run ${runId}, ${ask}\n`);
    return 0;
  } finally {
    client.close();
  }
}
