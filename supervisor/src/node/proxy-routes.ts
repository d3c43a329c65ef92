/**
 * Where the model proxy (model-proxy.ts) sends a run's requests and which it lets through: the
 * providers' routes (built in, or an OpenAI-compatible server from the environment), and the per-runner
 * allow-list of method + path a run's own token may ask, on paths already in their normal form.
 */
import { type FlowSpec } from '../protocol/index.ts';

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
export interface AllowedRoute {
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
export function apiRoutes(api: ProxyApi, clientPath: string): AllowedRoute[] {
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
    case 'judge':
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

/** Why a run's own token may not make this request (null: its runner's SDK sends it). */
export function routeRefusal(
  reg: { allowed: AllowedRoute[]; runner: string },
  method: string,
  path: string,
): string | null {
  if (reg.allowed.some((r) => r.method === method && r.path.test(path))) return null;
  if (!reg.allowed.length) return `a ${reg.runner} run makes no model requests through its proxy route`;
  return `a ${reg.runner} run's proxy route makes only the requests its runner sends (${reg.allowed.map((r) => r.shown).join(', ')}), not ${method} ${path}`;
}
