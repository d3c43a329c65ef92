/**
 * The host's side of the supervisor socket: typed calls, auto-start of the supervisor, and attach
 * with exact resume (the client tracks the next event seq and byte offsets it has seen, so a detach +
 * re-attach, or a host restart that kept them, loses and repeats nothing).
 */
import { spawn } from 'node:child_process';
import { existsSync, openSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AttachRun,
  call,
  CancelRun,
  DiscardWorktree,
  GetRun,
  KeepWorktree,
  ListProviders,
  SetProviderKey,
  connect,
  DetachRun,
  DidEnd,
  DidEvent,
  DidOutput,
  LaunchRun,
  ListRuns,
  on,
  Shutdown,
  SupervisorStatus,
  type MessageConnection,
  type Offsets,
  type OutputStream,
  type RunEvent,
  type RunResult,
} from '@runboard/supervisor/protocol';
import { ensurePrivateDir, type StatePaths } from '@runboard/supervisor/paths';
import type { z } from 'zod';

export interface AttachHandlers {
  onEvent?(event: RunEvent): void;
  onOutput?(stream: OutputStream, data: string, offset: number, length: number): void;
  onEnd?(result: RunResult): void;
}

interface Attachment {
  handlers: AttachHandlers;
  offsets: Offsets;
}

export class SupervisorUnavailable extends Error {}

/** dist/ holding the process bundles, found from this file or the bundle that contains it. */
export function distDir(): string {
  if (process.env.RUNBOARD_DIST) return process.env.RUNBOARD_DIST;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'supervisor.mjs'))) return dir;
    if (existsSync(path.join(dir, 'dist', 'supervisor.mjs'))) return path.join(dir, 'dist');
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('runboard: dist/supervisor.mjs not found; run scripts/setup.sh');
    dir = parent;
  }
}

function tryConnect(socketPath: string): Promise<net.Socket | null> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

/** Starts a supervisor for this state root, detached, logging to supervisor/supervisor.log. */
export function startSupervisor(paths: StatePaths): number {
  ensurePrivateDir(paths.root);
  ensurePrivateDir(paths.supervisorDir);
  const logFd = openSync(path.join(paths.supervisorDir, 'supervisor.log'), 'a', 0o600);
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS; // faster start; the supervisor makes no TLS connections of its own
  const child = spawn(process.execPath, [path.join(distDir(), 'supervisor.mjs')], {
    detached: true,
    stdio: ['ignore', 'ignore', logFd],
    env,
  });
  child.unref();
  return child.pid ?? 0;
}

export class SupervisorClient {
  private readonly attachments = new Map<string, Attachment>();
  private closed = false;

  private constructor(
    private readonly socket: net.Socket,
    readonly conn: MessageConnection,
  ) {
    const bad = (m: string): void => process.emitWarning(`runboard: ${m}`);
    on(
      conn,
      DidEvent,
      ({ runId, event }) => {
        const a = this.attachments.get(runId);
        if (!a || event.seq < a.offsets.events) return;
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
        if (!a || offset + length <= a.offsets[stream]) return;
        a.offsets[stream] = offset + length;
        a.handlers.onOutput?.(stream, data, offset, length);
      },
      bad,
    );
    on(
      conn,
      DidEnd,
      ({ runId, result }) => {
        const a = this.attachments.get(runId);
        if (!a) return;
        this.attachments.delete(runId);
        a.handlers.onEnd?.(result);
      },
      bad,
    );
    conn.onClose(() => {
      this.closed = true;
      conn.dispose(); // rejects requests still waiting for a reply, instead of leaving them pending forever
    });
  }

  /** Connects to the supervisor of this state root, starting one when none runs (if allowed). */
  static async connect(
    paths: StatePaths,
    opts: { autoStart?: boolean; timeoutMs?: number } = {},
  ): Promise<SupervisorClient> {
    let socket = await tryConnect(paths.socket);
    if (!socket && opts.autoStart) {
      startSupervisor(paths);
      const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
      while (!socket && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        socket = await tryConnect(paths.socket);
      }
    }
    if (!socket) {
      throw new SupervisorUnavailable(
        opts.autoStart
          ? `the supervisor did not come up; see ${path.join(paths.supervisorDir, 'supervisor.log')}`
          : `no supervisor is running for ${paths.root} (start one with \`runboard run\`)`,
      );
    }
    socket.on('error', () => undefined);
    const conn = connect(socket, socket, { close: () => socket!.destroy() });
    conn.listen();
    return new SupervisorClient(socket, conn);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  launch(p: z.input<typeof LaunchRun.params>) {
    return call(this.conn, LaunchRun, p);
  }
  cancel(runId: string) {
    return call(this.conn, CancelRun, { runId });
  }
  list(p: z.input<typeof ListRuns.params> = {}) {
    return call(this.conn, ListRuns, p);
  }
  getRun(runId: string) {
    return call(this.conn, GetRun, { runId });
  }
  status() {
    return call(this.conn, SupervisorStatus, {});
  }
  shutdown(cancelRuns = false) {
    return call(this.conn, Shutdown, { cancelRuns });
  }
  /** Merge a run's worktree branch into its base branch; worktree and branch go (issue 6). */
  keepWorktree(runId: string) {
    return call(this.conn, KeepWorktree, { runId });
  }
  /** Remove a run's worktree and branch (issue 6). */
  discardWorktree(runId: string) {
    return call(this.conn, DiscardWorktree, { runId });
  }
  /** Store (or with null, delete) a provider key with the supervisor; it is never sent back. */
  setProviderKey(provider: string, key: string | null) {
    return call(this.conn, SetProviderKey, { provider, key });
  }
  listProviders() {
    return call(this.conn, ListProviders, {});
  }

  /**
   * Streams a run from `from` (default: the beginning). Returns the run as it is now; `handlers` see
   * every event and output chunk after `from` exactly once, then `onEnd`.
   */
  async attach(runId: string, handlers: AttachHandlers, from?: Partial<Offsets>): Promise<RunResult> {
    const offsets: Offsets = {
      events: from?.events ?? 0,
      stdout: from?.stdout ?? 0,
      stderr: from?.stderr ?? 0,
    };
    this.attachments.set(runId, { handlers, offsets });
    try {
      const { run } = await call(this.conn, AttachRun, { runId, from: offsets });
      return run;
    } catch (err) {
      this.attachments.delete(runId);
      throw err;
    }
  }

  /** Stops streaming a run; returns the offsets to resume from. */
  async detach(runId: string): Promise<Offsets | undefined> {
    const a = this.attachments.get(runId);
    this.attachments.delete(runId);
    if (!this.closed) await call(this.conn, DetachRun, { runId });
    return a ? { ...a.offsets } : undefined;
  }

  /** Offsets seen so far for an attached run. */
  offsets(runId: string): Offsets | undefined {
    const a = this.attachments.get(runId);
    return a ? { ...a.offsets } : undefined;
  }

  close(): void {
    this.conn.dispose();
    this.socket.destroy();
  }
}
