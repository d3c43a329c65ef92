/**
 * The person's answers to a card's permission asks (docs/security-model.md, Permission asks). What an
 * ask would allow is read from the supervisor's record of the run (`run/get`), never from the card, the
 * page or the request: the request names only the run, the ask's id and the choice.
 *
 *   allow once   → the card's next run carries `allow: [{runId, ask}]`; the supervisor looks the ask up
 *                  in its own record again and extends that run's sandbox by exactly that
 *   allow always → config.yaml: the flow's sandbox.writable (+ a grant of the folder), tcpPorts or
 *                  deletable gets the folder or port, where the person sees and can remove it
 *   deny         → the card goes to Failed, saying what was denied
 *
 * A run may ask several things; the card is queued again once each is allowed (a deny ends it at once).
 *
 * An ask of a live run that waits at its tool call (live-ask-waits.ts) is answered through the
 * supervisor (run/answer): deny → the tool is told no and the run goes on; allow (once or always, the
 * latter also written as above) → the supervisor lets the run have it. Where the supervisor cannot
 * widen the live sandbox, the run ends needs-input with the ask allowed: the card is then queued at once
 * with that allow (`runEnded`), as if the person had answered it after the run.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { GrantError } from '@runboard/supervisor/grants';
import type { PermissionAsk, RunResult } from '@runboard/supervisor/protocol';
import { describeAsk } from '../shared/asks.ts';
import type { AskChoice } from '../shared/board-types.ts';
import { checkRunId, Invalid, MoveRefused } from './board-errors.ts';
import { cardTransition } from './card-lifecycle.ts';
import type { BoardStore } from './board-store.ts';
import type { CardStatus } from './project.ts';
import { addYamlListItem } from './config-edit.ts';
import type { GrantStore } from './grant-store.ts';
import type { LiveAskWaits, RunWaits } from './live-ask-waits.ts';
import type { Scheduler } from './scheduler.ts';
import type { SupervisorClient } from './supervisor-client.ts';

export interface AskAnswerResult {
  /**
   * queued: every ask was allowed, the card runs again; failed: denied; waiting: more asks to answer;
   * running: a live run's ask was answered and the run goes on.
   */
  state: 'queued' | 'failed' | 'waiting' | 'running';
}

export class PermissionAsks {
  /** Allowed asks of each card's last run, until each ask has an answer (lost with the host: asked again). */
  private readonly answered = new Map<string, { runId: string; choices: Map<string, AskChoice> }>();

  constructor(
    private readonly store: BoardStore,
    private readonly scheduler: Scheduler,
    private readonly client: SupervisorClient,
    private readonly grants: GrantStore,
    private readonly topRank: (status: 'failed' | 'queued') => number,
    private readonly live?: LiveAskWaits,
  ) {}

  /** What the card's live runs (its run, or its attempts') wait for at a tool call, oldest first. */
  liveWaiting(cardId: string): RunWaits[] {
    return this.live?.waitingRuns(cardId, (runId) => this.scheduler.liveRunsOf(cardId).includes(runId)) ?? [];
  }

  /** The asks of the card's last run still waiting for an answer (empty: none). */
  open(cardId: string, runId: string, asks: readonly PermissionAsk[]): PermissionAsk[] {
    const a = this.answered.get(cardId);
    return a?.runId === runId ? asks.filter((x) => !a.choices.has(x.id)) : [...asks];
  }

  async answer(cardId: string, runId: string, askId: string, choice: AskChoice): Promise<AskAnswerResult> {
    checkRunId(runId);
    const card = this.store.get(cardId);
    if (!card) throw new Invalid(`no card ${cardId}`);
    if (this.scheduler.isActive(cardId)) {
      // the card's run, or one of its attempts' runs, waits on this ask
      if (
        this.scheduler.liveRunsOf(cardId).includes(runId) &&
        this.live?.waiting(cardId, runId).some((a) => a.id === askId)
      )
        return this.answerLive(cardId, runId, askId, choice);
      throw new MoveRefused('the card is running: its ask was answered already');
    }
    if (card.front.status !== 'needs-input' || card.front.lastRun !== runId)
      throw new MoveRefused(
        `the card does not wait for an answer to run ${runId} (it is ${card.front.status ?? 'backlog'}, its last run ${card.front.lastRun ?? 'none'}): reload the board`,
      );
    // the supervisor's record is what the ask is; the card and the request only point at it
    const { run } = await this.client.getRun(runId);
    if (run.card.path !== card.file) throw new Invalid(`run ${runId} is not a run of this card`);
    const ask = run.asks?.find((x) => x.id === askId);
    if (!ask) throw new Invalid(`run ${runId} asked nothing as ${askId}`);

    if (choice === 'deny') {
      this.answered.delete(cardId);
      this.store.update(cardId, {
        status: cardTransition('ask-denied', card.front.status, 'failed'),
        rank: this.topRank('failed'),
        needs: undefined,
        lastError: `you denied the run: ${describeAsk(ask)} (the sandbox had refused it; the run printed: ${ask.evidence.slice(0, 300)})`,
      });
      this.scheduler.kick();
      return { state: 'failed' };
    }
    if (choice === 'always') this.allowAlways(card.front.flow, card.workspace, ask);

    let entry = this.answered.get(cardId);
    if (entry?.runId !== runId) this.answered.set(cardId, (entry = { runId, choices: new Map() }));
    entry.choices.set(askId, choice);
    if ((run.asks ?? []).some((x) => !entry.choices.has(x.id))) return { state: 'waiting' };

    this.requeue(cardId, card.front.status, entry);
    return { state: 'queued' };
  }

