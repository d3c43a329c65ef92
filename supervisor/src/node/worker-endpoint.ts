/**
 * The run endpoint (fd 3 of the worker, a socketpair through the jail): the worker proves it is the
 * run's worker with its token, receives its spec, then sends heartbeats, logs, progress and its report.
 */
import type { Socket } from 'node:net';
import {
  connect,
  handle,
  on,
  ErrorCodes,
  ResponseError,
  WorkerFinished,
  WorkerAsk,
  WorkerHeartbeat,
  WorkerLog,
  WorkerProgress,
  WorkerReady,
  type MessageConnection,
  type WorkerSpec,
} from '../protocol/index.ts';
import type * as z from 'zod/mini';

type Params<T extends { params: z.ZodMiniType }> = z.output<T['params']>;

export interface EndpointHandlers {
  runId: string;
  token: string;
  /** The worker proved itself (once): the spec it gets. */
  onReady(p: Params<typeof WorkerReady>): WorkerSpec;
  onHeartbeat(): void;
  onLog(p: Params<typeof WorkerLog>): void;
  onProgress(p: Params<typeof WorkerProgress>): void;
  onFinished(p: Params<typeof WorkerFinished>): void;
  /** A tool asks before the act for a path outside the sandbox; resolves with the answer (live-asks.ts). */
  onAsk(p: Params<typeof WorkerAsk>): Promise<{ decision: 'allow' | 'deny'; message: string }>;
  /** A malformed or invalid message (recorded as an error event). */
  onError(message: string): void;
}

export function serveWorkerEndpoint(stream: NodeJS.ReadWriteStream, h: EndpointHandlers): MessageConnection {
  const socket = stream as unknown as Socket;
  socket.on('error', () => undefined);
  const conn = connect(socket, socket, {
    maxMessageBytes: 4 * 1024 * 1024,
    onProtocolError: (e) => h.onError(`bad message from worker: ${e.message}`),
    close: () => socket.destroy(),
  });
  let ready = false;
  handle(conn, WorkerReady, (p): WorkerSpec => {
    if (p.runId !== h.runId || p.token !== h.token)
      throw new ResponseError(ErrorCodes.Unauthorized, 'wrong run token');
    if (ready) throw new ResponseError(ErrorCodes.Unauthorized, 'worker already reported ready');
    ready = true;
    return h.onReady(p);
  });
  const onInvalid = (m: string): void => h.onError(m);
  on(conn, WorkerHeartbeat, () => h.onHeartbeat(), onInvalid);
  on(conn, WorkerLog, (p) => h.onLog(p), onInvalid);
  on(conn, WorkerProgress, (p) => h.onProgress(p), onInvalid);
  handle(conn, WorkerAsk, (p) => {
    if (!ready) throw new ResponseError(ErrorCodes.Unauthorized, 'worker asked before it was ready');
    return h.onAsk(p);
  });
  handle(conn, WorkerFinished, (p) => {
    if (!ready) throw new ResponseError(ErrorCodes.Unauthorized, 'worker finished before it was ready');
    h.onFinished(p);
    return {};
  });
  conn.listen();
  return conn;
}
