/**
 * The headless shell: serves the renderer and the BoardApi over HTTP on 127.0.0.1 to a browser.
 * Security (shared/DESIGN.md): loopback only; a per-launch random token (given in the URL once, then an
 * HttpOnly SameSite=Strict cookie named after the port); Host must be this loopback address (no DNS
 * rebinding); Origin, when sent, must be this server (no cross-site requests); a strict CSP.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { AnswerList, MoveRefused, NotFound, type BoardService } from '../core/board-service.ts';
import type { BoardDelta, Column } from '../renderer/api.ts';

export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const MoveBody = z.object({
  to: z.enum(['backlog', 'queued', 'running', 'needs-input', 'done', 'failed']),
  index: z.number().int().min(0),
});
const AnswerBody = z.object({
  answers: AnswerList,
  requeue: z.boolean().optional(),
});
const SettingsBody = z.object({
  maxConcurrency: z.number().int().min(1).max(1000),
  flows: z.array(z.object({ name: z.string(), cap: z.number().int().min(0).max(1000) })),
  columnLimits: z.partialRecord(MoveBody.shape.to, z.number().int().min(0).max(100_000)),
});

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
};

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
  const cookieName = (): string => `rb_${port}`;
  const cookieToken = (req: http.IncomingMessage): string | undefined => {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [k, ...v] = part.trim().split('=');
      if (k === cookieName()) return v.join('=');
    }
    return undefined;
  };
  const hostOk = (req: http.IncomingMessage): boolean => {
    const host = req.headers.host;
    if (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`) return false;
    const origin = req.headers.origin;
    return (
      origin === undefined || origin === `http://127.0.0.1:${port}` || origin === `http://localhost:${port}`
    );
  };

  const readBody = (req: http.IncomingMessage): Promise<unknown> =>
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
          resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {});
        } catch {
          reject(new HttpError(400, 'body is not JSON'));
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
    res.writeHead(200, {
      'content-type': TYPES[path.extname(name)] ?? 'application/octet-stream',
      'cache-control': 'no-cache',
    });
    createReadStream(file).pipe(res);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    res.setHeader('content-security-policy', CSP);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    res.setHeader('x-frame-options', 'DENY');
    if (!hostOk(req)) throw new HttpError(403, 'wrong Host or Origin');
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    const method = req.method ?? 'GET';

    // The page: the token arrives once in the URL and becomes a cookie for this port.
    if (method === 'GET' && url.pathname === '/') {
      const given = url.searchParams.get('token') ?? cookieToken(req);
      if (!tokenOk(given ?? undefined))
        throw new HttpError(401, 'open the URL runboard serve printed (it has the token)');
      res.setHeader('set-cookie', `${cookieName()}=${token}; HttpOnly; SameSite=Strict; Path=/`);
      const html = readFileSync(path.join(opts.rendererDir, 'index.html'), 'utf8');
      res.writeHead(200, { 'content-type': TYPES['.html']!, 'cache-control': 'no-store' });
      res.end(html);
      return;
    }
    const auth = req.headers.authorization?.replace(/^Bearer /, '');
    if (!tokenOk(auth) && !tokenOk(cookieToken(req))) throw new HttpError(401, 'no valid token');
    if (method === 'GET' && /^\/(app\.js|app\.css|app\.js\.map)$/.test(url.pathname))
      return staticFile(res, url.pathname.slice(1));

    const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'api') throw new HttpError(404, 'not found');
    const [, area, id, action] = parts;
    if (method === 'GET' && area === 'board') return json(res, 200, service.view());
    if (method === 'GET' && area === 'events') {
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
    if (area === 'cards' && id) {
      if (method === 'GET' && !action) return json(res, 200, await service.cardDetail(id));
      if (method === 'POST' && action === 'move') {
        const body = MoveBody.safeParse(await readBody(req));
        if (!body.success) throw new HttpError(400, body.error.message);
        service.move(id, body.data.to as Column, body.data.index);
        return json(res, 200, {});
      }
      if (method === 'POST' && action === 'answer') {
        const body = AnswerBody.safeParse(await readBody(req));
        if (!body.success) throw new HttpError(400, body.error.message);
        service.answer(id, body.data.answers, body.data.requeue ?? false);
        return json(res, 200, {});
      }
      if (method === 'POST' && action === 'cancel') {
        await service.cancel(id);
        return json(res, 200, {});
      }
    }
    if (area === 'settings') {
      if (method === 'GET') return json(res, 200, service.settings());
      if (method === 'PUT') {
        const body = SettingsBody.safeParse(await readBody(req));
        if (!body.success) throw new HttpError(400, body.error.message);
        service.saveSettings(body.data);
        return json(res, 200, {});
      }
    }
    if (area === 'runs' && id) {
      if (method === 'GET' && action === 'files') return json(res, 200, service.runFiles(id));
      if (method === 'GET' && action === 'diff') return json(res, 200, await service.worktreeDiff(id));
      if (method === 'POST' && (action === 'keep' || action === 'discard'))
        return json(res, 200, await service.settleWorktree(id, action));
      if (method === 'GET' && action === 'file') {
        const file = service.screenshotPath(id, url.searchParams.get('name') ?? '');
        res.writeHead(200, {
          'content-type': TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
        });
        createReadStream(file).pipe(res);
        return;
      }
      if (method === 'GET' && action === 'live') {
        const frame = service.liveFrame(id);
        res.writeHead(200, {
          'content-type': 'image/jpeg',
          'content-length': frame.length,
          'cache-control': 'no-store',
        });
        res.end(frame);
        return;
      }
      if (method === 'GET' && action === 'export') {
        res.writeHead(200, {
          'content-type': 'application/gzip',
          'content-disposition': `attachment; filename="run-${id}.tar.gz"`,
        });
        await service.exportRun(id, res);
        return;
      }
      if (method === 'GET' && action === 'stream') {
        const send = sse(req, res);
        const stop = service.streamRun(id, {
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
    }
    throw new HttpError(404, 'not found');
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status =
        err instanceof HttpError
          ? err.status
          : err instanceof NotFound
            ? 404
            : err instanceof MoveRefused
              ? 409
              : 500;
      if (res.headersSent) return res.destroy();
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