  /** The answer to an ask its live run waits on (the supervisor's record says what it is). */
  private async answerLive(
    cardId: string,
    runId: string,
    askId: string,
    choice: AskChoice,
  ): Promise<AskAnswerResult> {
    const card = this.store.get(cardId)!;
    const { run } = await this.client.getRun(runId);
    if (run.card.path !== card.file) throw new Invalid(`run ${runId} is not a run of this card`);
    const ask = run.asks?.find((x) => x.id === askId);
    if (!ask) throw new Invalid(`run ${runId} asked nothing as ${askId}`);
    if (choice === 'always') this.allowAlways(card.front.flow, card.workspace, ask);
    try {
      await this.client.answerAsk({ runId, ask: askId, choice: choice === 'deny' ? 'deny' : 'allow' });
    } catch (err) {
      throw new MoveRefused(
        `the run no longer waits for this answer (${(err as Error).message}): it timed out or the run ended; reload the board`,
      );
    }
    this.live?.answered(cardId, runId, askId);
    let entry = this.answered.get(cardId);
    if (entry?.runId !== runId) this.answered.set(cardId, (entry = { runId, choices: new Map() }));
    entry.choices.set(askId, choice);
    return { state: 'running' };
  }

  /**
   * A run ended. When the person allowed its live asks but the supervisor could not widen the live
   * sandbox, it ends needs-input with those asks (and no other) on record: the card runs again with
   * them allowed, without asking the person twice.
   */
  runEnded(cardId: string, result: RunResult): void {
    const entry = this.answered.get(cardId);
    const card = this.store.get(cardId);
    if (entry?.runId !== result.runId || !card || this.scheduler.isActive(cardId)) return;
    if (card.front.status !== 'needs-input' || card.front.lastRun !== result.runId) return;
    const asks = result.asks ?? [];
    if (asks.some((x) => !entry.choices.has(x.id))) return; // more to answer: the card shows them
    if (![...entry.choices.values()].some((c) => c !== 'deny')) return;
    this.requeue(cardId, card.front.status, entry);
  }

  /** Every ask of the card's run has an answer and none denied it: it runs again with them. */
  private requeue(
    cardId: string,
    from: CardStatus | undefined,
    entry: { runId: string; choices: Map<string, AskChoice> },
  ): void {
    this.answered.delete(cardId);
    this.scheduler.allowNextRun(
      cardId,
      [...entry.choices].filter(([, c]) => c === 'once').map(([ask]) => ({ runId: entry.runId, ask })),
    );
    this.store.update(cardId, {
      status: cardTransition('asks-allowed', from, 'queued'),
      rank: this.topRank('queued'),
      needs: undefined,
      failures: undefined,
      nextTryAt: undefined,
      lastError: undefined,
    });
    this.scheduler.kick();
  }

  /**
   * Writes the ask into the flow's sandbox in config.yaml (and grants the folder, as every writable
   * tree must be granted): visible there, and removed there by the person.
   */
  private allowAlways(flow: string, workspace: string, ask: PermissionAsk): void {
    if (!Object.hasOwn(this.store.config.flows, flow))
      throw new Invalid(`no flow ${flow} in config.yaml: allow it once, or add the flow first`);
    const at = (key: string): string[] => ['flows', flow, 'sandbox', key];
    if (ask.kind === 'connect') {
      this.store.updateConfig((t) => addYamlListItem(t, at('tcpPorts'), ask.port!));
      return;
    }
    if (ask.kind === 'read') {
      // read only: no grant (a grant is a writable tree's); the supervisor refuses its own state again
      this.store.updateConfig((t) => addYamlListItem(t, at('read'), ask.path!));
      return;
    }
    if (ask.kind === 'delete') {
      let ws: string;
      try {
        ws = realpathSync(workspace);
      } catch {
        throw new Invalid(`the card's workspace ${workspace} is gone`);
      }
      const rel = path.relative(ws, ask.path!);
      if (rel.startsWith('..') || path.isAbsolute(rel))
        throw new Invalid(`${ask.path} is not inside the card's workspace ${ws}`);
      this.store.updateConfig((t) => addYamlListItem(t, at('deletable'), rel || '.'));
      return;
    }
    try {
      this.grants.grant(ask.path!);
    } catch (err) {
      if (err instanceof GrantError) throw new Invalid(err.message);
      throw err;
    }
    this.store.updateConfig((t) => addYamlListItem(t, at('writable'), ask.path!));
  }
}
