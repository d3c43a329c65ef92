/**
 * The supervisor's loopback model proxy (shared/DESIGN.md, "Secrets"). Runs reach their model
 * provider only through it: a run gets `http://127.0.0.1:PORT/<provider>/…` and a per-run token; the
 * proxy checks the token (valid only while the run is active, only for its provider), swaps it for the
 * real key, and forwards the request to the provider's base URL, streaming the answer (SSE) back
 * unbuffered. The key never reaches the run, its logs or the proxy's own log lines.
 *
 * Each run gets a listener (PORT) of its own, and its token is valid only there. The jail lets a run
 * connect to its own PORT and no other, so a token that leaks out of its run (another run reading it
 * from a shared folder, say) is of no use to another run.
 *
 * A flow with a vision profile gets a second token on the same listener (`grantVision`): it reaches the
 * vision profile's provider, whichever the run's own is, but makes one request only, the vision request
 * of protocol/vision.ts with the profile's model (checked in the JSON body, which is forwarded as
 * parsed). Any other path, method, query or model is refused before anything goes upstream.
 *
 * A run's own token goes only where its runner's SDK goes (`runnerApis`): a per-runner allow-list of
 * method + path (codex: the Responses API; claude: Messages; computer-use, replay, reflect and extract:
 * the wire format they speak). The path is taken as the request line has it and must already be in
 * its normal form: `.`/`..` segments, percent-encoding, backslashes and empty segments are refused
 * (403) rather than resolved, so what is checked is what goes upstream. Anything else (the key's file
 * lists, deletes, fine-tuning, batches, another API version) is refused before anything goes upstream.
 *
 * Connections are bounded per run and in all (`ProxyLimits`): a run past its share is answered 503 at
 * once and the connection closed, so no run can take the supervisor's descriptors (its RPC socket, other
 * runs' logs and listeners) however many connections it opens.
 *
 *   run (jail: TCP connect to PORT only) ──token──▶ proxy ──key──▶ provider (or the scripted test server)
 *
 * This file keeps the proxy's state (tokens, listeners, counts) and its checks in order; its parts are
 * beside it: the routes and the allow-list (proxy-routes.ts), the limits (proxy-limits.ts), the vision
 * request (proxy-vision.ts) and the way upstream (proxy-forward.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { visionApi, visionRequestPath } from '../protocol/index.ts';
import { failWith, forwardRequest, type ModelRequestInfo } from './proxy-forward.ts';
import {
  DEFAULT_LIMITS,
  openFileLimit,
  refuseConnection,
  totalConnections,
  type ProxyLimits,
} from './proxy-limits.ts';
import {
  apiRoutes,
  pathProblem,
  routeRefusal,
  type AllowedRoute,
  type ProviderRoute,
  type ProxyApi,
} from './proxy-routes.ts';
import type { ProxyTaps } from './proxy-debug.ts';
import { readBody, VISION_MAX_BODY, visionBody, visionRefusal, type VisionLimit } from './proxy-vision.ts';

// The proxy's parts, named where they were before they had files of their own.
export {
  providerRoutes,
  pathProblem,
  runnerApis,
  type ProviderRoute,
  type ProxyApi,
} from './proxy-routes.ts';
export { totalConnections, type ProxyLimits } from './proxy-limits.ts';
export { uploadUrlBack, type ModelRequestInfo } from './proxy-forward.ts';

export interface ProxyGrant {
  runId: string;
  provider: string;
  token: string;
  /** The run's own listener: the one TCP port its jail lets it reach. */
  port: number;
  /** What the run's client uses as its base URL. */
  baseUrl: string;
}

/** A run's vision route: a token of its own on the run's listener, for the vision request only. */
export interface VisionGrant {
  provider: string;
  model: string;
  token: string;
  port: number;
  baseUrl: string;
}

/** A run's listener. */
interface Listener {
  runId: string;
  onRequest?: (info: ModelRequestInfo) => void;
  /** The run's tally of tokens and cost, its budget (proxy-usage.ts) and its debug log (proxy-debug.ts). */
  taps?: ProxyTaps;
  /** Takes the run's connections (counted, bounded) and hands them to `server`. */
  gate: net.Server;
  server: http.Server;
  /** Its tokens' hashes: the listener closes when the last is revoked. */
  tokens: Set<string>;
  connections: number;
  inFlight: number;
  /** A refusal for too many connections was logged (once per run). */
  warned: boolean;
}

