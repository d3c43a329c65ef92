/**
 * The model proxy's way upstream (model-proxy.ts): a checked request goes to the provider with the key
 * in place of the run's token (the run's own credentials and hop-by-hop headers dropped), and the
 * answer streams back unbuffered; a resumable upload's URL is pointed back at the run's own listener.
 */
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { ProviderRoute } from './proxy-routes.ts';
import { BodyTap, type ProxyTaps } from './proxy-debug.ts';
import { rateLimitReset } from './proxy-ratelimit.ts';
import { UsageTap } from './proxy-usage.ts';

export interface ModelRequestInfo {
  runId: string;
  provider: string;
  method: string;
  path: string;
  /** ms since epoch (fractional) when the request reached the proxy. */
  at: number;
  status?: number;
  error?: string;
  /** A 429 from the provider: until when its headers say the limit holds (ISO; proxy-ratelimit.ts). */
  rateLimitedUntil?: string;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'authorization',
  'x-api-key',
  'x-goog-api-key',
  'api-key',
  'openai-organization',
  'openai-project',
]);

/** Sends the request upstream with the key (its body as it comes, or `to.body`) and streams the answer back. */
export function forwardRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  reg: {
    runId: string;
    provider: string;
    listener: { onRequest?: (i: ModelRequestInfo) => void; gate: net.Server; taps?: ProxyTaps };
  },
  route: ProviderRoute,
  info: ModelRequestInfo,
  key: string,
  to: { sub: string; query: string; body?: Buffer; token: string },
  log: Logger,
): void {
  const { provider, listener } = reg;
  const onRequest = (i: ModelRequestInfo): void => listener.onRequest?.(i);
  const upstream = new URL(route.baseUrl + to.sub + to.query);
  const headers: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
  if (to.body) headers['content-length'] = String(to.body.length);
  else if (req.headers['transfer-encoding'] && !req.headers['content-length'])
    headers['transfer-encoding'] = 'chunked';
  if (route.auth === 'bearer') headers.authorization = `Bearer ${key}`;
  else headers[route.auth] = key;
  const mod = upstream.protocol === 'https:' ? https : http;
  const debug = listener.taps?.debug;
  const sent = debug && !to.body ? new BodyTap() : undefined;
  if (sent) req.on('data', (chunk: Buffer) => sent.write(chunk));
  const up = mod.request(upstream, { method: req.method, headers }, (upRes) => {
    info.status = upRes.statusCode ?? 0;
    // the provider's own 429 (the proxy's own refusals never get here), whichever runner asked
    const reset = info.status === 429 ? rateLimitReset(upRes.headers) : undefined;
    if (reset !== undefined) info.rateLimitedUntil = new Date(reset).toISOString();
    onRequest(info);
    const out: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(upRes.headers))
      if (!['connection', 'keep-alive', 'transfer-encoding'].includes(k) && v !== undefined) out[k] = v;
    if (route.uploadUrlHeader) {
      const h = route.uploadUrlHeader;
      const back = uploadUrlBack(route, String(upRes.headers[h] ?? ''), provider, listener.gate);
      if (back) out[h] = back;
      else delete out[h];
    }
    res.writeHead(upRes.statusCode ?? 502, out);
    res.flushHeaders();
    upRes.pipe(res);
    if (debug) {
      const answer = new BodyTap();
      upRes.on('data', (chunk: Buffer) => answer.write(chunk));
      upRes.once('end', () =>
        debug.write({ ...info, status: info.status ?? 0, request: to.body ?? sent!, response: answer }, [
          key,
          to.token,
        ]),
      );
    }
    const account = listener.taps?.account;
    if (account && info.status >= 200 && info.status < 300) {
      // read on the way for its usage (proxy-usage.ts); the bytes go on as they come
      const tap = new UsageTap(String(upRes.headers['content-type'] ?? ''));
      upRes.on('data', (chunk: Buffer) => tap.write(chunk));
      // counted after the pipe has ended the answer, yet before the run's next request is read (an
      // immediate runs before the next poll for I/O), so a spent budget refuses that request
      upRes.once('end', () =>
        setImmediate(() => {
          const used = tap.end();
          if (used) account.add(used);
        }),
      );
    }
    upRes.on('error', () => res.destroy());
  });
  up.on('error', (err: NodeJS.ErrnoException) => {
    info.error = err.code ?? err.message;
    onRequest(info);
    log.warn(
      { runId: reg.runId, provider, path: info.path, err: err.code ?? err.message },
      'model proxy: upstream failed',
    );
    failWith(
      res,
      502,
      `cannot reach provider "${provider}" at ${upstream.origin}: ${err.code ?? err.message}`,
    );
  });
  // The client went away (cancel, stall kill): stop the upstream request too.
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  if (to.body) up.end(to.body);
  else req.pipe(up);
}

export function failWith(res: http.ServerResponse, status: number, message: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type: 'runboard_proxy_error', message: `runboard proxy: ${message}` } }));
}

/**
 * An upstream upload URL as the run must use it: the same path and query on the run's own listener
 * (`http://127.0.0.1:PORT/<provider>/…`), only when it lies below the provider's base URL; else null.
 */
export function uploadUrlBack(
  route: ProviderRoute,
  upstream: string,
  provider: string,
  listener: net.Server,
): string | null {
  if (!upstream) return null;
  let u: URL;
  let base: URL;
  try {
    u = new URL(upstream);
    base = new URL(route.baseUrl);
  } catch {
    return null;
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  if (u.origin !== base.origin || u.username || u.password) return null;
  if (prefix && u.pathname !== prefix && !u.pathname.startsWith(`${prefix}/`)) return null;
  const port = (listener.address() as AddressInfo | null)?.port;
  if (!port) return null;
  return `http://127.0.0.1:${port}/${provider}${u.pathname.slice(prefix.length)}${u.search}`;
}
