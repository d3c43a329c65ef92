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
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { visionApi, visionRequestPath, type FlowSpec } from '../protocol/index.ts';

export interface ProviderRoute {
  /** Upstream base, without the API path the client appends (e.g. https://api.openai.com). */
  baseUrl: string;
  /** How the provider wants its key. */
  auth: 'bearer' | 'x-api-key' | 'x-goog-api-key';
  /** Path the client's base URL ends with (OpenAI SDKs and codex append /responses to …/v1). */
  clientPath: string;
  /**
   * Resumable uploads (Gemini's Files API): the upstream answers the upload's start with the URL to
   * send the bytes to (`x-goog-upload-url`, on the provider's host). The proxy points it back at the
   * run's own listener, where the key is added again; an upload URL on any other host is dropped, so
   * the bytes (and the key) never go anywhere else.
   */
  uploadUrlHeader?: string;
  /** Requests refused here (method and path below the provider): what would show other runs' data. */
  refuse?: { method: string; path: RegExp; why: string }[];
}

/** Known providers; any other name is an OpenAI-compatible server whose URL the supervisor is given. */
const BUILTIN: Record<string, ProviderRoute> = {
  openai: { baseUrl: 'https://api.openai.com', auth: 'bearer', clientPath: '/v1' },
  anthropic: { baseUrl: 'https://api.anthropic.com', auth: 'x-api-key', clientPath: '' },
  // Zhipu's BigModel (GLM): an OpenAI-compatible Chat Completions API under /api/paas/v4
  zhipu: { baseUrl: 'https://open.bigmodel.cn/api/paas', auth: 'bearer', clientPath: '/v4' },
  gemini: {
    baseUrl: 'https://generativelanguage.googleapis.com',
    auth: 'x-goog-api-key',
    clientPath: '',
    uploadUrlHeader: 'x-goog-upload-url',
    refuse: [
      {
        method: 'GET',
        path: /^\/v1(?:beta)?\/files\/?$/,
        why: "listing the key's files is refused: it would show the uploads of other runs",
      },
    ],
  },
};

/**
 * The provider routes, from the built-ins and the supervisor's environment:
 * RUNBOARD_PROVIDER_<NAME>_URL overrides (or adds) a provider's upstream base URL. The URL is the
 * supervisor's to decide, never a run's or a card's: the key goes wherever it points.
 */
export function providerRoutes(env: NodeJS.ProcessEnv): Record<string, ProviderRoute> {
  const routes: Record<string, ProviderRoute> = {};
  for (const [name, r] of Object.entries(BUILTIN)) routes[name] = { ...r };
  for (const [k, v] of Object.entries(env)) {
    const m = /^RUNBOARD_PROVIDER_([A-Z0-9_]+)_URL$/.exec(k);
    if (!m || !v) continue;
    const name = m[1]!.toLowerCase().replace(/_/g, '-');
    const base = v.replace(/\/+$/, '');
    routes[name] = routes[name]
      ? { ...routes[name], baseUrl: base }
      : { baseUrl: base, auth: 'bearer', clientPath: '/v1' };
  }
  return routes;
}

/** The wire APIs a run's own token may speak (each through its official SDK). */
export type ProxyApi = 'responses' | 'chat' | 'messages' | 'gemini';

/** One allowed request: a method and the whole path below the provider (no query). */
interface AllowedRoute {
  method: string;
  path: RegExp;
  /** As said in a refusal. */
  shown: string;
}

/** A path segment a route takes as a parameter (a file or model name): never `.` or `..`, no encoding. */
const SEG = '[A-Za-z0-9][A-Za-z0-9._-]{0,199}';

const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What each API's SDK sends, below the provider's route (`clientPath` is the part of the base URL the
 * SDK is given). Logged from the tests' real SDK and CLI runs (docs/security-model.md, "Model proxy").
 */