/** What one token is valid for. */
interface Registration {
  runId: string;
  provider: string;
  listener: Listener;
  /** What the run's own token may ask (its runner's APIs), as method + path. */
  allowed: AllowedRoute[];
  /** The runner, for the refusal's words. */
  runner: string;
  /** A vision token: the one request it may make. */
  vision?: VisionLimit;
}

const hashToken = (t: string): string => createHash('sha256').update(t).digest('hex');

export class ModelProxy {
  private readonly byToken = new Map<string, Registration>(); // sha256(token) → registration
  private readonly limits: Required<ProxyLimits>;
  /** Proxy connections open now, over all runs. */
  private connections = 0;

  constructor(
    private readonly routes: Record<string, ProviderRoute>,
    /** The key for a provider, read at each request (so a key set later works for the next request). */
    private readonly keyFor: (provider: string) => string | null,
    private readonly log: Logger,
    limits: Partial<ProxyLimits> = {},
  ) {
    this.limits = { ...DEFAULT_LIMITS, connections: totalConnections(4096), ...limits };
    if (limits.connections === undefined)
      void openFileLimit().then((n) => {
        if (n) this.limits.connections = totalConnections(n);
      });
  }

  route(provider: string): ProviderRoute | undefined {
    return this.routes[provider];
  }

  providers(): { name: string; baseUrl: string }[] {
    return Object.entries(this.routes).map(([name, r]) => ({ name, baseUrl: r.baseUrl }));
  }

  /**
   * Whether the provider accepts its stored key: one GET of its model list (`/v1/models`, which
   * OpenAI, Anthropic and OpenAI-compatible servers answer) with the key, as a run's request would
   * carry it. 2xx: accepted; 401/403: refused; anything else is said as it is.
   */
  async checkKey(provider: string): Promise<{ ok: boolean; status?: number; message: string }> {
    const route = this.routes[provider];
    if (!route) return { ok: false, message: `unknown provider "${provider}"` };
    const key = this.keyFor(provider);
    if (!key) return { ok: false, message: `no key is stored for provider "${provider}"` };
    const url = new URL(`${route.baseUrl}/v1/models`);
    const headers: http.OutgoingHttpHeaders =
      route.auth === 'bearer'
        ? { authorization: `Bearer ${key}` }
        : { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      const req = mod.request(url, { method: 'GET', headers, timeout: 15_000 }, (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300)
          resolve({ ok: true, status, message: `${url.origin} accepted the key` });
        else if (status === 401 || status === 403)
          resolve({
            ok: false,
            status,
            message: `${url.origin} refused the key (HTTP ${status}): set the right one`,
          });
        else
          resolve({
            ok: false,
            status,
            message: `${url.origin} answered HTTP ${status} to a check of the key`,
          });
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 15 s')));
      // the key is saved before it is checked: a check that cannot get out says so, not that it failed
      req.on('error', (err: NodeJS.ErrnoException) =>
        resolve({
          ok: false,
          message: `saved; could not check: are you offline? (cannot reach ${url.origin}: ${err.code ?? err.message})`,
        }),
      );
      req.end();
    });
  }

  /**
   * A listener and a token for one run and one provider, valid until `revoke`. The token may make
   * the requests of `apis` only (`runnerApis(flow)`: what the run's runner sends).
   */
  async grant(
    runId: string,
    provider: string,
    onRequest: ((info: ModelRequestInfo) => void) | undefined,
    apis: { runner: string; apis: ProxyApi[] },
    taps?: ProxyTaps,
  ): Promise<ProxyGrant> {
    const route = this.routes[provider];
    if (!route) throw new Error(`unknown provider "${provider}"`);
    const listener = await this.listen(runId, onRequest, taps);
    const allowed = apis.apis.flatMap((api) => apiRoutes(api, route.clientPath));
    const token = this.addToken(listener, provider, { allowed, runner: apis.runner });
    const port = (listener.gate.address() as AddressInfo).port;
    return {
      runId,
      provider,
      token,
      port,
      baseUrl: `http://127.0.0.1:${port}/${provider}${route.clientPath}`,
    };
  }

