/**
 * The model proxy's bounds on connections (per run and over all runs, from the supervisor's descriptor
 * limit) and its answer to a connection past them.
 */
import { readFile } from 'node:fs/promises';
import type net from 'node:net';

/**
 * How many connections the proxy holds: per run, and over all runs. Past either, a new connection is
 * answered 503 (with why) and closed at once. Requests in flight per run are bounded too (429).
 */
export interface ProxyLimits {
  connectionsPerRun: number;
  requestsPerRun: number;
  /** Over all runs (default: from the supervisor's descriptor limit, keeping a reserve). */
  connections?: number;
}

/**
 * The supervisor's own descriptors not given to proxy connections: its RPC clients, run logs, pipes,
 * jails and listeners. Each proxied connection may hold a second descriptor upstream.
 */
export const DEFAULT_LIMITS: ProxyLimits = { connectionsPerRun: 64, requestsPerRun: 32 };

/** The descriptor limit of this process (Node raises its soft limit to the hard one at start). */
export async function openFileLimit(): Promise<number | null> {
  try {
    const limits = await readFile('/proc/self/limits', 'utf8');
    const n = Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1]);
    return Number.isFinite(n) && n > 0 ? n : null;
  } catch {
    return null; // not Linux: the fallback below
  }
}

/** Proxy connections over all runs for a descriptor limit: a quarter (at least 512) kept for the rest. */
export function totalConnections(nofile: number): number {
  const reserve = Math.max(512, Math.floor(nofile / 4));
  return Math.max(64, Math.floor((nofile - reserve) / 2));
}

/** Answers a connection past a limit with a 503 saying why, and closes it at once (its descriptor goes). */
export function refuseConnection(socket: net.Socket, why: string): void {
  const body = JSON.stringify({ error: { type: 'runboard_proxy_error', message: `runboard proxy: ${why}` } });
  socket.on('error', () => undefined);
  socket.end(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
