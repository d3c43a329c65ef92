/**
 * The supervisor socket: one JSON-RPC connection per host (or CLI) client. Every request is validated
 * by its schema; bad frames get JSON-RPC errors; a client that goes away mid-request harms no one.
 */
import type net from 'node:net';
import type { Logger } from 'pino';
import {
  AttachRun,
  AnswerAsk,
  CancelRun,
  connect,
  DetachRun,
  ErrorCodes,
  DiscardWorktree,
  GetRun,
  handle,
  KeepWorktree,
  ListProviders,
  CheckProviderKey,
  LaunchRun,
  ListRuns,
  Offsets,
  SetParamSecret,
  SetProviderKey,
  Shutdown,
  SetBackend,
  SupervisorStatus,
  ResponseError,
  type MessageConnection,
} from '../protocol/index.ts';
import { streamRun } from './attach.ts';
import { setBackend } from './fleet/backend.ts';
import type { LogSinkState } from './log-sink.ts';
import type { RunRegistry } from './registry.ts';
import { serveSchedules, type ScheduleBook } from './schedules.ts';
import { serveProjects, type ProjectBook } from './projects.ts';

/** Provider keys, kept by the supervisor (secrets.ts) so that no run and no host ever holds one. */
export interface ProviderKeys {
  list(): { name: string; baseUrl: string; hasKey: boolean }[];
  set(provider: string, key: string | null): boolean;
  /** Asks the provider whether it accepts the stored key. */
  check(provider: string): Promise<{ ok: boolean; status?: number; message: string }>;
  /** Keeps a card's sensitive parameter value (secrets.ts); its reference, or null when only removed. */
  setParam?(card: string, param: string, value: string | null, replaces?: string): string | null;
}

export interface ServerInfo {
  version: string;
  startedAt: string;
  stateRoot: string;
  landlockAbi: number;
  landlockReason: string;
  /** The state of its own log (log-sink.ts). */
  log?: () => LogSinkState;
}

export class SupervisorServer {
  private readonly connections = new Set<net.Socket>();

  constructor(
    private readonly registry: RunRegistry,
    private readonly info: ServerInfo,
    private readonly log: Logger,
    private readonly requestShutdown: (cancelRuns: boolean) => void,
    /** Why this client may not connect, or null (see peer.ts). */
    private readonly refuse: (socket: net.Socket) => string | null,
    private readonly keys?: ProviderKeys,
    private readonly schedules?: ScheduleBook,
    private readonly projects?: ProjectBook,
  ) {}

  accept(socket: net.Socket): void {
    socket.on('error', (err) => this.log.debug({ err: err.message }, 'client socket error'));
    const refusal = this.refuse(socket);
    if (refusal) {
      this.log.warn({ refusal }, 'refused a client');
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: null,
        error: { code: ErrorCodes.Unauthorized, message: `connection refused: ${refusal}` },
      });
      socket.end(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    this.connections.add(socket);
    const conn = connect(socket, socket, {
      onProtocolError: (e) =>
        this.log.warn({ code: e.code, message: e.message }, 'protocol error from client'),
      close: () => socket.end(),
    });
    const attachments = new Map<string, AbortController>();
    conn.onClose(() => {
      for (const a of attachments.values()) a.abort();
      this.connections.delete(socket);
    });
    conn.onError(([err]) => this.log.debug({ err: err.message }, 'connection error'));
    this.register(conn, attachments);
    conn.listen();
  }

  closeAll(): void {
    for (const s of this.connections) s.end();
  }

  private register(conn: MessageConnection, attachments: Map<string, AbortController>): void {
    const reg = this.registry;
    handle(conn, LaunchRun, async (p) => {
      await reg.fleet?.admit(p); // a card no host of the fleet can run: refused up front
      return reg.launch(p);
    });
    handle(conn, CancelRun, (p) => reg.cancel(p.runId));
    handle(conn, AnswerAsk, (p) => reg.answerAsk(p.runId, p.ask, p.choice));
    handle(conn, ListRuns, (p) => ({ runs: reg.list(p.activeOnly ?? false, p.limit ?? 100, p.cardPath) }));
    handle(conn, GetRun, (p) => {
      const run = reg.get(p.runId)?.result ?? reg.record(p.runId);
      if (!run) throw new ResponseError(ErrorCodes.RunNotFound, `no run ${p.runId}`);
      return { run };
    });
    handle(conn, AttachRun, async (p) => {
      const src = await reg.source(p.runId);
      attachments.get(p.runId)?.abort();
      const ac = new AbortController();
      attachments.set(p.runId, ac);
      const run = reg.get(p.runId);
      const snapshot = run ? run.result : await src.result();
      // Streaming starts after the response is on its way, so the client knows the run first.
      setImmediate(() => {
        streamRun(
          conn,
          src,
          Offsets.parse(p.from ?? {}),
          ac.signal,
          p.files ? 'files' : p.bytes ? 'bytes' : 'json',
        )
          .catch((err: Error) =>
            this.log.debug({ runId: p.runId, err: err.message }, 'attach stream ended with error'),
          )
          .finally(() => {
            if (attachments.get(p.runId) === ac) attachments.delete(p.runId);
          });
      });
      return { run: snapshot };
    });
    handle(conn, DetachRun, (p) => {
      attachments.get(p.runId)?.abort();
      attachments.delete(p.runId);
      return {};
    });
    // Worktrees and provider keys.
    handle(conn, KeepWorktree, async (p) => ({ run: await reg.settleWorktree(p.runId, 'keep') }));
    handle(conn, DiscardWorktree, async (p) => ({ run: await reg.settleWorktree(p.runId, 'discard') }));
    handle(conn, SetProviderKey, (p) => ({
      provider: p.provider,
      hasKey: this.keys?.set(p.provider, p.key) ?? false,
    }));
    handle(conn, SetParamSecret, (p) => {
      if (!this.keys?.setParam) throw new Error('this supervisor keeps no secrets');
      return { ref: this.keys.setParam(p.card, p.param, p.value, p.replaces) };
    });
    handle(conn, ListProviders, () => ({ providers: this.keys?.list() ?? [] }));
    handle(conn, CheckProviderKey, async (p) => ({
      provider: p.provider,
      ...((await this.keys?.check(p.provider)) ?? { ok: false, message: 'this supervisor keeps no keys' }),
    }));
    if (this.schedules) serveSchedules(conn, this.schedules);
    if (this.projects) serveProjects(conn, this.projects);
    handle(conn, SetBackend, (p) => setBackend(reg, p, reg.paths, this.log));
    handle(conn, SupervisorStatus, () => ({
      pid: process.pid,
      version: this.info.version,
      startedAt: this.info.startedAt,
      stateRoot: this.info.stateRoot,
      activeRuns: reg.activeCount,
      landlockAbi: this.info.landlockAbi,
      landlockReason: this.info.landlockReason,
      ...(this.info.log ? { log: logState(this.info.log()) } : {}),
    }));
    handle(conn, Shutdown, (p) => {
      const active = reg.activeCount;
      if (active > 0 && !p.cancelRuns) return { stopping: false, activeRuns: active };
      setImmediate(() => this.requestShutdown(p.cancelRuns ?? false));
      return { stopping: true, activeRuns: active };
    });
  }
}

const logState = (s: LogSinkState): { buffered: number; dropped: number; failing?: string } => ({
  buffered: s.buffered,
  dropped: s.dropped,
  ...(s.failing ? { failing: s.failing } : {}),
});
