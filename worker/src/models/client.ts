/**
 * The model stack's one-shot entry: one request with text and images through the supervisor's proxy,
 * for runners that ask a model once or a few times without a tool loop (extraction, reflection), in one
 * of four wire formats, each in a file of its own (responses.ts, chat.ts, messages.ts, gemini.ts)
 * through its official SDK (sdk.ts makes the clients: the run's proxy token is the SDK's key). A video
 * goes to Gemini as a Files API upload first. A conversation with tools is conversation.ts (kept apart
 * so that the desktop runners' bundles do not carry the Gemini SDK).
 */
import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { callChat } from './chat.ts';
import { GeminiClient } from './gemini.ts';
import { callMessages } from './messages.ts';
import { callResponses } from './responses.ts';
import { anthropicSdk, openaiSdk } from './sdk.ts';
import type { CallApi, CallInput, CallOptions, CallResult, ModelSpec } from './types.ts';

export type * from './types.ts';
export { describeModelError } from './errors.ts';

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
    if (api === 'gemini') this.gemini = new GeminiClient(model, timeoutMs);
    else if (api === 'messages') this.anthropic = anthropicSdk(model, timeoutMs);
    else this.openai = openaiSdk(model, timeoutMs);
  }

  async call(input: CallInput, o: CallOptions): Promise<CallResult> {
    if (this.api === 'gemini') return this.gemini!.generate(input, o);
    if (this.api === 'messages') return callMessages(this.anthropic!, input, o);
    if (this.api === 'responses') return callResponses(this.openai!, input, o);
    return callChat(this.openai!, input, o);
  }
}
