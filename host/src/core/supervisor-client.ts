/**
 * The host's side of the supervisor socket: typed calls, auto-start of the supervisor, and attach
 * with exact resume (the client tracks the next event seq and byte offsets it has seen, so a detach +
 * re-attach, or a host restart that kept them, loses and repeats nothing), and for the board a client
 * that outlives its supervisor: a lost connection is made again (a new supervisor started) and the
 * attached runs are attached again.
 */
import { EventEmitter } from 'node:events';
import type net from 'node:net';
import path from 'node:path';
import {
  AttachRun,
  call,
  AnswerAsk,
  CancelRun,
  DiscardWorktree,
  GetRun,
  KeepWorktree,
  ListProviders,
  CheckProviderKey,
  SetParamSecret,
  SetProviderKey,
  DetachRun,
  DidEnd,
  DidEvent,
  DidOutput,
  DidOutputBytes,
  DidOutputSizes,
  LaunchRun,
  ListRuns,
  on,
  Shutdown,
  SetBackend,
  SupervisorStatus,
  type MessageConnection,
  type Offsets,
  type OutputStream,
  type RunEvent,
  type RunResult,
} from '@runboard/supervisor/protocol';
import type { StatePaths } from '@runboard/supervisor/paths';
import type { z } from 'zod';
import { FileOutputReader } from './output-reader.ts';
import {
  openConnection,
  socketAppearsOr,
  SupervisorExited,
  SupervisorUnavailable,
  type ConnectOptions,
} from './supervisor-start.ts';
import { utf8Boundary } from '@runboard/supervisor/run-output';

export { distDir, SupervisorUnavailable, type ConnectOptions } from './supervisor-start.ts';

/** A promise with its resolve at hand. */
function settles<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export interface AttachHandlers {
  onEvent?(event: RunEvent): void;
  /** Output decoded as UTF-8 (invalid bytes become U+FFFD); not called when `onBytes` is given. */
  onOutput?(stream: OutputStream, data: string, offset: number, length: number): void;
  /** Output as it is on disk: the bytes [offset, offset + bytes.length) of the stream. */
  onBytes?(stream: OutputStream, bytes: Buffer, offset: number): void;
  onEnd?(result: RunResult): void;
  /** A reconnecting client could not attach again after the connection was lost (e.g. no such run). */
  onLost?(err: Error): void;
}

interface Attachment {
  handlers: AttachHandlers;
  offsets: Offsets;
  /** The output is read from the run's files here (sizes from the supervisor); false: bytes frames. */
  files: boolean;
  reader?: FileOutputReader;
}

/** The supervisor's connection was lost (it died, or was stopped) while a request waited for its answer. */
export class SupervisorLost extends Error {}

export interface SupervisorClientEvents {
  /** The connection was lost; a new one is being made (reconnecting clients only). */
  lost: [reason: string];
  /** Connected again; attached runs are being attached again. */
  reconnected: [];
}

/** Between attempts to bring a lost supervisor back: growing, at most this long. */
const RECONNECT_MAX_DELAY_MS = 30_000;
/** How long a call made while the supervisor is being brought back waits for it. */
const RECONNECT_WAIT_MS = 20_000;

export class SupervisorClient extends EventEmitter<SupervisorClientEvents> {
  private readonly attachments = new Map<string, Attachment>();
  private closed = false;
  private socket: net.Socket;
  private current: MessageConnection;
  /** While a lost connection is being replaced: resolves with the new one (or rejects when closed). */
  private reconnecting: Promise<MessageConnection> | undefined;
  /**
   * While reconnecting: why the last try failed when the supervisor it started exited before it
   * served (a missing bundle, a crash): calls then fail at once saying so instead of waiting
   * RECONNECT_WAIT_MS for a supervisor that cannot come; `tried` settles as such a try fails.
   */
  private cannotStart: string | undefined;
  private tried = settles<string>();

  private constructor(
    first: { socket: net.Socket; conn: MessageConnection },
    private readonly paths: StatePaths,
    private readonly opts: ConnectOptions,
  ) {
    super();
    this.socket = first.socket;
    this.current = first.conn;
    this.wire(first.conn);
  }

  /** The connection as it is now (a reconnecting client replaces it when it is lost). */
  get conn(): MessageConnection {
    return this.current;
  }