function apiRoutes(api: ProxyApi, clientPath: string): AllowedRoute[] {
  const cp = escapeRe(clientPath);
  const r = (method: string, tail: string): AllowedRoute => ({
    method,
    path: new RegExp(`^${cp}${tail}$`),
    shown: `${method} ${clientPath}${tail.replaceAll(SEG, '{name}').replace(/\(\?:([^)]*)\)/, '{$1}')}`,
  });
  switch (api) {
    case 'responses':
      return [r('POST', '/responses')];
    case 'chat':
      return [r('POST', '/chat/completions')];
    case 'messages':
      return [r('POST', '/v1/messages'), r('POST', '/v1/messages/count_tokens')];
    case 'gemini':
      return [
        r('POST', `/v1beta/models/${SEG}:(?:generateContent|streamGenerateContent|countTokens)`),
        // the Files API's resumable upload (start, then the bytes to the URL it answers) and its file
        r('POST', '/upload/v1beta/files'),
        r('GET', `/v1beta/files/${SEG}`),
        r('DELETE', `/v1beta/files/${SEG}`),
      ];
  }
}

/** The API a runner speaks to a provider when its flow names none (worker/src/runners: defaultApi, apiOf). */
function defaultApi(provider: string, loop: boolean): ProxyApi {
  if (provider === 'anthropic') return 'messages';
  if (provider === 'openai') return 'responses';
  if (provider === 'gemini' && !loop) return 'gemini';
  return 'chat';
}

/**
 * The APIs a run of `flow` may use with its own token: what its runner's SDK sends, nothing else.
 * A command run is given no token (it makes no model requests through the proxy): none.
 */
export function runnerApis(
  flow: Pick<FlowSpec, 'runner' | 'provider' | 'computerUse' | 'extract'>,
): ProxyApi[] {
  const p = flow.provider ?? '';
  switch (flow.runner) {
    case 'codex':
      return ['responses']; // worker/src/runners/codex.ts: wire_api = "responses"
    case 'claude':
      return ['messages'];
    case 'computer-use':
    case 'replay':
      return [flow.computerUse?.api ?? defaultApi(p, true)];
    case 'extract':
      return [flow.extract?.api ?? defaultApi(p, false)];
    case 'reflect':
      return [defaultApi(p, false)];
    case 'command':
      return [];
  }
}

/** Why a request path is refused before any route is looked at (null: it is in its normal form). */
export function pathProblem(raw: string): string | null {
  if (!raw.startsWith('/')) return 'the path must start with /';
  if (raw.includes('%'))
    return 'percent-encoded characters in the path are refused (no route a runner uses has any)';
  if (raw.includes('\\')) return 'backslashes in the path are refused';
  const segments = raw.slice(1).split('/');
  if (segments.some((s) => s === '.' || s === '..')) return '`.` and `..` segments in the path are refused';
  if (segments.some((s) => s === '')) return 'empty path segments (`//`, a trailing `/`) are refused';
  let resolved: string;
  try {
    resolved = new URL(raw, 'http://proxy.invalid').pathname;
  } catch {
    return 'the path is not a URL path';
  }
  if (resolved !== raw) return 'the path is not in its normal form';
  return null;
}

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
const DEFAULT_LIMITS: ProxyLimits = { connectionsPerRun: 64, requestsPerRun: 32 };

