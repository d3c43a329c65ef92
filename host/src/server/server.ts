/**
 * The headless shell: serves the renderer and the BoardApi over HTTP on 127.0.0.1 to a browser.
 * Security (shared/DESIGN.md, docs/security-model.md "The board server"): loopback only; a per-launch
 * random token, given once in the printed URL; the page that URL opens gets a token of its own (a page
 * token), held by the page and sent by it as `Authorization: Bearer` (and as `?pt=` on the URLs a
 * browser fetches by itself: images, downloads, event streams). No cookie: a browser sends 127.0.0.1's
 * cookies to every port of 127.0.0.1, so any other local server would receive it. Host must be this
 * loopback address (no DNS rebinding); Origin, when sent, must be this server; a strict CSP.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import type { BoardService } from '../core/board-service.ts';
import {
  callHandlers,
  contentType,
  CSP,
  dispatchCall,
  fileHandlers,
  parseParams,
  RENDERER_FILES,
  segmentsOf,
  statusOf,
  type FileReply,
} from '../core/board-dispatch.ts';
import { boardMethods, matchRoute } from '../shared/board-methods.ts';
import type { BoardDelta } from '../shared/board-types.ts';

export { CSP };

export interface ServeOptions {
  port?: number;
  /** Folder holding index.html, app.js, app.css. */
  rendererDir: string;
  token?: string;
}

export interface RunningServer {
  url: string;
  port: number;
  token: string;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Page tokens kept (the most recently used): a page whose token was dropped is told to reopen the URL. */
export const MAX_PAGE_TOKENS = 256;

/** What a request without a valid token is told (the page shows it). */
export const OPEN_THE_URL = 'open the URL runboard serve printed (it has the token)';

/** Cards per column the page comes with: more than a tall screen shows, with the virtualiser's extra. */
export const FIRST_SCREEN_CARDS = 40;

/**
 * The first screen's data in the page itself (a JSON data block, which the CSP does not run), so the
 * board paints as soon as its script runs, while the whole board is fetched. `<` is escaped: a card
 * title cannot end the block.
 */
function firstScreenScript(service: BoardService): string {
  const json = JSON.stringify(service.firstScreen(FIRST_SCREEN_CARDS)).replace(/</g, '\\u003c');
  return `<script type="application/json" id="first-screen">${json}</script>`;
}

export async function serve(service: BoardService, opts: ServeOptions): Promise<RunningServer> {
  const token = opts.token ?? randomBytes(24).toString('base64url');
  const tokenBuf = Buffer.from(token);
  const sockets = new Set<Socket>();
  const streams = new Set<() => void>();
  let port = 0;

  const tokenOk = (given: string | undefined): boolean => {
    if (!given) return false;
    const b = Buffer.from(given);
    return b.length === tokenBuf.length && timingSafeEqual(b, tokenBuf);
  };
  // Page tokens, oldest first (a Map keeps insertion order; a use moves one to the end).
  const pageTokens = new Map<string, true>();
  const newPageToken = (): string => {
    const t = randomBytes(24).toString('base64url');
    pageTokens.set(t, true);
    for (const old of pageTokens.keys()) {
      if (pageTokens.size <= MAX_PAGE_TOKENS) break;
      pageTokens.delete(old);
    }
    return t;
  };
  const pageTokenOk = (given: string | undefined | null): boolean => {
    if (!given || !pageTokens.has(given)) return false;
    pageTokens.delete(given);
    pageTokens.set(given, true);
    return true;
  };
  const hostOk = (req: http.IncomingMessage): boolean => {
    const host = req.headers.host;
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) return false;
    const origin = req.headers.origin;
    return (
      origin === undefined || origin === `http://127.0.0.1:${port}` || origin === `http://localhost:${port}`
    );
  };

