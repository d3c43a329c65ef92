/**
 * What one run may do and what it asks the person (Run keeps one: run.ts). Its state: the run's read
 * allow-list once its jail is started, the scan of its denials (denials.ts), the asks that wait at a
 * tool call (live-asks.ts) and the one the person allowed there. What it decides: the trees the run
 * may write (jail-args.ts), what may be asked (asks.ts, from `context`), and the run's end with its
 * asks (run-asks.ts). The ask path of a live run (worker/ask → `ask`, run/answer → `answer`, an Allow →
 * `allowed`) lives here, beside run.ts and not in it.
 */
import type { PermissionAsk, RunEvent, RunResult, TerminationReason } from '../protocol/index.ts';
import type { AskContext } from './asks.ts';
import type { EndVerdict } from './classify-end.ts';
import { DenialScanner } from './denials.ts';
import { projectReadOnly, runWritable } from './jail-args.ts';
import { DEFAULT_ASK_TIMEOUT_MS, LiveAsks, type LiveAnswer } from './live-asks.ts';
import { grantLive } from './live-grant.ts';
import { askAtEnd, denialLine } from './run-asks.ts';
import type { LaunchSpec, RunDeps } from './run-deps.ts';
import type { Prepared } from './run-prepare.ts';

/** What the permissions see of their run. */
export interface PermissionsHost {
  readonly deps: RunDeps;
  readonly spec: LaunchSpec;
  readonly result: RunResult;
  /** What the steps before the jail made (the workspace may become a worktree). */
  readonly made: Prepared;
  readonly artifactsDir: string | undefined;
  event(type: RunEvent['type'], message?: string, data?: Record<string, unknown>): void;
  /** Writes the run's record (result.json) now: an ask is on it. */
  writeResult(): void;
  /** An ask waits: the person's time is not a stalled run. */
  keepAlive(): void;
  stop(reason: TerminationReason, detail: string): void;
  /** The run's jail process, once started: an Allow is given to the live run through it (live-grant.ts). */
  jail(): { stdio: unknown } | undefined;
}

export class RunPermissions {
  /** What the run may read (its allow-list), once its jail is started. */
  readable: string[] | undefined;
  private scanner: DenialScanner;
  /** Asks that wait at a tool call (live-asks.ts). */
  private readonly live: LiveAsks;
  /** The live ask the person allowed that the live run could not gain (it ends, for a new jail). */
  private liveAllowed: PermissionAsk | undefined;

  constructor(private readonly run: PermissionsHost) {
    this.scanner = this.makeScanner();
    this.live = new LiveAsks({
      asks: () => run.result.asks ?? [],
      record: (asks) => {
        run.result.asks = asks;
        run.writeResult();
      },
      context: () => this.context(),
      timeoutMs: run.spec.flow.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS,
      event: (message, data) => run.event('log', message, data),
      keepAlive: () => run.keepAlive(),
      grant: (ask) => grantLive(run.jail(), ask),
      allowed: (ask) => this.allowed(ask),
    });
  }

  /** The trees the run may write (its workspace, scratch, artifacts, the flow's writable). */
  get writable(): string[] {
    const { spec, made } = this.run;
    return runWritable({
      flow: spec.flow,
      workspace: made.workspace,
      scratchDir: spec.scratchDir,
      artifactsDir: this.run.artifactsDir,
    });
  }

  /** The scan of the run's denials (a new one when the workspace moved: `moved`). */
  get denials(): DenialScanner {
    return this.scanner;
  }

  /** The run's workspace moved (to its worktree): its denials are read against the new one. */
  moved(): void {
    this.scanner = this.makeScanner();
  }

  /** A tool's ask before the act (worker/ask): answered at once or after the person's answer. */
  ask(kind: 'write' | 'read', p: string, tool: string | undefined): Promise<LiveAnswer> {
    return this.live.ask(kind, p, tool);
  }

  /** The person's answer to a live ask (run/answer); false when none of that id waits. */
  answer(id: string, choice: 'allow' | 'deny'): boolean {
    return this.live.answer(id, choice);
  }

  /** The run ends: asks still waiting are denied. */
  close(): void {
    this.live.close();
  }

  /** The person allowed `ask` at the tool call: the run ends, to continue in a new jail that has it. */
  private allowed(ask: PermissionAsk): void {
    this.liveAllowed = ask;
    this.run.stop(
      'sandbox-denial',
      `the person allowed ${ask.kind} ${ask.path}: the run continues in a new jail`,
    );
  }

  /** The run's end with the permissions the person may allow, from its denials (run-asks.ts). */
  verdict(verdict: EndVerdict): EndVerdict {
    const { spec, result } = this.run;
    if (this.liveAllowed) {
      // allowed at the tool call: the asks on record (the live ones) stand; the next run has the folder
      const a = this.liveAllowed;
      return {
        status: 'needs-input',
        reason: 'sandbox-denial',
        detail: `the person allowed ${a.kind} ${a.path} at the tool call; the card's next run continues in a new sandbox that has it (allow ${a.id} once, or always for flow ${spec.flow.name})`,
      };
    }
    return askAtEnd(
      verdict,
      this.scanner.found,
      result,
      spec.flow.name,
      (type, message, data) => this.run.event(type, message, data),
      () => this.context(),
    );
  }

  /** What the run may do already and what is never offered (asks.ts). */
  context(): AskContext {
    const { deps, spec, made } = this.run;
    return {
      writable: this.writable,
      hidden: deps.hiddenPaths,
      readOnly: spec.flow.sandbox?.projectWritable ? [] : projectReadOnly(spec.card, spec.flow),
      ownPorts: made.proxyGrant ? [made.proxyGrant.port] : [],
      tcpPorts: spec.flow.sandbox?.tcpPorts ?? [],
      workspace: made.workspace,
      protected: deps.protectedPaths ?? [],
      granted: [made.workspace, ...(deps.grantedPaths?.() ?? [])],
      ...(this.readable ? { readable: [...this.readable, ...this.writable] } : {}),
    };
  }

  private makeScanner(): DenialScanner {
    const { spec, made } = this.run;
    return new DenialScanner(
      made.workspace,
      this.writable,
      (d) => this.run.event('denial', ...denialLine(d)),
      !!spec.flow.sandbox?.askDeletes,
      () => (this.readable ? [...this.readable, ...this.writable] : undefined),
    );
  }
}
