/**
 * The one request a run's vision route allows (docs/security-model.md, "The vision route"): the
 * supervisor's model proxy lets the route's token make exactly this request, with the vision profile's
 * model, and the worker's analyze_media makes it. Both sides read it from here so they cannot drift.
 */

/** The wire format a vision provider is asked in. */
export type VisionApi = 'messages' | 'gemini' | 'chat';

/** Anthropic: Messages; Gemini: generateContent; every other provider: Chat Completions. */
export function visionApi(provider: string): VisionApi {
  if (provider === 'anthropic') return 'messages';
  if (provider === 'gemini') return 'gemini';
  return 'chat';
}

/**
 * GLM (Zhipu's BigModel) takes a whole video as `video_url` content in its Chat Completions format;
 * every other provider is sent frames of it. A GLM profile is the zhipu provider or a glm-* model
 * served by an OpenAI-compatible provider of the person's own.
 */
export function visionTakesVideo(provider: string, model: string): boolean {
  return visionApi(provider) === 'chat' && (provider === 'zhipu' || /^glm-/i.test(model));
}

/**
 * The path of the vision request below the route's base URL (which ends with the provider's client
 * path, e.g. /v1 for OpenAI): POST only, no query string. Gemini names the model in the path; the
 * others in the JSON body's `model`, which the proxy checks.
 */
export function visionRequestPath(api: VisionApi, model: string): string {
  if (api === 'messages') return '/v1/messages';
  if (api === 'gemini') return `/v1beta/models/${encodeURIComponent(model)}:generateContent`;
  return '/chat/completions';
}