  private wire(conn: MessageConnection): void {
    const bad = (m: string): void => process.emitWarning(`runboard: ${m}`);
    const mine = (): boolean => conn === this.current;
    on(
      conn,
      DidEvent,
      ({ runId, event }) => {
        const a = this.attachments.get(runId);
        if (!mine() || !a || event.seq < a.offsets.events) return;
        a.offsets.events = event.seq + 1;
        a.handlers.onEvent?.(event);
      },
      bad,
    );
    on(
      conn,
      DidOutput,
      ({ runId, stream, offset, length, data }) => {
        const a = this.attachments.get(runId);
        if (!mine() || !a || offset + length <= a.offsets[stream]) return;
        a.offsets[stream] = offset + length;
        if (a.handlers.onBytes) a.handlers.onBytes(stream, Buffer.from(data, 'utf8'), offset);
        else a.handlers.onOutput?.(stream, data, offset, length);
      },
      bad,
    );
    on(
      conn,
      DidOutputBytes,
      ({ runId, stream, offset, bytes }) => {
        const a = this.attachments.get(runId);
        if (!mine() || !a) return;
        deliver(a, stream, offset, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length));
      },
      bad,
    );
    on(
      conn,
      DidOutputSizes,
      ({ runId, dir, dev, ino, ...sizes }) => {
        const a = this.attachments.get(runId);
        if (!mine() || !a || !a.files) return;
        if (!a.reader) {
          const reader = new FileOutputReader(
            dir,
            { dev, ino },
            a.offsets,
            (stream, offset, data) => deliver(a, stream, offset, data),
            !a.handlers.onBytes, // text handlers get copies (strings): the reader may reuse its buffer
          );
          a.reader = reader;
          reader.done.catch(() => this.readFilesFailed(runId, a, reader));
        }
        a.reader.update(sizes);
      },
      bad,
    );
    on(
      conn,
      DidEnd,
      ({ runId, result }) => {
        const a = this.attachments.get(runId);
        if (!mine() || !a) return;
        this.attachments.delete(runId);
        const reader = a.reader;
        if (!reader) return a.handlers.onEnd?.(result);
        // the output read from the files comes first (a reader that fails attaches again instead)
        reader.end();
        void reader.done.then(
          () => a.reader === reader && a.handlers.onEnd?.(result),
          () => undefined,
        );
      },
      bad,
    );
    conn.onClose(() => {
      conn.dispose(); // rejects requests still waiting for a reply, instead of leaving them pending forever
      if (!mine()) return;
      if (this.closed || !this.opts.reconnect) {
        this.closed = true;
        return;
      }
      this.lost();
    });
  }

  /** The connection went away under a reconnecting client: bring one back (starting a supervisor). */
  private lost(): void {
    this.emit('lost', 'the connection to the supervisor was lost');
    const attempt = async (): Promise<MessageConnection> => {
      for (let delay = 250; ; delay = Math.min(delay * 2, RECONNECT_MAX_DELAY_MS)) {
        if (this.closed) throw new SupervisorUnavailable('the supervisor client was closed');
        try {
          const next = await openConnection(this.paths, { ...this.opts, autoStart: true });
          if (this.closed) {
            next.conn.dispose();
            next.socket.destroy();
            throw new SupervisorUnavailable('the supervisor client was closed');
          }
          return this.adopt(next);
        } catch (err) {
          if (this.closed) throw err;
          if (err instanceof SupervisorExited) {
            this.cannotStart = err.message;
            this.tried.resolve(err.message);
            this.tried = settles<string>();
          }
          process.emitWarning(`runboard: could not bring the supervisor back: ${(err as Error).message}`);
          await socketAppearsOr(this.paths, delay); // one started by anyone is taken at once
        }
      }
    };
    const p = attempt();
    p.catch(() => undefined);
    this.reconnecting = p;
    void p.then(
      () => {
        if (this.reconnecting === p) this.reconnecting = undefined;
      },
      () => undefined,
    );
  }

  /**
   * This process cannot read a run's files (another mount namespace, no permission): the output comes
   * as bytes frames from where the reader got to.
   */
  private readFilesFailed(runId: string, a: Attachment, reader: FileOutputReader): void {
    if (a.reader !== reader || this.closed) return;
    reader.stop();
    a.reader = undefined;
    a.files = false;
    this.attachments.set(runId, a);
    void this.rpc(AttachRun.method, (c) => call(c, AttachRun, { runId, from: a.offsets, bytes: true })).catch(
      (e: Error) => {
        if (this.attachments.get(runId) !== a) return;
        this.attachments.delete(runId);
        a.handlers.onLost?.(e);
      },
    );
  }

  /** Takes a new connection in and attaches again to every run that was attached. */
  private adopt(next: { socket: net.Socket; conn: MessageConnection }): MessageConnection {
    this.cannotStart = undefined; // before 'reconnected': its listeners make calls
    this.socket = next.socket;
    this.current = next.conn;
    this.wire(next.conn);
    this.emit('reconnected');
    for (const [runId, a] of this.attachments) {
      call(next.conn, AttachRun, { runId, from: a.offsets, bytes: true, files: a.files }).catch(
        (err: Error) => {
          // a connection lost again meanwhile attaches again itself
          if (this.attachments.get(runId) !== a || next.conn !== this.current || this.reconnecting) return;
          this.attachments.delete(runId);
          a.handlers.onLost?.(err);
        },
      );
    }
    return next.conn;
  }

  /**
   * The connection to send on: the current one, or the next one while a lost one is replaced (waiting
   * at most RECONNECT_WAIT_MS: a call gets a clear error rather than hanging while none comes up).
   */
  private async ready(): Promise<MessageConnection> {
    const next = this.reconnecting;
    if (!next) return this.current;
    const gone = (why?: string): SupervisorUnavailable =>
      new SupervisorUnavailable(
        `the supervisor went away and has not come back yet; see ${path.join(this.paths.supervisorDir, 'supervisor.log')}` +
          (why ? ` (the last try: ${why.replace(/; see .*$/, '')})` : ''),
      );
    if (this.cannotStart) throw gone(this.cannotStart);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(gone()), RECONNECT_WAIT_MS);
    });
    const failed = this.tried.promise.then((why) => Promise.reject(gone(why)));
    failed.catch(() => undefined);
    try {
      return await Promise.race([next, late, failed]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A call that waits out a reconnect and says plainly when the supervisor went away under it. An
   * `idempotent` call (asking again changes nothing: cancel, list, status, a launch with a key) lost
   * that way is sent once more on the next connection; others (a launch without a key: the run may
   * exist) fail with SupervisorLost.
   */
  private async rpc<T>(
    method: string,
    send: (conn: MessageConnection) => Promise<T>,
    idempotent = false,
    attempt = 0,
  ): Promise<T> {
    const conn = await this.ready();
    try {
      return await send(conn);
    } catch (err) {
      // The socket can be gone before its close is handled (vscode-jsonrpc then says "Connection is
      // closed"): wait for the loss to be noticed, so the call is sent again or fails as SupervisorLost.
      if (
        conn === this.current &&
        !this.reconnecting &&
        !this.closed &&
        this.opts.reconnect &&
        connectionGone(err)
      )
        await this.lossNoticed();
      if (conn === this.current && !this.reconnecting && !this.closed) throw err;
      // Sent again when a new connection is coming or already came (the reconnect can finish first).
      if (idempotent && attempt < 3 && !this.closed && (this.reconnecting || conn !== this.current))
        return this.rpc(method, send, true, attempt + 1);
      throw new SupervisorLost(
        `the supervisor went away during ${method} (${(err as Error).message})` +
          (this.opts.reconnect && !this.closed ? '; a new one is being started' : ''),
      );
    }
  }

  /** Resolves once the current connection's loss was handled (or after a second, whichever is first). */
  private lossNoticed(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.off('lost', done);
        resolve();
      };
      const timer = setTimeout(done, 1000);
      this.once('lost', done);
    });
  }

  /** Connects to the supervisor of this state root, starting one when none runs (if allowed). */
  static async connect(paths: StatePaths, opts: ConnectOptions = {}): Promise<SupervisorClient> {
    return new SupervisorClient(await openConnection(paths, opts), paths, opts);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  launch(p: z.input<typeof LaunchRun.params>) {
    // with a key, asking again starts nothing new: the supervisor answers with the first launch's run
    return this.rpc(LaunchRun.method, (c) => call(c, LaunchRun, p), p.key !== undefined);
  }
  cancel(runId: string) {
    return this.rpc(CancelRun.method, (c) => call(c, CancelRun, { runId }), true);
  }
  /** The person's answer to a live ask of a running run (asks that wait at the tool call). */
  answerAsk(p: z.input<typeof AnswerAsk.params>) {
    return this.rpc(AnswerAsk.method, (c) => call(c, AnswerAsk, p));
  }
  list(p: z.input<typeof ListRuns.params> = {}) {
    return this.rpc(ListRuns.method, (c) => call(c, ListRuns, p), true);
  }
  getRun(runId: string) {
    return call(this.conn, GetRun, { runId });
  }
  /** Where launches run: here, or the hosts of a fleet (config scheduler.backend). */
  setBackend(p: z.input<typeof SetBackend.params>) {
    return this.rpc(SetBackend.method, (c) => call(c, SetBackend, p), true);
  }
  status() {
    return this.rpc(SupervisorStatus.method, (c) => call(c, SupervisorStatus, {}), true);
  }
  shutdown(cancelRuns = false) {
    return this.rpc(Shutdown.method, (c) => call(c, Shutdown, { cancelRuns }));
  }
  /** Merge a run's worktree branch into its base branch; worktree and branch go. */
  keepWorktree(runId: string) {
    return this.rpc(KeepWorktree.method, (c) => call(c, KeepWorktree, { runId }));
  }
  /** Remove a run's worktree and branch. */
  discardWorktree(runId: string) {
    return this.rpc(DiscardWorktree.method, (c) => call(c, DiscardWorktree, { runId }));
  }
  /** Store (or with null, delete) a provider key with the supervisor; it is never sent back. */
  setProviderKey(provider: string, key: string | null) {
    return this.rpc(SetProviderKey.method, (c) => call(c, SetProviderKey, { provider, key }), true);
  }
  /**
   * Keeps a card's sensitive parameter value with the supervisor; answers its reference (the card holds
   * that, never the value). `replaces`: the card's earlier reference, removed.
   */
  setParamSecret(card: string, param: string, value: string | null, replaces?: string) {
    return this.rpc(
      SetParamSecret.method,
      (c) => call(c, SetParamSecret, { card, param, value, ...(replaces ? { replaces } : {}) }),
      true,
    );
  }
  /** Asks the provider (through the supervisor, which holds the key) whether it accepts the stored key. */
  checkProviderKey(provider: string) {
    return this.rpc(CheckProviderKey.method, (c) => call(c, CheckProviderKey, { provider }), true);
  }
  listProviders() {
    return this.rpc(ListProviders.method, (c) => call(c, ListProviders, {}), true);
  }

  /**
   * Streams a run from `from` (default: the beginning). Returns the run as it is now; `handlers` see
   * every event and output chunk after `from` exactly once (output of both streams in the order it
   * was recorded; as bytes frames, which cost no JSON encoding), then `onEnd`. A reconnecting client attaches
   * again after a lost connection, from where it was.
   */
  async attach(runId: string, handlers: AttachHandlers, from?: Partial<Offsets>): Promise<RunResult> {
    const offsets: Offsets = {
      events: from?.events ?? 0,
      stdout: from?.stdout ?? 0,
      stderr: from?.stderr ?? 0,
    };
    const a: Attachment = { handlers, offsets, files: this.opts.readFiles ?? true };
    stopReading(this.attachments.get(runId));
    this.attachments.set(runId, a);
    try {
      const { run } = await this.rpc(AttachRun.method, (c) =>
        call(c, AttachRun, { runId, from: offsets, bytes: true, files: a.files }),
      );
      return run;
    } catch (err) {
      if (this.attachments.get(runId) === a) this.attachments.delete(runId);
      throw err;
    }
  }

  /** Stops streaming a run; returns the offsets to resume from. */
  async detach(runId: string): Promise<Offsets | undefined> {
    const a = this.attachments.get(runId);
    this.attachments.delete(runId);
    stopReading(a);
    if (!this.closed && !this.reconnecting) await call(this.current, DetachRun, { runId });
    return a ? { ...a.offsets } : undefined;
  }

  /** Offsets seen so far for an attached run. */
  offsets(runId: string): Offsets | undefined {
    const a = this.attachments.get(runId);
    return a ? { ...a.offsets } : undefined;
  }

  close(): void {
    this.closed = true;
    for (const a of this.attachments.values()) stopReading(a);
    this.current.dispose();
    this.socket.destroy();
  }
}

