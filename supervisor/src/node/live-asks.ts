/**
 * Asks that wait (issue 28): a tool of a live run asks before the act for a path outside its sandbox
 * (worker/ask, from an agent CLI's permission hook through the worker's ask socket), and the run waits
 * at that tool call for the person's answer (run/answer) or the flow's `askTimeoutMs`.
 *
 * - What may be asked is decided as for refusals after the act (asks.ts `liveAsk`): the same folder,
 *   the same never-asked list; a never-offered path is denied at once, without an ask.
 * - Deny, or no answer within the bound: the tool gets a denial in words and the run goes on.
 * - Allow: the same run gains the folder (live-grant.ts: its jail mounts it into the run's mount
 *   namespace below a grant slot Landlock's rules were given at the start), the tool gets "allowed"
 *   and the run goes on. Where that cannot be (no mount namespace of the run's own, its slots used, the
 *   folder's place in the run not one the jail made), the fallback: the tool is told, the run is
 *   stopped, and it ends `needs-input` with the ask recorded as allowed by the person: the card's next
 *   run (the launch's `allow`, as for asks after the act) continues in a new jail that has the folder
 *   (claude/codex resume their session: agent-session.ts). docs/security-model.md "Asks that wait".
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { PermissionAsk } from '../protocol/index.ts';
import { liveAsk, MAX_ASKS, type AskContext } from './asks.ts';
import type { GrantAnswer } from './live-grant.ts';

export const DEFAULT_ASK_TIMEOUT_MS = 10 * 60_000;

export type LiveAnswer = { decision: 'allow' | 'deny'; message: string; at?: string };

const within = (p: string, tree: string): boolean => p === tree || p.startsWith(tree + '/');

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

interface Pending {
  ask: PermissionAsk;
  settle: (choice: 'allow' | 'deny' | 'timeout') => void;
}

export interface LiveAskHost {
  /** The run's asks so far (result.asks): the new one is appended and the record written. */
  asks(): PermissionAsk[];
  record(asks: PermissionAsk[]): void;
  context(): AskContext;
  timeoutMs: number;
  event(message: string, data: Record<string, unknown>): void;
  /** Called while an ask waits (the person's time is not a stalled run). */
  keepAlive(): void;
  /** The person allowed `ask`: the run ends needs-input to continue in a new jail. */
  allowed(ask: PermissionAsk): void;
  /** Gives the run the folder of an allowed ask while it lives (live-grant.ts `grantLive`). */
  grant?(ask: PermissionAsk): Promise<GrantAnswer>;
}

export class LiveAsks {
  private readonly pending = new Map<string, Pending>();
  /** Folders the run gained while it lives (a later ask inside one is allowed at once). */
  private readonly granted: { kind: 'read' | 'write'; path: string }[] = [];

  constructor(private readonly host: LiveAskHost) {}

  get waiting(): number {
    return this.pending.size;
  }

  /** A tool's ask: answered at once (never offered, or allowed already) or after the person's answer. */
  async ask(kind: 'write' | 'read', p: string, tool: string | undefined): Promise<LiveAnswer> {
    const target = path.isAbsolute(p) ? real(p) : p;
    const has = this.granted.find((g) => within(target, g.path) && (kind === 'read' || g.kind === 'write'));
    if (has)
      return {
        decision: 'allow',
        message: `Runboard: ${target} is in ${has.path}, which the person allowed`,
      };
    const d = liveAsk(kind, p, this.host.context());
    if ('allowed' in d) return { decision: 'allow', message: `Runboard: ${d.allowed}` };
    if ('refused' in d) {
      this.host.event(`not asked: ${d.refused}`, { kind: 'ask-refused', live: true, path: p, level: 'warn' });
      return { decision: 'deny', message: `Runboard refused this without asking the person: ${d.refused}.` };
    }
    const asks = this.host.asks();
    const same = asks.find((a) => a.kind === d.ask.kind && a.path === d.ask.path);
    if (same && this.pending.has(same.id))
      return {
        decision: 'deny',
        message: `Runboard: ${kind} ${d.ask.path} is being asked already; wait for that answer.`,
      };
    if (asks.length >= MAX_ASKS)
      return {
        decision: 'deny',
        message: `Runboard: a run asks at most ${MAX_ASKS} permissions; this one is denied.`,
      };
    const ask: PermissionAsk = {
      id: `a${asks.length + 1}`,
      ...d.ask,
      evidence: `the run asked before the act: ${tool ? `${tool} ` : ''}${kind} ${p}`
        .replace(/\p{Cc}/gu, ' ')
        .slice(0, 300),
      source: tool ? 'agent' : 'sandbox',
    };
    this.host.record([...asks, ask]);
    return this.wait(ask);
  }