  const readBody = (req: http.IncomingMessage): Promise<object> =>
    new Promise((resolve, reject) => {
      let size = 0;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => {
        size += c.length;
        if (size > 1 << 20) reject(new HttpError(413, 'body too large'));
        else chunks.push(c);
      });
      req.on('end', () => {
        try {
          const body: unknown = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
          if (typeof body !== 'object' || body === null || Array.isArray(body))
            reject(new HttpError(400, 'the body must be a JSON object of the parameters'));
          else resolve(body);
        } catch {
          reject(new HttpError(400, 'the body is not JSON'));
        }
      });
      req.on('error', reject);
    });

  const json = (res: http.ServerResponse, status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(text);
  };

  const sse = (req: http.IncomingMessage, res: http.ServerResponse): ((data: unknown) => void) => {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write(': hello\n\n');
    req.socket.setNoDelay(true);
    return (data) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  };

  const staticFile = (res: http.ServerResponse, name: string): void => {
    const file = path.join(opts.rendererDir, name);
    if (!existsSync(file)) throw new HttpError(404, `${name} not built; run node scripts/bundle.mjs`);
    res.writeHead(200, { 'content-type': contentType(name), 'cache-control': 'no-cache' });
    createReadStream(file).pipe(res);
  };

  const calls = callHandlers(service);
  const files = fileHandlers(service);

  const sendFile = async (res: http.ServerResponse, reply: FileReply): Promise<void> => {
    if ('bytes' in reply) {
      res.writeHead(200, {
        'content-type': reply.type,
        'content-length': reply.bytes.length,
        'cache-control': 'no-store',
      });
      res.end(reply.bytes);
    } else if ('path' in reply) {
      res.writeHead(200, { 'content-type': reply.type });
      createReadStream(reply.path).pipe(res);
    } else {
      res.writeHead(200, {
        'content-type': reply.type,
        'content-disposition': `attachment; filename="${reply.download}"`,
      });
      await reply.write(res);
    }
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    res.setHeader('content-security-policy', CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('x-frame-options', 'DENY');
    if (!hostOk(req)) throw new HttpError(403, 'wrong Host or Origin');
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const method = req.method ?? 'GET';

    // The page. With the launch token (the printed URL) it comes with the board's first screen and a
    // page token of its own; without one it is the bare app, which uses the page token its tab kept
    // (a reload, a link to a card) or says to open the printed URL. It holds no data.
    if (method === 'GET' && url.pathname === '/') {
      const given = url.searchParams.get('token');
      if (given !== null && !tokenOk(given)) throw new HttpError(401, OPEN_THE_URL);
      const html = readFileSync(path.join(opts.rendererDir, 'index.html'), 'utf8');
      res.writeHead(200, { 'content-type': contentType('index.html'), 'cache-control': 'no-store' });
      if (given === null) return void res.end(html);
      const pageToken = `<script type="application/json" id="page-token">${JSON.stringify(newPageToken())}</script>`;
      res.end(html.replace('</head>', `${firstScreenScript(service)}\n  ${pageToken}\n  </head>`));
      return;
    }
    // the renderer's code and styles: the same for everyone, nothing of the board
    if (method === 'GET' && RENDERER_FILES.some((f) => f !== 'index.html' && url.pathname === `/${f}`))
      return staticFile(res, url.pathname.slice(1));
    // what browsers ask for when a page names no icon (a bookmark, an old tab)
    if (method === 'GET' && url.pathname === '/favicon.ico') return staticFile(res, 'favicon.svg');

    const segments = segmentsOf(url.pathname);
    if (segments[0] !== 'api') throw new HttpError(404, `not found: ${url.pathname}`);
    const route = matchRoute(method, segments);
    const m = route && boardMethods[route.name];
    // the launch token (scripts, the CLI) or a page token, as a header; a page token also as `pt` on
    // what the browser fetches by itself (files, streams), which cannot carry a header
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const inQuery = m && (m.kind === 'file' || m.kind === 'stream') ? url.searchParams.get('pt') : null;
    if (!tokenOk(auth) && !pageTokenOk(auth) && !pageTokenOk(inQuery))
      throw new HttpError(401, `no valid token: ${OPEN_THE_URL}`);
    url.searchParams.delete('pt');
    if (!route || !m) throw new HttpError(404, `no board method at ${method} ${url.pathname}`);
    // parameters: the route's segments over the body (POST, PUT) or the query (GET)
    // (an upload's body is the file: its parameters are in the query)
    const given =
      m.verb === 'GET' || m.kind === 'upload' ? Object.fromEntries(url.searchParams) : await readBody(req);
    const raw = { ...given, ...route.pathParams };
    if (m.kind === 'call') return json(res, 200, (await dispatchCall(calls, route.name, raw)) ?? {});
    if (route.name === 'importVideo') {
      const length = req.headers['content-length'];
      const declared = length === undefined ? undefined : Number(length);
      return json(res, 200, await service.importVideo(parseParams('importVideo', raw), req, declared));
    }
    if (route.name === 'runFile') return sendFile(res, await files.runFile(parseParams('runFile', raw)));
    if (route.name === 'liveFrame')
      return sendFile(res, await files.liveFrame(parseParams('liveFrame', raw)));
    if (route.name === 'recordingFile')
      return sendFile(res, await files.recordingFile(parseParams('recordingFile', raw)));
    if (route.name === 'exportRun')
      return sendFile(res, await files.exportRun(parseParams('exportRun', raw)));
    if (route.name === 'boardEvents') {
      const send = sse(req, res);
      const onChange = (d: BoardDelta): void => send({ type: 'delta', ...d });
      service.on('delta', onChange);
      const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
      const stop = (): void => {
        clearInterval(ping);
        service.off('delta', onChange);
      };
      streams.add(stop);
      req.on('close', () => (stop(), streams.delete(stop)));
      return;
    }
    if (route.name === 'runStream') {
      const { runId } = parseParams('runStream', raw);
      const send = sse(req, res);
      const stop = service.streamRun(runId, {
        send,
        // what the browser has not taken yet: the stream pauses above STREAM_HIGH_WATER
        backlog: () => res.writableLength,
        drained: () =>
          new Promise<void>((resolve) => {
            if (res.writableLength === 0 || res.destroyed) return resolve();
            const done = (): void => {
              res.off('drain', done);
              res.off('close', done);
              resolve();
            };
            res.on('drain', done);
            res.on('close', done);
          }),
      });
      streams.add(stop);
      req.on('close', () => (stop(), streams.delete(stop)));
      return;
    }
    throw new HttpError(404, `no board method at ${method} ${url.pathname}`);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : statusOf(err);
      if (res.headersSent) return res.destroy();
      // a body not read (an upload refused before its bytes): this connection cannot carry another request
      if (!req.complete) res.setHeader('connection', 'close');
      json(res, status, { error: (err as Error).message });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    close: async () => {
      for (const stop of streams) stop();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