/** The descriptor limit of this process (Node raises its soft limit to the hard one at start). */
async function openFileLimit(): Promise<number | null> {
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

/** The one request a vision token may make. */
interface VisionLimit {
  model: string;
  /** Path below the provider, as the request line has it (no query). */
  path: string;
  /** The model is named in the JSON body (else in the path: Gemini). */
  modelInBody: boolean;
}

/** Largest vision request body (a 10 MB image is ~13.4 MB as base64; a GLM video up to 20 MB ~27 MB). */
const VISION_MAX_BODY = 32 * 1024 * 1024;

export interface ModelRequestInfo {
  runId: string;
  provider: string;
  method: string;
  path: string;
  /** ms since epoch (fractional) when the request reached the proxy. */
  at: number;
  status?: number;
  error?: string;
}

/** A run's listener. */
interface Listener {
  runId: string;
  onRequest?: (info: ModelRequestInfo) => void;
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
  ): Promise<ProxyGrant> {
    const route = this.routes[provider];
    if (!route) throw new Error(`unknown provider "${provider}"`);
    const listener = await this.listen(runId, onRequest);
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
    const listener = own ?? (await this.listen(runId, onRequest));
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

  private async listen(runId: string, onRequest?: (info: ModelRequestInfo) => void): Promise<Listener> {
    const listener: Listener = {
      runId,
      ...(onRequest ? { onRequest } : {}),
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
          this.forward(req, res, reg, route, info, key, { sub: m[2] ?? '', query, body: checked });
        },
        (err: Error) => {
          info.status = 413;
          onRequest(info);
          fail(413, err.message);
        },
      );
      return;
    }
    this.forward(req, res, reg, route, info, key, { sub: m[2] ?? '', query });
  }

  /** Sends the request upstream with the key (its body as it comes, or `to.body`) and streams the answer back. */
  private forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    reg: Registration,
    route: ProviderRoute,
    info: ModelRequestInfo,
    key: string,
    to: { sub: string; query: string; body?: Buffer },
  ): void {
    const { provider, listener } = reg;
    const onRequest = (i: ModelRequestInfo): void => listener.onRequest?.(i);
    const upstream = new URL(route.baseUrl + to.sub + to.query);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers))
      if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
    if (to.body) headers['content-length'] = String(to.body.length);
    else if (req.headers['transfer-encoding'] && !req.headers['content-length'])
      headers['transfer-encoding'] = 'chunked';
    if (route.auth === 'bearer') headers.authorization = `Bearer ${key}`;
    else headers[route.auth] = key;
    const mod = upstream.protocol === 'https:' ? https : http;
    const up = mod.request(upstream, { method: req.method, headers }, (upRes) => {
      info.status = upRes.statusCode ?? 0;
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
      upRes.on('error', () => res.destroy());
    });
    up.on('error', (err: NodeJS.ErrnoException) => {
      info.error = err.code ?? err.message;
      onRequest(info);
      this.log.warn(
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
}

function failWith(res: http.ServerResponse, status: number, message: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: { type: 'runboard_proxy_error', message: `runboard proxy: ${message}` } }));
}

/** Why a run's own token may not make this request (null: its runner's SDK sends it). */
function routeRefusal(reg: Registration, method: string, path: string): string | null {
  if (reg.allowed.some((r) => r.method === method && r.path.test(path))) return null;
  if (!reg.allowed.length) return `a ${reg.runner} run makes no model requests through its proxy route`;
  return `a ${reg.runner} run's proxy route makes only the requests its runner sends (${reg.allowed.map((r) => r.shown).join(', ')}), not ${method} ${path}`;
}

/** Answers a connection past a limit with a 503 saying why, and closes it at once (its descriptor goes). */
function refuseConnection(socket: net.Socket, why: string): void {
  const body = JSON.stringify({ error: { type: 'runboard_proxy_error', message: `runboard proxy: ${why}` } });
  socket.on('error', () => undefined);
  socket.end(
    `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/** Why a vision token's request is not the one it may make (null: it is). */
function visionRefusal(
  limit: VisionLimit,
  method: string | undefined,
  path: string,
  query: string,
): string | null {
  if (method === 'POST' && path === limit.path && !query) return null;
  return `this run's vision route makes only the vision request (POST ${limit.path}, model ${limit.model}), not ${method} ${path}${query}`;
}

/** The body a vision request is forwarded with (as parsed, so upstream reads what was checked), or why not. */
function visionBody(limit: VisionLimit, body: Buffer): Buffer | string {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return "this run's vision route takes one JSON object";
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return "this run's vision route takes one JSON object";
  const model = (json as { model?: unknown }).model;
  if (limit.modelInBody ? model !== limit.model : model !== undefined)
    return `this run's vision route asks model ${limit.model} only (the request named ${JSON.stringify(model)})`;
  return Buffer.from(JSON.stringify(json));
}

/** The request's body, up to `max` bytes (more: an error saying so). */
function readBody(req: http.IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        // the rest is read and dropped, so the answer (413) still reaches the client
        req.removeAllListeners('data');
        req.resume();
        reject(new Error(`a vision request may have at most ${max} bytes`));
      } else parts.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
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