  /**
   * The vision route of a run: a token for `vision.provider` that makes only the vision request with
   * `vision.model`, on the listener of the run's grant `on` (the one port its jail lets it reach), or
   * on a listener of its own when the run has no model grant. Valid until `revoke`.
   */
  async grantVision(
    runId: string,
    vision: { provider: string; model: string },
    on: ProxyGrant | undefined,
    onRequest?: (info: ModelRequestInfo) => void,
    taps?: ProxyTaps,
  ): Promise<VisionGrant> {
    const route = this.routes[vision.provider];
    if (!route)
      throw new Error(
        `unknown provider "${vision.provider}" (known: ${Object.keys(this.routes).join(', ')}; another OpenAI-compatible server is added with RUNBOARD_PROVIDER_<NAME>_URL in the supervisor's environment)`,
      );
    const api = visionApi(vision.provider);
    const limit: VisionLimit = {
      model: vision.model,
      path: route.clientPath + visionRequestPath(api, vision.model),
      modelInBody: api !== 'gemini',
    };
    const own = on ? this.byToken.get(hashToken(on.token))?.listener : undefined;
    if (on && !own) throw new Error(`the run's proxy grant was revoked`);
    const listener = own ?? (await this.listen(runId, onRequest, taps));
    const token = this.addToken(listener, vision.provider, { allowed: [], runner: 'vision', vision: limit });
    const port = (listener.gate.address() as AddressInfo).port;
    return {
      provider: vision.provider,
      model: vision.model,
      token,
      port,
      baseUrl: `http://127.0.0.1:${port}/${vision.provider}${route.clientPath}`,
    };
  }

  private async listen(
    runId: string,
    onRequest?: (info: ModelRequestInfo) => void,
    taps?: ProxyTaps,
  ): Promise<Listener> {
    const listener: Listener = {
      runId,
      ...(onRequest ? { onRequest } : {}),
      ...(taps ? { taps } : {}),
      // noDelay as http.Server sets it on its own sockets: with Nagle on, each streamed answer waited
      // for a delayed ACK (~40 ms a model request, bench/cu).
      gate: net.createServer({ noDelay: true }, (socket) => this.admit(socket, listener)),
      server: http.createServer((req, res) => this.handle(req, res, listener)),
      tokens: new Set(),
      connections: 0,
      inFlight: 0,
      warned: false,
    };
    listener.server.keepAliveTimeout = 5000;
    // The gate's accept loop goes on past EMFILE (libuv sheds the connection); nothing to report.
    listener.gate.on('error', (err) => this.log.warn({ runId, err: err.message }, 'model proxy listener'));
    await new Promise<void>((resolve, reject) => {
      listener.gate.once('error', reject);
      // A long accept queue: a flood past the run's cap is refused at the accept loop's pace, not by
      // dropped handshakes (each a second's wait for the run's other, honest connections too).
      listener.gate.listen(0, '127.0.0.1', 4096, () => resolve());
    });
    return listener;
  }

  /** A new connection on a run's listener: counted and handed to HTTP, or refused (503) past a limit. */
  private admit(socket: net.Socket, listener: Listener): void {
    const { connectionsPerRun, connections } = this.limits;
    const full =
      listener.connections >= connectionsPerRun
        ? `this run has ${listener.connections} connections open to its model proxy, the most a run may have: reuse connections (keep-alive) or close some`
        : this.connections >= connections
          ? `the model proxy holds ${this.connections} connections over all runs, the most it takes: try again when others have closed`
          : null;
    if (full) {
      if (!listener.warned) {
        listener.warned = true;
        this.log.warn({ runId: listener.runId, why: full }, 'model proxy: connections refused');
      }
      return refuseConnection(socket, full);
    }
    listener.connections++;
    this.connections++;
    socket.once('close', () => {
      listener.connections--;
      this.connections--;
    });
    listener.server.emit('connection', socket);
  }

  private addToken(
    listener: Listener,
    provider: string,
    what: { allowed: AllowedRoute[]; runner: string; vision?: VisionLimit },
  ): string {
    const token = `rbp-${randomBytes(24).toString('hex')}`;
    const hash = hashToken(token);
    this.byToken.set(hash, { runId: listener.runId, provider, listener, ...what });
    listener.tokens.add(hash);
    return token;
  }

