/**
 * One model request with text and images, through the supervisor's proxy (the SDK's key is the run's
 * proxy token; the real key never reaches the run): for runners that ask a model once or a few times
 * without a tool loop (extraction, reflection). Each wire format through its official SDK: OpenAI
 * Responses, Chat Completions (any OpenAI-compatible server), Anthropic Messages, Gemini
 * generateContent. A video goes to Gemini as a Files API upload first (uploadVideo).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { GeminiClient } from './gemini-client.ts';
import type { CallApi, CallInput, CallOptions, CallResult, Image, ModelSpec } from './model-types.ts';

export type { CallApi, CallInput, CallOptions, CallResult, Image, ModelSpec } from './model-types.ts';

/** The api a provider speaks by default: its own SDK's, Chat Completions for OpenAI-compatible servers. */
export function defaultApi(provider: string): CallApi {
  if (provider === 'gemini') return 'gemini';
  if (provider === 'anthropic') return 'messages';
  if (provider === 'openai') return 'responses';
  return 'chat';
}

/** A client of one api over the run's proxy grant. */
export class ModelClient {
  private readonly openai?: OpenAI;
  private readonly anthropic?: Anthropic;
  /** Gemini's own client (also for the Files API: uploadVideo, deleteFile). */
  readonly gemini?: GeminiClient;

  constructor(
    readonly api: CallApi,
    model: ModelSpec,
    timeoutMs: number,
  ) {
    const common = { apiKey: model.token, baseURL: model.baseUrl, maxRetries: 0, timeout: timeoutMs };
    if (api === 'gemini') this.gemini = new GeminiClient(model, timeoutMs);
    else if (api === 'messages') this.anthropic = new Anthropic(common);
    else this.openai = new OpenAI(common);
  }

  async call(input: CallInput, o: CallOptions): Promise<CallResult> {
    const images = input.images ?? [];
    if (this.api === 'gemini') return this.gemini!.generate(input, o);
    if (this.api === 'messages') {
      const content: Anthropic.ContentBlockParam[] = [{ type: 'text', text: input.prompt }];
      for (const im of images) {
        if (im.caption) content.push({ type: 'text', text: im.caption });
        content.push({
          type: 'image',
          source: { type: 'base64', media_type: im.mime, data: im.data.toString('base64') },
        });
      }
      if (input.after) content.push({ type: 'text', text: input.after });
      const body = {
        model: o.model,
        max_tokens: o.maxOutputTokens,
        messages: [{ role: 'user' as const, content }],
      };
      const requestBytes = Buffer.byteLength(JSON.stringify(body));
      const r = await this.anthropic!.messages.create(body, { signal: o.signal });
      const text = r.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
      return { text, usage: { input: r.usage.input_tokens, output: r.usage.output_tokens }, requestBytes };
    }
    const url = (im: Image): string => `data:${im.mime};base64,${im.data.toString('base64')}`;
    if (this.api === 'responses') {
      const content: OpenAI.Responses.ResponseInputContent[] = [{ type: 'input_text', text: input.prompt }];
      for (const im of images) {
        if (im.caption) content.push({ type: 'input_text', text: im.caption });
        content.push({ type: 'input_image', image_url: url(im), detail: 'auto' });
      }
      if (input.after) content.push({ type: 'input_text', text: input.after });
      const body = { model: o.model, input: [{ role: 'user' as const, content }], store: false };
      const requestBytes = Buffer.byteLength(JSON.stringify(body));
      const r = await this.openai!.responses.create(
        { ...body, max_output_tokens: o.maxOutputTokens },
        { signal: o.signal },
      );
      return {
        text: r.output_text ?? '',
        usage: { input: r.usage?.input_tokens ?? 0, output: r.usage?.output_tokens ?? 0 },
        requestBytes,
      };
    }
    const content: OpenAI.Chat.ChatCompletionContentPart[] = [{ type: 'text', text: input.prompt }];
    for (const im of images) {
      if (im.caption) content.push({ type: 'text', text: im.caption });
      content.push({ type: 'image_url', image_url: { url: url(im) } });
    }
    if (input.after) content.push({ type: 'text', text: input.after });
    const body = { model: o.model, messages: [{ role: 'user' as const, content }] };
    const requestBytes = Buffer.byteLength(JSON.stringify(body));
    const r = await this.openai!.chat.completions.create(
      { ...body, max_completion_tokens: o.maxOutputTokens },
      { signal: o.signal },
    );
    return {
      text: r.choices[0]?.message?.content ?? '',
      usage: { input: r.usage?.prompt_tokens ?? 0, output: r.usage?.completion_tokens ?? 0 },
      requestBytes,
    };
  }
}

/**
 * A model request's failure in words for the person: who refused what (the provider's status and
 * message, the proxy's refusal) or that the network failed, and what to do about a key.
 */
export function describeModelError(err: unknown, provider: string): string {
  const e = err as { status?: number; message?: string; cause?: { code?: string; message?: string } };
  const status = typeof e.status === 'number' ? e.status : undefined;
  // the OpenAI and Anthropic SDKs start their messages with the status; it is said once here
  const message = (e.message ?? String(err))
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\d{3}\s+/, '');
  if (status === 401 || status === 403)
    return `the model provider ${provider} refused the request (${status}): ${message}. Check the key: runboard key set ${provider}`;
  if (status === 429) return `rate limited by the model provider ${provider} (429): ${message}`;
  if (status !== undefined) return `the model provider ${provider} answered ${status}: ${message}`;
  const code = e.cause?.code;
  if (err instanceof OpenAI.APIConnectionError || err instanceof Anthropic.APIConnectionError || code)
    return `cannot reach the model provider ${provider} (network: ${code ?? e.cause?.message ?? message})`;
  return `the model request to ${provider} failed: ${message}`;
}