  private wait(ask: PermissionAsk): Promise<LiveAnswer> {
    const what = `${ask.kind} ${ask.path}`;
    return new Promise<LiveAnswer>((resolve) => {
      const timers: NodeJS.Timeout[] = [];
      const done = (choice: 'allow' | 'deny' | 'timeout'): void => {
        for (const t of timers) clearTimeout(t);
        this.pending.delete(ask.id);
        this.host.event(`the person's answer to ${ask.id} (${what}): ${choice}`, {
          kind: 'ask-answer',
          ask: ask.id,
          choice,
        });
        if (choice === 'allow') void this.allow(ask).then(resolve);
        else
          resolve({
            decision: 'deny',
            message:
              choice === 'deny'
                ? `Runboard: the person denied ${what}. Go on without it.`
                : `Runboard: no answer from the person within ${Math.round(this.host.timeoutMs / 1000)} s: ${what} is denied. Go on without it.`,
          });
      };
      timers.push(
        setTimeout(() => done('timeout'), this.host.timeoutMs),
        setInterval(() => this.host.keepAlive(), 1000),
      );
      this.pending.set(ask.id, { ask, settle: done });
      this.host.event(`the run waits for the person: ${what}`, { kind: 'ask', live: true, asks: [ask] });
    });
  }

  /** The person allowed `ask`: the live run gains the folder, or (the fallback) ends to continue in a new one. */
  private async allow(ask: PermissionAsk): Promise<LiveAnswer> {
    const what = `${ask.kind} ${ask.path}`;
    const given: GrantAnswer =
      this.host.grant && (ask.kind === 'read' || ask.kind === 'write') && ask.path
        ? await this.host.grant(ask).catch((err: unknown) => ({ refused: (err as Error).message }))
        : { refused: 'this run cannot gain a folder while it runs' };
    if ('at' in given && (ask.kind === 'read' || ask.kind === 'write') && ask.path) {
      this.granted.push({ kind: ask.kind, path: ask.path });
      const link = given.at !== ask.path;
      this.host.event(
        `the run has ${what} now${link ? ` (${ask.path} is a link to ${given.at} in the run)` : ''}`,
        { kind: 'ask-granted', ask: ask.id, path: ask.path, at: given.at },
      );
      return {
        decision: 'allow',
        message: `Runboard: the person allowed ${what}; this run has it now: go on.`,
        ...(link ? { at: given.at } : {}),
      };
    }
    const why = 'refused' in given ? given.refused : 'unknown';
    this.host.event(`${what} cannot be given to this run while it lives: ${why}`, {
      kind: 'ask-not-granted',
      ask: ask.id,
      why,
      level: 'warn',
    });
    this.host.allowed(ask);
    return {
      decision: 'deny',
      message: `Runboard: the person allowed ${what}. This sandbox cannot gain it while it runs (${why}): the run stops now and continues in a new one that has it. Stop here.`,
    };
  }

  /** The person's answer; false when no ask of that id waits. */
  answer(id: string, choice: 'allow' | 'deny'): boolean {
    const p = this.pending.get(id);
    if (!p) return false;
    p.settle(choice);
    return true;
  }

  /** The run ends: every waiting ask is denied. */
  close(): void {
    for (const p of [...this.pending.values()]) p.settle('deny');
  }
}