/** The attachment is over here (detached, replaced, closed): its reader delivers nothing more. */
function stopReading(a: Attachment | undefined): void {
  a?.reader?.stop();
  if (a) a.reader = undefined;
}

/** Hands bytes [offset, offset + data.length) of `stream` to the attachment's handlers, once. */
function deliver(a: Attachment, stream: OutputStream, offset: number, data: Buffer): void {
  const length = data.length;
  if (offset + length <= a.offsets[stream]) return;
  a.offsets[stream] = offset + length;
  if (a.handlers.onBytes) a.handlers.onBytes(stream, data, offset);
  else if (a.handlers.onOutput)
    for (let at = 0; at < length;) {
      const end = textPieceEnd(data, at);
      a.handlers.onOutput(stream, data.toString('utf8', at, end), offset + at, end - at);
      at = end;
    }
}

/**
 * Output goes to `onOutput` as text of at most TEXT_PIECE bytes, cut at a line end where there is one
 * (else at a character boundary): V8 makes a string that small in its young generation, and one of a
 * chunk's megabyte in its large-object space, which costs about five times the CPU (page faults, full
 * collections) when output streams fast (docs/benchmarks.md).
 */
const TEXT_PIECE = 64 * 1024;
function textPieceEnd(data: Buffer, at: number): number {
  if (data.length - at <= TEXT_PIECE) return data.length;
  const nl = data.lastIndexOf(10, at + TEXT_PIECE - 1);
  if (nl >= at) return nl + 1;
  return at + (utf8Boundary(data.subarray(at, at + TEXT_PIECE), TEXT_PIECE) || TEXT_PIECE);
}

/** An error of a call whose connection is closed or disposed (the peer went away), not of the call. */
function connectionGone(err: unknown): boolean {
  const m = err instanceof Error ? err.message : '';
  return /connection (is|got) (closed|disposed)/i.test(m) || (err as { code?: unknown })?.code === 'EPIPE';
}