  /** The token is invalid from now on; its listener closes with the last of its tokens. */
  revoke(token: string): void {
    const hash = hashToken(token);
    const reg = this.byToken.get(hash);
    this.byToken.delete(hash);
    if (!reg) return;
    reg.listener.tokens.delete(hash);
    // Closing never fails (stop resolves whatever close reports); nothing waits for the listener to go.
    if (!reg.listener.tokens.size) void this.stop(reg.listener);
  }

  async close(): Promise<void> {
    const listeners = new Set([...this.byToken.values()].map((r) => r.listener));
    this.byToken.clear();
    await Promise.all([...listeners].map((l) => this.stop(l)));
  }

  private stop(listener: Listener): Promise<void> {
    listener.server.closeAllConnections();
    return new Promise<void>((r) => listener.gate.close(() => r()));
  }

  /** A request on the listener of `listener`'s run: only that run's tokens are valid here. */
  private handle(req: http.IncomingMessage, res: http.ServerResponse, listener: Listener): void {
    const at = performance.timeOrigin + performance.now();
    const fail = (status: number, message: string): void => failWith(res, status, message);
    const rawPath = (req.url ?? '/').split('?')[0]!;
    const problem = pathProblem(rawPath);
    if (problem) return fail(403, `${req.method} ${rawPath}: ${problem}`);
    const m = /^\/([a-z][a-z0-9-]{0,39})(\/.*)?$/.exec(rawPath);
    const query = (req.url ?? '').includes('?') ? (req.url ?? '').slice((req.url ?? '').indexOf('?')) : '';
    const provider = m?.[1];
    const route = provider ? this.routes[provider] : undefined;
    if (!provider || !route) return fail(404, `no provider route for ${req.method} ${req.url}`);
    const bearer = /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const token =
      bearer ??
      (req.headers['x-api-key'] as string | undefined) ??
      (req.headers['x-goog-api-key'] as string | undefined);
    const reg = token ? this.byToken.get(hashToken(token)) : undefined;
    if (!reg || reg.listener !== listener || reg.provider !== provider)
      return fail(
        401,
        "this request carries no valid run token for this port (the run ended, or it is not this port's run)",
      );
    const info: ModelRequestInfo = {
      runId: reg.runId,
      provider,
      method: req.method ?? 'GET',
      path: m[2] ?? '/',
      at,
    };
    const onRequest = (i: ModelRequestInfo): void => listener.onRequest?.(i);
    const refused = reg.vision
      ? visionRefusal(reg.vision, req.method, info.path, query)
      : (route.refuse?.find((r) => r.method === req.method && r.path.test(info.path))?.why ??
        routeRefusal(reg, req.method ?? 'GET', info.path));
    if (refused) {
      info.status = 403;
      onRequest(info);
      return fail(403, refused);
    }
    const spent = listener.taps?.account?.spent;
    if (spent) {
      info.status = 403;
      onRequest(info);
      return fail(403, `${spent}: the run ends`);
    }
    if (listener.inFlight >= this.limits.requestsPerRun) {
      info.status = 429;
      onRequest(info);
      return fail(
        429,
        `this run has ${listener.inFlight} model requests in flight, the most a run may have at once: wait for one to end`,
      );
    }
    listener.inFlight++;
    res.once('close', () => listener.inFlight--);
    const key = this.keyFor(provider);
    if (!key) {
      info.status = 401;
      onRequest(info);
      return fail(401, `no API key is stored for provider "${provider}"`);
    }
    if (reg.vision) {
      const limit = reg.vision;
      readBody(req, VISION_MAX_BODY).then(
        (body) => {
          const checked = visionBody(limit, body);
          if (typeof checked === 'string') {
            info.status = 403;
            onRequest(info);
            return fail(403, checked);
          }
          forwardRequest(
            req,
            res,
            reg,
            route,
            info,
            key,
            { sub: m[2] ?? '', query, body: checked, token: token! },
            this.log,
          );
        },
        (err: Error) => {
          info.status = 413;
          onRequest(info);
          fail(413, err.message);
        },
      );
      return;
    }
    forwardRequest(req, res, reg, route, info, key, { sub: m[2] ?? '', query, token: token! }, this.log);
  }
}
